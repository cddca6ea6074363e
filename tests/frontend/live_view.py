#!/usr/bin/env python3
"""The supervisor's live view (boot/fox/ui.html) in headless Chromium, driven by Selenium.

    live_view.py [--fox build/bin/fox]

A rootless cluster of 3 QEMU nodes; Chromium (Debian's chromium and chromium-driver, Selenium
from python3-selenium) opens the address `fox ui` prints. Checked on the page as it updates:
  - it loads and shows the cluster's name, "live", and 3 idle nodes with their host;
  - a memcached job started with fox run shows as the job, its nodes running with their Dht
    items (from their status reports), and its gateway's address, where 300 keys are set;
  - fox kill 2: node 2 shows dead within 15 s (the page asks every second), the event list has
    the death, then a survivor's Dht rebuild (a recovery its report shows);
  - the browser's console has no error (level SEVERE) from the page's whole life.
Everything (cluster, browser, driver) is removed afterwards, also when a check fails. Skips (77)
when Chromium, its driver or Selenium is missing (make deps installs them).
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# Debian's Selenium is in Debian's Python: CTest's may be another.
if importlib.util.find_spec("selenium") is None and sys.executable != "/usr/bin/python3" and \
        os.path.exists("/usr/bin/python3"):
    os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frontend_test import FOX, Env, Failure, collect, verdict, wait_for  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"


def browser(profile):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--user-data-dir=" + profile, "--window-size=1280,1024"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)


def text(driver, css):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    try:
        return driver.find_element("css selector", css).text
    except (NoSuchElementException, StaleElementReferenceException):
        return None


def node_state(driver, k):
    return text(driver, "#node-%d .state" % k)


def scenario(e, profile):
    name = e.name("ui")
    e.fox_cmd("cluster", "up", "--nodes", "3", "--name", name, check=0)
    _, out = e.fox_cmd("ui", "--name", name, check=0)
    url = out.split("live view ", 1)[1].split(",", 1)[0]
    driver = browser(profile)
    run = None
    console = []
    try:
        driver.set_page_load_timeout(60)
        driver.get(url)
        wait_for(lambda: text(driver, "#name") == name and text(driver, "#link") == "live", 30,
                 "the page to show the cluster, live")
        wait_for(lambda: all(node_state(driver, k) == "idle" for k in (1, 2, 3)), 30, "3 idle nodes on the page")
        host = text(driver, "#node-1 td:nth-child(2)")
        if not host or host == "-":
            raise Failure("node 1's host is not shown")
        print("ok: the page shows cluster %s, live, 3 idle nodes on host %s" % (name, host))
        run = e.start("run", "memcached", "--name", name, "--timeout", "300")
        wait_for(lambda: "memcached" in (text(driver, "#job") or "") and
                 all(node_state(driver, k) == "running" for k in (1, 2, 3)), 120, "the job and its nodes running")
        wait_for(lambda: all((text(driver, "#node-%d td:nth-child(12)" % k) or "-") != "-" for k in (1, 2, 3)), 60,
                 "every node's Dht items (its status report)")
        print("ok: the page shows the job: %s" % text(driver, "#job"))
        port = re.search(r"memcached at 127\.0\.0\.1:(\d+)", text(driver, "#job")).group(1)
        keys = subprocess.run(["/usr/bin/python3", "-c", SET_KEYS, port], capture_output=True, text=True, timeout=120)
        print(keys.stdout + keys.stderr, end="")
        if keys.returncode != 0:
            raise Failure("setting keys through the gateway failed")
        e.fox_cmd("kill", "2", "--name", name, check=0)
        killed = time.monotonic()
        wait_for(lambda: node_state(driver, 2) == "dead", 15, "node 2 shown dead")
        print("ok: node 2 shown dead %.1f s after fox kill" % (time.monotonic() - killed))
        events = [li.text for li in driver.find_elements("css selector", "#events li.dead")]
        if not any("node 2: dead: killed (fox kill)" in t for t in events):
            raise Failure("no event of node 2's death on the page: %s" % events)
        print("ok: the event list has it: %s" % events[0])

        def recovered():
            return [li.text for li in driver.find_elements("css selector", "#events li.recovery")
                    if "rebuilt" in li.text]
        wait_for(recovered, 60, "a survivor's Dht rebuild in the event list")
        print("ok: the survivors' recovery shows as it happens: %s" % recovered()[0])
        console = driver.get_log("browser")
    finally:
        driver.quit()
        if run is not None:
            collect(run)
    for entry in console:
        print("  console| %s %s" % (entry.get("level"), entry.get("message")))
    errors = [c for c in console if c.get("level") == "SEVERE"]
    if errors:
        raise Failure("the browser's console has %d errors: %s" % (len(errors), errors[0].get("message")))
    print("ok: no error in the browser's console (%d entries)" % len(console))
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


SET_KEYS = r"""
import sys
from pymemcache.client.base import Client
c = Client(("127.0.0.1", int(sys.argv[1])), connect_timeout=10, timeout=60)
assert not c.set_many({"ui:%d" % i: b"value %d" % i for i in range(300)}, noreply=False)
print("300 keys set through the gateway (the page's address)")
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fox", default=FOX)
    args = ap.parse_args()
    if importlib.util.find_spec("selenium") is None or not all(os.access(p, os.X_OK) for p in (CHROMIUM, DRIVER)):
        print("live_view: SKIP: Chromium, chromium-driver or python3-selenium is not installed (make deps)")
        return 77
    e = Env(args.fox)
    profile = tempfile.mkdtemp(prefix="fox-live-view-test-")

    def clean():
        shutil.rmtree(profile, ignore_errors=True)
        return e.clean()
    # Selenium's own exceptions (the driver or the browser failed): a failure, not a traceback.
    return verdict("live_view", lambda: scenario(e, profile), clean, errors=(Exception,))

if __name__ == "__main__":
    sys.exit(main())
