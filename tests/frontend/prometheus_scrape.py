#!/usr/bin/env python3
"""A real Prometheus (Debian's package) scrapes a fox cluster's supervisor and answers queries.

    prometheus_scrape.py [--fox build/bin/fox]

A rootless cluster of 3 QEMU nodes; Prometheus on a port of its own on 127.0.0.1 scrapes the
supervisor's /metrics (the address `fox ui` prints) every second. Then, each checked by a
query to Prometheus' HTTP API:
  - the target is up and the 3 nodes are idle (fox_nodes);
  - a pi job (APGAS): while it runs every node reports its runtime's finishes and activities
    (fox_apgas_done_total) and its transport's messages (fox_am_messages_sent_total);
  - a memcached job with 300 keys set through place 0's gateway: the Dht's items on the nodes
    add up to at least 300 (fox_dht_items);
  - fox kill 2 in that job: node 2 is down (fox_node_up 0), the supervisor counts a death, and
    the survivors' transports report a peer dead (fox_am_peers_dead_total).
Everything (cluster, Prometheus, its data) is removed afterwards, also when a check fails.
Skips (77) when Prometheus is not installed (make deps installs it).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frontend_test import FOX, Env, Failure, collect, gateway_port, interrupt, verdict, wait_for  # noqa: E402

PROMETHEUS = "/usr/bin/prometheus"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prometheus:
    def __init__(self, target):
        self.dir = tempfile.mkdtemp(prefix="fox-prometheus-test-")
        self.port = free_port()
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: fox\n    static_configs:\n      - targets: ['%s']\n" % target)
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen([PROMETHEUS, "--config.file", os.path.join(self.dir, "prometheus.yml"),
                                      "--storage.tsdb.path", os.path.join(self.dir, "data"),
                                      "--web.listen-address", "127.0.0.1:%d" % self.port, "--log.level", "warn"],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, expr):
        """The instant query's vector: [(labels, value)]."""
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode({"query": expr}))
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                reply = json.loads(r.read())
        except OSError:
            return []
        if reply.get("status") != "success":
            raise Failure("Prometheus refused %s: %s" % (expr, reply))
        return [(s["metric"], float(s["value"][1])) for s in reply["data"]["result"]]

    def wait(self, expr, predicate, timeout, what):
        """Waits until predicate(query(expr)) holds; prints what the query gave."""
        seen = []

        def holds():
            seen[:] = self.query(expr)
            return predicate(seen)
        try:
            wait_for(holds, timeout, what)
        finally:
            print("  %s -> %s" % (expr, sorted((s[0].get("node", ""), s[1]) for s in seen)))
        print("ok: %s" % what)
        return seen

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        with open(os.path.join(self.dir, "prometheus.log"), errors="replace") as f:
            text = f.read().strip()
        if text:
            print("".join("  prometheus| " + line + "\n" for line in text.splitlines()[-10:]), end="")
        shutil.rmtree(self.dir, ignore_errors=True)


def scenario(e):
    name = e.name("prom")
    e.fox_cmd("cluster", "up", "--nodes", "3", "--cores", "2", "--name", name, check=0)
    _, out = e.fox_cmd("ui", "--name", name, check=0)
    url = out.split("live view ", 1)[1].split(",", 1)[0]
    target = urllib.parse.urlsplit(url).netloc
    prom = Prometheus(target)
    try:
        prom.wait('up{job="fox"}', lambda v: v and v[0][1] == 1, 60, "Prometheus scrapes the supervisor")
        prom.wait('fox_nodes{state="idle"}', lambda v: v and v[0][1] == 3, 60, "3 idle nodes")
        run = e.start("run", "pi", "--name", name, "--timeout", "300", "--", "samples=6000000000", "chunks=600")
        try:
            prom.wait("fox_apgas_done_total", lambda v: len(v) == 3 and all(s[1] > 0 for s in v), 240,
                      "every node of the pi job reports its activities")
            prom.wait("fox_am_messages_sent_total", lambda v: len(v) == 3 and all(s[1] > 0 for s in v), 30,
                      "every node reports its transport's messages")
            rc = run.wait(timeout=300)
        finally:
            collect(run)
        if rc != 0:
            raise Failure("the pi job exited %d" % rc)
        prom.wait("fox_jobs_ended_total", lambda v: v and v[0][1] == 1, 30, "the job's end counted")
        run = e.start("run", "memcached", "--name", name)
        try:
            port = gateway_port(run, 3)
            keys = subprocess.run(["/usr/bin/python3", "-c", SET_KEYS, str(port)], capture_output=True, text=True,
                                  timeout=120)
            print(keys.stdout + keys.stderr, end="")
            if keys.returncode != 0:
                raise Failure("setting keys through the gateway failed")
            prom.wait("sum(fox_dht_items)", lambda v: v and v[0][1] >= 300, 60, "the Dht's items add up to >= 300")
            e.fox_cmd("kill", "2", "--name", name, check=0)
            prom.wait('fox_node_up{node="2"}', lambda v: v and v[0][1] == 0, 30, "node 2 down")
            prom.wait("fox_node_deaths_total", lambda v: v and v[0][1] == 1, 30, "one death counted")
            prom.wait("fox_am_peers_dead_total", lambda v: len(v) == 2 and all(s[1] >= 1 for s in v), 60,
                      "the survivors' transports count a peer dead")
            interrupt(run)
        finally:
            collect(run)
    finally:
        prom.close()
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


SET_KEYS = r"""
import sys
from pymemcache.client.base import Client
c = Client(("127.0.0.1", int(sys.argv[1])), connect_timeout=10, timeout=60)
failed = c.set_many({"prom:%d" % i: b"value %d" % i for i in range(300)}, noreply=False)
assert not failed, failed[:3]
print("300 keys set through the gateway")
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fox", default=FOX)
    args = ap.parse_args()
    if not os.access(PROMETHEUS, os.X_OK):
        print("prometheus_scrape: SKIP: %s is not installed (make deps)" % PROMETHEUS)
        return 77
    e = Env(args.fox)
    return verdict("prometheus_scrape", lambda: scenario(e), e.clean)

if __name__ == "__main__":
    sys.exit(main())
