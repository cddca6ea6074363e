#!/usr/bin/env python3
"""Tests of the `fox` frontend (boot/fox) as a user drives it: rootless
clusters (QEMU nodes, the switch on 127.0.0.1, place 0 as a Linux process).

    frontend_test.py SCENARIO [--fox build/bin/fox]

Every scenario works in a state directory of its own (FOX_STATE_DIR, a
fresh temporary directory) with cluster names of its own, and ends by
checking that nothing it made is left: no process carrying its state
directory in its environment (supervisor, QEMUs, place 0), no QEMU named
after its clusters, no state directory. Whatever happens, it removes what
is left before exiting (and fails if it had to).

Scenarios:
    lifecycle          up 2 / status / run ring / kill one / status shows it dead / down
    kill_during_job    kill a node mid-job: every place told at once (am::NotifyDead), the job fails
    supervisor_killed  up, SIGKILL of the supervisor, then down cleans up (and so does up)
    run_interrupted    Ctrl-C (SIGINT) of run mid-job: status 130, the nodes return to the pool; the
                       same after SIGKILL of run (place 0 dies with it)
    two_clusters       two clusters side by side, a job on each at the same time
    consecutive_jobs   jobs one after another on one pool: the idle nodes' agents take them without a
                       reboot (and --reboot boots them into the job), and tell how it ended (a report
                       lost: QEMU's exit tells); `add` during a job
    run_temporary      run --nodes 2 with no cluster up: made for the job, removed after
    wrong_key          a node with another key is refused, the refusal logged with its address
    build_id           place 0 and node image from different sources: refused; an app not in the image too
    iso                nodes boot GRUB ISOs carrying their arguments, join and run a job
    bad_arguments      clear messages and status 2
    control_backpressure  the control connection's sends wait for a supervisor slow to read (no QEMU)
    bridge             (root) up --bridge: a namespace with a bridge, taps and dnsmasq (DHCP); run ring,
                       kill, add, a wrong-key node refused; SIGKILL of the supervisor, down: nothing left
                       (no namespace, tap, dnsmasq, QEMU)
    pxe                (root) up --pxe: nodes boot from QEMU's iPXE ROM (DHCP, iPXE script by TFTP,
                       multiboot), join, run a job twice (each a PXE boot); down: nothing left
    pxe_serve          (root) fox pxe serve on a bridge in a namespace of the test's: two iPXE machines with
                       fixed addresses and arguments (--hosts: the README's rack) run the ring between them,
                       and one from the range boots with the default arguments; a
                       legacy PXE client (no iPXE user class) is offered undionly.kpxe and reads it by TFTP;
                       Ctrl-C stops it and nothing is left
    memcached_job      fox run memcached: every node serves on TCP 11211, and ends with place 0
    memcached_gateway  rootless clients reach the job's Dht through place 0 on 127.0.0.1, across a fox kill
    run32              what `make run NODES=32` runs: the ring on 32 nodes made for the job, 0 deaths
    hosted             fox run --hosted: places as Linux processes here (no QEMU, no cluster): the ring
                       on 4 places; a place SIGKILLed mid-job announced to the job, which fails; Ctrl-C
    scale64            64 nodes of 64 MiB: the ring with 0 deaths; a node paused (SIGSTOP) for a
                       quarter of the suspicion timeout is not declared dead; a node that hangs
                       (SIGSTOP for good: no QEMU exit, so no notice from the frontend) is
                       declared dead by all 63 survivors within the membership's bound
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOX = os.path.join(ROOT, "build", "bin", "fox")


class Failure(Exception):
    pass


class Env:
    def __init__(self, fox):
        self.fox = fox
        self.dir = tempfile.mkdtemp(prefix="fox-frontend-test-")
        self.env = dict(os.environ, FOX_STATE_DIR=self.dir)
        self.names = set()
        self.tag = "%d" % os.getpid()

    def name(self, base):
        n = "t%s-%s" % (self.tag, base)
        self.names.add(n)
        return n

    def fox_cmd(self, *args, timeout=300, check=None, cwd=None):
        """Runs fox (in `cwd`, default ours); returns (status, output). check: the status required."""
        started = time.monotonic()
        p = subprocess.run([self.fox] + list(args), env=self.env, capture_output=True, text=True, timeout=timeout,
                           cwd=cwd)
        out = p.stdout + p.stderr
        print("$ fox %s  -> %d (%.1f s)" % (" ".join(args), p.returncode, time.monotonic() - started))
        print("".join("  | " + line + "\n" for line in out.splitlines()), end="")
        if check is not None and p.returncode != check:
            raise Failure("fox %s exited with %d, expected %d" % (" ".join(args), p.returncode, check))
        return p.returncode, out

    def start(self, *args):
        """fox in the background, its output collected."""
        p = subprocess.Popen([self.fox] + list(args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        p.lines = []
        p.times = []  # when each line arrived (time.monotonic())

        def read():
            for line in p.stdout:
                p.times.append(time.monotonic())
                p.lines.append(line.rstrip("\n"))
        p.reader = threading.Thread(target=read, daemon=True)
        p.reader.start()
        return p

    def status(self, name):
        _, out = self.fox_cmd("status", "--json", "--name", name, check=0)
        return json.loads(out[out.index("{"):])

    def leftovers(self):
        """Processes and files this test made that still exist."""
        found = []
        mark = ("FOX_STATE_DIR=%s" % self.dir).encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % entry, "rb") as f:
                    environ = f.read().split(b"\0")
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if mark in environ and "frontend_test.py" not in cmd:
                found.append("process %s: %s" % (entry, cmd[:150]))
            elif any(("fox:%s:node" % n) in cmd for n in self.names):
                found.append("QEMU %s: %s" % (entry, cmd[:150]))
        for n in self.names:
            if os.path.exists(os.path.join(self.dir, n)):
                found.append("state directory %s" % os.path.join(self.dir, n))
        for ns in namespaces():
            if ns.startswith("fox-t%s-" % self.tag) or ns.startswith("foxtest-%s-" % self.tag):
                found.append("namespace %s" % ns)
        return found

    def expect_nothing_left(self, when):
        deadline = time.monotonic() + 10
        while True:
            left = self.leftovers()
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if left:
            raise Failure("left behind %s: %s" % (when, "; ".join(left)))
        print("ok: nothing left behind %s" % when)

    def clean(self):
        for n in sorted(self.names):
            subprocess.run([self.fox, "cluster", "down", "--name", n], env=self.env, capture_output=True, timeout=60)
        left = self.leftovers()
        for line in left:
            if line.startswith("namespace"):
                subprocess.run(["ip", "netns", "del", line.split()[1]], capture_output=True)
            if line.startswith(("process", "QEMU")):
                try:
                    os.kill(int(line.split()[1].rstrip(":")), signal.SIGKILL)
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)
        return left


def check(condition, what):
    """Raises Failure(what) unless `condition`; else prints that it holds."""
    if not condition:
        raise Failure(what)
    print("ok: %s" % what)


def verdict(name, body, clean, errors=()):
    """A scenario program's end: runs body(), then clean() (also when body fails), which returns
    what it found left behind (and removed where it could); prints FAILED and why (a Failure, a
    timeout, one of `errors`, or something left behind) or NAME: ok, and returns the exit status."""
    failure = None
    try:
        body()
    except (Failure, subprocess.TimeoutExpired) + tuple(errors) as err:
        failure = "%s%s" % ("" if isinstance(err, (Failure, subprocess.TimeoutExpired)) else type(err).__name__ + ": ",
                            err)
    finally:
        left = clean()
    if left and failure is None:
        failure = "left behind: %s" % "; ".join(left)
    if failure:
        print("FAILED: %s" % failure)
        return 1
    print("%s: ok" % name)
    return 0


def expect(text, pattern, what):
    if not re.search(pattern, text, re.M):
        raise Failure("%s: no /%s/ in the output" % (what, pattern))


def states(status):
    return {r["node"]: r["state"] for r in status["nodes"]}


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise Failure("timed out (%g s) waiting for %s" % (timeout, what))


def namespaces():
    if os.geteuid() != 0:
        return []
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def check_ring(out, places, nodes=True, ids=None):
    """The ring's answer on `places` places: place 0 and the places `ids` (1 .. places - 1 unless
    said). Each place's lines carry its id, the node's id in the job (fox.node), whatever the pool
    node's position in the job."""
    expect(out, r"^place0\| ring: %d nodes joined, with disjoint job-wide Ebb id ranges" % places, "ring")
    expect(out, r"^place0\| ring: every node said goodbye: job done", "ring")
    for p in ids or range(1, places):
        expect(out, r"^place%d\| ring: node %d: done, saying goodbye" % (p, p), "ring")
        # A node's last line: fox run reads each node to its end, although its agent
        # tells the job's end before it (fox run once lost it for most nodes).
        if nodes:
            expect(out, r"^place%d\| \[\s*[0-9.]+\] I fox: exit status 0$" % p, "ring")


def lifecycle(e):
    name = e.name("life")
    _, out = e.fox_cmd("cluster", "up", "--nodes", "2", "--name", name, check=0)
    expect(out, r"^1\s+10\.77\.0\.11\s+idle", "up's table")
    expect(out, r"^2\s+10\.77\.0\.12\s+idle", "up's table")
    st = e.status(name)
    if states(st) != {1: "idle", 2: "idle"}:
        raise Failure("status after up: %s" % states(st))
    _, out = e.fox_cmd("status", "--name", name, check=0)
    expect(out, r"^NODE\s+ADDRESS\s+STATE", "status table")
    _, out = e.fox_cmd("cluster", "list", check=0)
    expect(out, r"^%s: supervisor \d+, 2 nodes \(2 idle\)" % re.escape(name), "cluster list")
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=20", check=0)
    check_ring(out, 3)
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "the nodes back in the pool")
    _, out = e.fox_cmd("kill", "2", "--name", name, check=0)
    st = e.status(name)
    if states(st)[2] != "dead" or states(st)[1] != "idle":
        raise Failure("status after kill 2: %s" % states(st))
    e.fox_cmd("kill", "2", "--name", name, check=1)
    _, out = e.fox_cmd("status", "--name", name, check=0)
    expect(out, r"^2\s+10\.77\.0\.12\s+dead", "status table after kill")
    # The pool goes on with the survivor; the dead node's id is not reused.
    _, out = e.fox_cmd("add", "--nodes", "1", "--name", name, check=0)
    expect(out, r"nodes 3: booting", "add after a death")
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=5", check=0)
    check_ring(out, 3, ids=(1, 3))  # place 3 is the job's second node: its lines say place3, not place2
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def kill_during_job(e):
    """fox kill of a node mid-job: place 0 hears it from the frontend (NotifyDead) and tells the
    other nodes, which fail the job at once, before any failure detector could (~2.7 s)."""
    name = e.name("killjob")
    e.fox_cmd("cluster", "up", "--nodes", "3", "--name", name, check=0)
    run = e.start("run", "ring", "--name", name, "--timeout", "200", "--", "laps=1000000")
    wait_for(lambda: any("nodes joined" in line for line in run.lines), 180, "the job to start")
    e.fox_cmd("kill", "2", "--name", name, check=0)
    killed_at = time.monotonic()
    rc = run.wait(timeout=120)
    run.reader.join(timeout=5)
    out = "\n".join(run.lines)
    print("\n".join("  | " + line for line in run.lines if "am stats" not in line))
    if rc != 1:
        raise Failure("the job with a killed node exited %d, expected 1" % rc)
    expect(out, r"^fox run: node 2 died: telling the job", "run")
    expect(out, r"^place0\| .*am: the frontend says node 2 died", "place 0")
    expect(out, r"^place0\| ring: node 0: node 2 died: the job fails", "place 0")
    for p in (1, 3):
        # told by place 0, whom the frontend told
        expect(out, r"^place%d\| .*am: node 2 declared dead \(notice from node 0\)$" % p, "a surviving node")
        # (or the token it was passing to node 2 found it dead)
        expect(out, r"^place%d\| ring: node \d: (node 2 died: the job fails|sending to node 2 failed)" % p,
               "a surviving node")
    # What makes it fast is the notice, not a time: no survivor may have waited for its own detector.
    for line in run.lines:
        if re.search(r"am: node 2 declared dead \(own probes\)", line):
            raise Failure("a survivor's detector declared node 2 dead before the notice came: %s" % line)
    took = time.monotonic() - killed_at
    print("the job ended %.2f s after the kill (for information: wall time under QEMU is no bound)" % took)
    if states(e.status(name))[2] != "dead":
        raise Failure("node 2 is not dead in the status")
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def supervisor_killed(e):
    name = e.name("crash")
    e.fox_cmd("cluster", "up", "--nodes", "1", "--name", name, check=0)
    pid = e.status(name)["pid"]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    _, out = e.fox_cmd("cluster", "list", check=0)
    expect(out, r"^%s: supervisor gone" % re.escape(name), "list after the supervisor died")
    e.fox_cmd("status", "--name", name, check=1)
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after SIGKILL of the supervisor and down")
    # The next `up` under the same name works; and it cleans up after a dead supervisor too.
    e.fox_cmd("cluster", "up", "--nodes", "1", "--name", name, check=0)
    os.kill(e.status(name)["pid"], signal.SIGKILL)
    time.sleep(0.5)
    _, out = e.fox_cmd("cluster", "up", "--nodes", "2", "--name", name, check=0)
    expect(out, r"cluster %s: cleaned up after a supervisor that is gone" % re.escape(name), "up after a crash")
    if states(e.status(name)) != {1: "idle", 2: "idle"}:
        raise Failure("the new cluster: %s" % states(e.status(name)))
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after the last down")


def run_interrupted(e):
    name = e.name("intr")
    e.fox_cmd("cluster", "up", "--nodes", "2", "--name", name, check=0)
    run = e.start("run", "ring", "--name", name, "--", "laps=1000000")
    wait_for(lambda: any("nodes joined" in line for line in run.lines), 180, "the job to start")
    time.sleep(1)
    run.send_signal(signal.SIGINT)
    rc = run.wait(timeout=60)
    run.reader.join(timeout=5)
    print("\n".join("  | " + line for line in run.lines[-5:]))
    if rc != 130:
        raise Failure("interrupted run exited with %s, expected 130" % rc)
    expect("\n".join(run.lines), r"interrupted: job \d+ stopped, its nodes return to the pool", "run's message")
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "the nodes back in the pool")
    # SIGKILL of run: place 0 dies with it, the supervisor ends the job.
    run = e.start("run", "ring", "--name", name, "--", "laps=1000000")
    wait_for(lambda: any("nodes joined" in line for line in run.lines), 180, "the job to start")
    run.kill()
    run.wait()

    def place0_gone():
        return not [p for p in e.leftovers() if "apps/ring/ring" in p]
    wait_for(place0_gone, 10, "place 0 to die with the killed fox run")
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "the nodes back in the pool")
    e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=5", check=0)
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after Ctrl-C of run, SIGKILL of run and down")


def two_clusters(e):
    a, b = e.name("a"), e.name("b")
    e.fox_cmd("cluster", "up", "--nodes", "1", "--name", a, check=0)
    e.fox_cmd("cluster", "up", "--nodes", "1", "--name", b, check=0)
    _, out = e.fox_cmd("cluster", "list", check=0)
    expect(out, r"^%s: supervisor" % re.escape(a), "list")
    expect(out, r"^%s: supervisor" % re.escape(b), "list")
    ra = e.start("run", "ring", "--name", a, "--timeout", "200", "--", "laps=20")
    rb = e.start("run", "ring", "--name", b, "--timeout", "200", "--", "laps=20")
    for r, n in ((ra, a), (rb, b)):
        rc = r.wait(timeout=260)
        r.reader.join(timeout=5)
        out = "\n".join(r.lines)
        print("run on %s -> %d\n%s" % (n, rc, "\n".join("  | " + line for line in r.lines)))
        if rc != 0:
            raise Failure("the job on %s exited with %d" % (n, rc))
        check_ring(out, 2)
    # b's node reboots into the pool after its job: idle first, then a goes down.
    wait_for(lambda: states(e.status(b)) == {1: "idle"}, 120, "cluster %s's node back in the pool" % b)
    e.fox_cmd("cluster", "down", "--name", a, check=0)
    if states(e.status(b)) != {1: "idle"}:
        raise Failure("cluster %s changed when %s went down" % (b, a))
    e.fox_cmd("cluster", "down", "--name", b, check=0)
    e.expect_nothing_left("after both downs")


def one_node_cluster(e, name, **variables):
    """`fox cluster up --nodes 1` whose supervisor has `variables` (test knobs) in its environment."""
    e.env.update(variables)
    try:
        e.fox_cmd("cluster", "up", "--nodes", "1", "--name", name, check=0)
    finally:
        for v in variables:
            del e.env[v]


def consecutive_jobs(e):
    name = e.name("seq")
    e.fox_cmd("cluster", "up", "--nodes", "2", "--name", name, check=0)
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=5", check=0)
    # The idle nodes' agents took the job: no reboot (one boot each so far), then back to the pool.
    for k in (1, 2):
        expect(out, r"^place%d\| agent: node %d takes job \d+ \(no reboot\)$" % (k, k), "run")
    with open(os.path.join(e.dir, name, "supervisor.log")) as f:
        log_text = f.read()
    expect(log_text, r"node 1: took job \d+ without a reboot", "supervisor.log")
    if re.search(r"node [12]: booting into job", log_text) or "rebooting it into the job" in log_text:
        raise Failure("a node was rebooted into the first job:\n" + log_text)
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "the nodes back in the pool")
    if {r["node"]: r["boots"] for r in e.status(name)["nodes"]} != {1: 2, 2: 2}:
        raise Failure("boots after one job: %s, expected 2 each (the pool, then the pool again after the job)" %
                      {r["node"]: r["boots"] for r in e.status(name)["nodes"]})
    # The job's status came from the agents (kExit), before their QEMUs exited; a failing one too.
    expect(log_text, r"node 1: ring ended with status 0 \(its agent said\)", "supervisor.log")
    status, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=zero")
    if status != 2:
        raise Failure("a job whose places exit 2 made fox run exit %d:\n%s" % (status, out))
    with open(os.path.join(e.dir, name, "supervisor.log")) as f:
        expect(f.read(), r"node 2: ring ended with status 2 \(its agent said\)", "supervisor.log")
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "the nodes back in the pool")
    # Reports lost (FOX_TEST_DEAF_TO_EXITS=1: the switch drops them): the node gives up after 20 ms
    # and its QEMU's exit tells the status.
    deaf = e.name("seqdf")
    one_node_cluster(e, deaf, FOX_TEST_DEAF_TO_EXITS="1")
    status, out = e.fox_cmd("run", "ring", "--name", deaf, "--timeout", "200", "--", "laps=zero")
    if status != 2:
        raise Failure("a job whose places exit 2 made fox run exit %d (reports lost):\n%s" % (status, out))
    expect(out, r"^place1\| agent: the frontend did not answer the job's end in 20 ms$", "a lost report")
    with open(os.path.join(e.dir, deaf, "supervisor.log")) as f:
        log_deaf = f.read()
    expect(log_deaf, r"node 1: ring exited with status 2", "supervisor.log")
    if "its agent said" in log_deaf:
        raise Failure("a report the switch dropped was taken:\n" + log_deaf)
    e.fox_cmd("cluster", "down", "--name", deaf, check=0)
    # An agent that does not answer in time: the node is rebooted into the job (FOX_HAND_TIMEOUT_S=0
    # makes every hand-over time out at once; a cluster of its own).
    other = e.name("seqfb")
    one_node_cluster(e, other, FOX_HAND_TIMEOUT_S="0")
    _, out = e.fox_cmd("run", "ring", "--name", other, "--timeout", "200", "--", "laps=5", check=0)
    check_ring(out, 2)
    expect(out, r"^place1\| .*\| boot args: fox\.app=ring fox\.node=1 ", "the fallback's boot into the job")
    with open(os.path.join(e.dir, other, "supervisor.log")) as f:
        expect(f.read(), r"node 1: its agent did not answer job \d+ in 0\.0 s: rebooting it into the job", "supervisor.log")
    e.fox_cmd("cluster", "down", "--name", other, check=0)
    # fox run --reboot: every node booted into the job afresh.
    _, out = e.fox_cmd("run", "ring", "--reboot", "--name", name, "--timeout", "200", "--", "laps=5", check=0)
    check_ring(out, 3)
    expect(out, r"^place1\| .*\| boot args: fox\.app=ring fox\.node=1 ", "run --reboot")
    if "takes job" in out:
        raise Failure("an agent took a --reboot job")
    run = e.start("run", "ring", "--name", name, "--timeout", "200", "--", "laps=20000")
    wait_for(lambda: any("nodes joined" in line for line in run.lines), 180, "the second job to start")
    st = e.status(name)
    running = {r["node"]: (r["state"], r["place"]) for r in st["nodes"]}
    if running != {1: ("running", 1), 2: ("running", 2)} or st["job"] is None:
        raise Failure("status during the job: %s, job %s" % (running, st["job"]))
    # The nodes' AM counters, from their status reports (place 0 asks them: Messenger::QueryStatus).
    def counted():
        rows = e.status(name)["nodes"]
        return all((r.get("am") or {}).get("am.messages_sent", 0) > 0 and
                   (r.get("am") or {}).get("am.messages_delivered", 0) > 0 for r in rows if r["node"] in (1, 2))
    wait_for(counted, 30, "the nodes' AM counters in the status")
    _, out = e.fox_cmd("status", "--name", name, check=0)
    expect(out, r"AM MSGS TX/RX\s+RETX\s+PEERS DEAD", "the AM columns of the status table")
    expect(out, r"^1\s.*\s[0-9]+/[0-9]+\s+[0-9]+\s+0$", "node 1's AM counters in the status table")
    _, out = e.fox_cmd("add", "--nodes", "1", "--name", name, check=0)
    expect(out, r"nodes 3: booting", "add during a job")
    rc = run.wait(timeout=260)
    run.reader.join(timeout=5)
    if rc != 0:
        print("\n".join("  | " + line for line in run.lines))
        raise Failure("the second job exited with %d" % rc)
    check_ring("\n".join(run.lines), 3)
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "three idle nodes")
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=5", check=0)
    check_ring(out, 4)  # the added node takes part
    e.fox_cmd("run", "ring", "--places", "2", "--name", name, "--timeout", "200", "--", "laps=5", check=0)
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def run_temporary(e):
    name = e.name("tmp")
    _, out = e.fox_cmd("run", "ring", "--nodes", "2", "--name", name, "--timeout", "200", "--", "laps=10", check=0)
    check_ring(out, 3)
    e.expect_nothing_left("after a run on a cluster made for it")
    # A failing job's status is the command's: ring refuses a bad argument with 2.
    status, out = e.fox_cmd("run", "ring", "--nodes", "1", "--name", name, "--timeout", "200", "--", "laps=zero")
    if status != 2:
        raise Failure("a job whose places exit 2 made fox run exit %d" % status)
    expect(out, r"^place0\| ring: bad argument 'laps=zero'", "the job's own message")
    e.expect_nothing_left("after a failed job")


def wrong_key(e):
    name = e.name("key")
    e.fox_cmd("cluster", "up", "--nodes", "1", "--name", name, check=0)
    status, out = e.fox_cmd("add", "--nodes", "1", "--wrong-key", "--name", name, "--timeout", "120")
    if status != 1:
        raise Failure("adding a node with the wrong key exited %d, expected 1" % status)
    expect(out, r"node 2: refused", "add's message")
    if states(e.status(name)) != {1: "idle", 2: "refused"}:
        raise Failure("status: %s" % states(e.status(name)))
    with open(os.path.join(e.dir, name, "supervisor.log")) as f:
        text = f.read()
    expect(text, r"refusing node 2 at 10\.77\.0\.12 \(MAC 52:54:00:77:00:02\): its frames fail the cluster's key",
           "supervisor.log")
    # The refused node takes no part in jobs.
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=3", check=0)
    check_ring(out, 2)
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def build_id(e):
    """A place-0 program built from other sources than the node image is refused (build id);
    so is an app the image does not hold."""
    name = e.name("bid")
    build = os.path.join(e.dir, "build")
    real = e.env.get("FOX_BUILD", os.path.join(ROOT, "build"))
    os.makedirs(os.path.join(build, "host", "apps", "ring"))
    os.makedirs(os.path.join(build, "host", "apps", "hello"))
    os.symlink(os.path.join(real, "native"), os.path.join(build, "native"))
    os.symlink(os.path.join(real, "host", "apps", "hello", "hello"), os.path.join(build, "host", "apps", "hello", "hello"))
    with open(os.path.join(real, "host", "apps", "ring", "ring"), "rb") as f:
        data = f.read()
    m = re.search(rb"FOXBUILDID:([0-9a-f]{32})", data)
    if not m:
        raise Failure("the hosted ring carries no build id")
    other = data.replace(m.group(0), b"FOXBUILDID:" + b"0" * 32)
    path = os.path.join(build, "host", "apps", "ring", "ring")
    with open(path, "wb") as f:
        f.write(other)
    os.chmod(path, 0o755)
    e.env["FOX_BUILD"] = build
    e.fox_cmd("cluster", "up", "--nodes", "1", "--name", name, check=0)
    _, out = e.fox_cmd("run", "ring", "--name", name, check=1)
    expect(out, r"place 0's program \(build id 0{32}\) and the node image .*fox\.elf \(build id %s\) were built "
                r"from different sources: run make" % m.group(1).decode(), "run")
    _, out = e.fox_cmd("run", "hello", "--name", name, check=0)  # the same sources: runs
    expect(out, r"^place1\| Hello from fox", "hello")
    os.makedirs(os.path.join(build, "host", "apps", "nosuch"))
    os.symlink(os.path.join(real, "host", "apps", "hello", "hello"), os.path.join(build, "host", "apps", "nosuch", "nosuch"))
    _, out = e.fox_cmd("run", "nosuch", "--name", name, check=1)
    expect(out, r"the node image .*fox\.elf holds no app nosuch \(it holds agent, [a-z_, ]*hello, [a-z_, ]*ring",
           "run")
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def iso(e):
    """cluster up --iso: nodes boot a GRUB ISO whose menu entry carries their arguments, join, run a job."""
    name = e.name("iso")
    e.fox_cmd("cluster", "up", "--iso", "--nodes", "2", "--name", name, "--timeout", "180", check=0)
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=5", check=0)
    check_ring(out, 3)
    with open(os.path.join(e.dir, name, "node1.log"), errors="replace") as f:
        console = f.read()
    expect(console, r"multiboot2|GRUB|fox.app=agent", "node 1's console")
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "the nodes back in the pool")
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def add_places(e):
    """A job that grows on QEMU nodes (PlaceManager::addPlaces, issue 12): place 2 dies; place 0 asks for a
    place, fox run relays it, the supervisor boots the idle node 4 into the job, which joins the transport,
    the Dht and the places; then the nodes go back to the pool."""
    name = e.name("grow")
    program = os.path.join(os.environ.get("FOX_BUILD", os.path.join(ROOT, "build")), "host", "tests", "apgas",
                           "apgas_node")
    e.fox_cmd("cluster", "up", "--nodes", "4", "--name", name, "--timeout", "300", check=0)
    _, out = e.fox_cmd("run", program, "--name", name, "--places", "4", "--finish", "optimistic", "--timeout", "400",
                       "--", "add_places", check=9)
    expect(out, r"^fox run: place 0 asked for 1 more nodes$", "run")
    expect(out, r"^fox run: nodes 4 joined the job$", "run")
    expect(out, r"^place0\| apgas: place 4 joined the job: 5 places$", "apgas")
    expect(out, r"^place0\| apgas: place manager: place 2 died, addPlaces\(1\) gave place 4 in \d+ ms, which took "
                r"index 2 and restored its slice from the store: 4 of 4 slices right, 4 of 4 places know it: PASS$",
           "apgas")
    expect(out, r"^place4\| .*dht: joined: ring epoch 2, 4 nodes", "node 4")
    wait_for(lambda: all(s in ("idle", "dead") for s in states(e.status(name)).values()), 200,
             "the nodes back in the pool")
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def bad_arguments(e):
    name = e.name("bad")
    cases = [
        (["cluster", "up", "--nodes", "0"], r"--nodes: 0 is not from 1 to 200"),
        (["cluster", "up", "--nodes", "many"], r"--nodes: 'many' is not a whole number"),
        (["cluster", "up", "--name", "no/slash"], r"--name: 'no/slash' is not a cluster name"),
        (["status", "--name", "x" * 33], r"--name: 'x{33}' is not a cluster name"),
        (["status", "--name", ".hidden"], r"--name: '\.hidden' is not a cluster name"),
        (["status", "--name="], r"--name: '' is not a cluster name"),
        (["run", "ring", "--name", "a b"], r"--name: 'a b' is not a cluster name"),
        (["cluster", "up", "--pxe", "--iso", "--name", name], r"--pxe and --iso exclude each other"),
        (["pxe"], r"the following arguments are required: ACTION"),
        (["pxe", "serve", "--interface", "lo"], r"the following arguments are required: --range"),
        (["pxe", "serve", "--interface", "lo", "--range", "10.0.0.9,10.0.0.1"], r"--range: '10\.0\.0\.9,10\.0\.0\.1' is not A,B with A <= B"),
        (["pxe", "serve", "--interface", "lo", "--range", "ten"], r"--range: 'ten' is not A,B"),
        (["pxe", "serve", "--interface", "nosuch0", "--range", "10.0.0.1,10.0.0.9"], r"--interface: no interface 'nosuch0' here|needs root"),
        (["pxe", "serve", "--interface", "lo", "--range", "10.0.0.1,10.0.0.9", "--image", "/nonexistent.elf"],
         r"--image: /nonexistent\.elf does not exist|needs root"),
        (["cluster", "sideways"], r"invalid choice: 'sideways'"),
        (["cluster"], r"the following arguments are required: ACTION"),
        ([], r"the following arguments are required: COMMAND"),
        (["run"], r"the following arguments are required: app"),
        (["run", "ring", "--timeout", "-3"], r"--timeout: '-3' is not a positive number of seconds"),
        (["run", "ring", "--nodes", "1", "--places", "5", "--name", name], r"--places 5 needs 4 nodes; --nodes is 1"),
        (["kill"], r"the following arguments are required: node"),
        (["kill", "x"], r"argument node: 'x' is not a whole number"),
        (["add"], r"the following arguments are required: --nodes"),
        (["status", "--bogus"], r"unrecognized arguments: --bogus"),
        (["status", "--", "x"], r"only fox run takes arguments after --"),
    ]
    for args, pattern in cases:
        status, out = e.fox_cmd(*args)
        if status != 2:
            raise Failure("fox %s exited %d, expected 2" % (" ".join(args), status))
        expect(out, pattern, "fox %s" % " ".join(args))
    for args in (["cluster", "up", "--help"], ["run", "--help"], ["status", "--help"], ["kill", "--help"],
                 ["add", "--help"], ["logs", "--help"], ["cluster", "down", "--help"], ["--help"]):
        e.fox_cmd(*args, check=0)
    # Each command builds only its own parser: the top level's help still lists every command.
    _, out = e.fox_cmd("--help", check=0)
    for command in ("cluster", "status", "run", "kill", "add", "pxe", "logs"):
        expect(out, r"^    %s +\S" % command, "fox --help lists %s" % command)
    # Not bad arguments, but no cluster: status 1 with the way out.
    _, out = e.fox_cmd("status", "--name", name, check=1)
    expect(out, r"no cluster %s is up" % re.escape(name), "status without a cluster")
    _, out = e.fox_cmd("run", "ring", "--name", name, check=1)
    expect(out, r"fox cluster up first, or fox run --nodes N", "run without a cluster")
    e.expect_nothing_left("after bad arguments")


def control_backpressure(e):
    """The job's client keeps talking to a supervisor that is slow to read
    (its own loop busy with many nodes): a send after a receive(0) waits for
    room instead of failing with "timed out" (seen with 64 nodes' status
    reports at once). A supervisor of the test's own, on the control socket's
    path; no QEMU."""
    import socket
    sys.path.insert(0, os.path.join(ROOT, "boot"))
    from fox import state
    name = e.name("control")
    os.environ["FOX_STATE_DIR"] = e.dir
    os.makedirs(state.cluster_dir(name))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(os.path.join(state.cluster_dir(name), "supervisor.sock"))
    server.listen(1)
    received = []

    def supervisor():
        peer, _ = server.accept()
        time.sleep(1.5)  # busy: the client's sends fill the socket meanwhile
        buf = b""
        while True:
            chunk = peer.recv(65536)
            if not chunk:
                break
            buf += chunk
        received.extend(json.loads(line) for line in buf.split(b"\n") if line)
        peer.close()
    thread = threading.Thread(target=supervisor, daemon=True)
    thread.start()
    conn = state.Connection(name, timeout=30)
    try:
        try:
            conn.receive(0)  # as fox run's loop does: nothing yet
        except (socket.timeout, BlockingIOError):
            pass
        report = "x" * 8000
        started = time.monotonic()
        try:
            for node in range(1, 101):  # 800 KB: more than the socket holds
                conn.send(op="node_status", node=node, report=report)
        except OSError as err:
            raise Failure("send %d of 100 to a slow supervisor failed: %r" % (node, err))
        waited = time.monotonic() - started
    finally:
        conn.close()
    thread.join(30)
    server.close()
    shutil.rmtree(state.cluster_dir(name), ignore_errors=True)
    if [m["node"] for m in received] != list(range(1, 101)) or any(m["report"] != report for m in received):
        raise Failure("the supervisor got %d of 100 reports, or not in order" % len(received))
    print("ok: 100 reports of 8 KB to a supervisor that read nothing for 1.5 s: all arrived, in order "
          "(the sends waited %.1f s)" % waited)


def memcached_job(e):
    name = e.name("mc")
    _, out = e.fox_cmd("run", "memcached", "--nodes", "2", "--name", name, "--timeout", "200", "--", "seconds=5",
                       check=0)
    expect(out, r"^place0\| memcached: place 0; 2 nodes serve the memcached protocol on TCP port 11211", "place 0")
    for p in (1, 2):
        expect(out, r"^place%d\| memcached: node %d serving on 10\.77\.0\.1%d:11211" % (p, p, p), "a node")
        # Its membership saw place 0 end: the node ends too, before the frontend must stop it.
        expect(out, r"^place%d\| memcached: place 0 is gone: the job ends" % p, "a node")
    if "still running" in out:
        raise Failure("the nodes outlived the job")
    e.expect_nothing_left("after the job")


def memcached_gateway(e):
    """Rootless: clients on the frontend reach the job's Dht through place 0's port on 127.0.0.1
    (memccapable and the pymemcache conversation), keys set there are read through it again after
    a node is killed (fox kill), and Ctrl-C ends the job."""
    name = e.name("gw")
    e.fox_cmd("cluster", "up", "--nodes", "3", "--name", name, check=0)
    run = e.start("run", "memcached", "--name", name)
    try:
        port = gateway_port(run, 3)
        # fox status says where clients here reach the job.
        wanted = [{"service": "memcached", "address": "127.0.0.1:%d" % port}]
        wait_for(lambda: (e.status(name)["job"] or {}).get("endpoints") == wanted, 30,
                 "fox status --json to show the job's endpoint")
        _, out = e.fox_cmd("status", "--name", name, check=0)
        expect(out, r"memcached for clients on this machine: 127\.0\.0\.1:%d \(through place 0" % port, "fox status")
        check = subprocess.run([sys.executable, os.path.join(ROOT, "tests/memcached/conformance.py"), "remote",
                                "127.0.0.1", str(port), os.path.join(ROOT, "tests/memcached/pymemcache_check.py")],
                               capture_output=True, text=True, timeout=300)
        print("".join("  | " + line + "\n" for line in (check.stdout + check.stderr).splitlines()[-4:]), end="")
        if check.returncode != 0:
            raise Failure("stock clients through place 0's gateway: exit %d" % check.returncode)
        keys = subprocess.run(["/usr/bin/python3", "-c", GATEWAY_KEYS, str(port), name, e.fox] , env=e.env,
                              capture_output=True, text=True, timeout=300)
        print("".join("  | " + line + "\n" for line in (keys.stdout + keys.stderr).splitlines()), end="")
        if keys.returncode != 0:
            raise Failure("keys through the gateway across a node's death: exit %d" % keys.returncode)
        interrupt(run)
    finally:
        collect(run)
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after the gateway job")


def gateway_port(run, nodes):
    """A memcached job's gateway port at place 0, once it and its `nodes` nodes serve."""
    wait_for(lambda: any("127.0.0.1:" in line for line in run.lines), 180, "place 0's gateway")
    wait_for(lambda: sum("serving on" in line for line in run.lines) == nodes, 60, "the nodes serving")
    return int(re.search(r"at 127\.0\.0\.1:(\d+)", "\n".join(run.lines)).group(1))


def interrupt(run):
    """Ctrl-C to a memcached job that serves until then: it ends with 130."""
    run.send_signal(signal.SIGINT)
    rc = run.wait(timeout=60)
    if rc != 130:
        raise Failure("interrupted memcached job exited with %s, expected 130" % rc)


def collect(run):
    """Stops a background fox run if it still runs and prints its output (the Dht's log lines kept)."""
    if run.poll() is None:
        run.kill()
    run.reader.join(timeout=5)
    print("\n".join("  | " + line for line in run.lines if "] I " not in line or "dht" in line))


def memcached_grow(e):
    """Rebalancing after fox add (issue 13): a memcached job on 2 nodes holds 3000 keys set through place 0's
    gateway; fox add --nodes 1 --into-job boots node 3 into the job, whose Dht streams it its partitions
    (fox.joining=1: Dht::Join); every key reads back; then node 1 is killed and every key still reads back
    (r = 2: each key was where the ring of 4 members says)."""
    name = e.name("mcgrow")
    e.fox_cmd("cluster", "up", "--nodes", "2", "--name", name, check=0)
    run = e.start("run", "memcached", "--name", name)
    try:
        port = gateway_port(run, 2)
        keys = subprocess.run(["/usr/bin/python3", "-c", GROW_KEYS, str(port), name, e.fox], env=e.env,
                              capture_output=True, text=True, timeout=400)
        print("".join("  | " + line + "\n" for line in (keys.stdout + keys.stderr).splitlines()), end="")
        if keys.returncode != 0:
            raise Failure("keys through the gateway across a join and a death: exit %d" % keys.returncode)
        expect("\n".join(run.lines), r"^place3\| memcached: node 3 joins the running job's Dht$", "node 3")
        expect("\n".join(run.lines), r"^place0\| .*dht: node 3 joins: streaming its partitions$", "place 0")
        interrupt(run)
    finally:
        collect(run)
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after the growing memcached job")


# Run by Debian's python3 (pymemcache): 3000 keys through the gateway, a node
# added into the job, every key read back, node 1 killed, every key again.
GROW_KEYS = r"""
import subprocess, sys, time
from pymemcache.client.base import Client
port, name, fox = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = Client(("127.0.0.1", port), connect_timeout=10, timeout=60)
failed = c.set_many({"grow:%d" % i: b"value %d" % i for i in range(3000)}, noreply=False)
assert not failed, failed[:3]
subprocess.run([fox, "add", "--nodes", "1", "--into-job", "--name", name], check=True)
deadline = time.monotonic() + 240
while True:
    log = subprocess.run([fox, "logs", "3", "--name", name], capture_output=True, text=True).stdout
    if "dht: joined: ring epoch" in log:
        break
    assert time.monotonic() < deadline, "node 3 never joined the Dht"
    time.sleep(0.5)

def read_all(what):
    got = {}
    for start in range(0, 3000, 100):
        got.update(c.get_many(["grow:%d" % i for i in range(start, start + 100)]))
    bad = [i for i in range(3000) if got.get("grow:%d" % i) != b"value %d" % i]
    print("grow: %s: %d of 3000 keys read back, %d missing or wrong" % (what, 3000 - len(bad), len(bad)))
    assert not bad, bad[:5]

read_all("node 3 joined the job's Dht")
items = int(c.stats()[b"curr_items"])
print("grow: curr_items %d" % items)
assert items == 3000, items
subprocess.run([fox, "kill", "1", "--name", name], check=True)
read_all("node 1 killed after the join")
"""


# Run by Debian's python3 (pymemcache): 2000 keys through the gateway, node 2
# killed with fox kill, every key read back, and curr_items the whole Dht's.
GATEWAY_KEYS = r"""
import subprocess, sys, time
from pymemcache.client.base import Client
port, name, fox = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = Client(("127.0.0.1", port), connect_timeout=10, timeout=60)
failed = c.set_many({"gw:%d" % i: b"value %d" % i for i in range(2000)}, noreply=False)
assert not failed, failed[:3]
items = int(c.stats()[b"curr_items"])
print("gateway: 2000 keys set, curr_items %d" % items)
assert items == 2000, items
subprocess.run([fox, "kill", "2", "--name", name], check=True)
got = {}
for start in range(0, 2000, 100):
    got.update(c.get_many(["gw:%d" % i for i in range(start, start + 100)]))
bad = [i for i in range(2000) if got.get("gw:%d" % i) != b"value %d" % i]
print("gateway: node 2 killed: %d of 2000 keys read back, %d missing or wrong" % (2000 - len(bad), len(bad)))
assert not bad, bad[:5]
"""


def hosted(e):
    """fox run --hosted --places N (issues 11 and 12): every place a process of the app's hosted build."""
    _, out = e.fox_cmd("run", "ring", "--hosted", "--places", "4", "--timeout", "120", "--", "laps=50", check=0)
    check_ring(out, 4, nodes=False)  # Linux processes: no kernel's exit line
    if re.search(r"declared dead|died", out):
        raise Failure("a death in a healthy hosted job")
    e.expect_nothing_left("after the hosted job")

    def started(run):
        wait_for(lambda: any(re.search(r"^place0\| ring: 4 nodes joined", line) for line in run.lines), 60,
                 "the hosted job to start")
        pids = [m for line in run.lines for m in re.findall(r"(\d+):(\d+)", line) if "hosted places of ring" in line]
        return {int(place): int(pid) for place, pid in pids}

    run = e.start("run", "ring", "--hosted", "--places", "4", "--timeout", "120", "--", "laps=1000000")
    try:
        pids = started(run)
        os.kill(pids[2], signal.SIGKILL)
        rc = run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
        run.reader.join(timeout=5)
        print("\n".join("  | " + line for line in run.lines if "am stats" not in line))
    out = "\n".join(run.lines)
    if rc != 1:
        raise Failure("the hosted job with a killed place exited %d, expected 1" % rc)
    expect(out, r"^fox run: place 2 died \(killed by SIGKILL\): telling the job", "run")
    expect(out, r"^place0\| .*am: the frontend says node 2 died", "place 0")
    for p in (1, 3):
        expect(out, r"^place%d\| .*am: node 2 declared dead \(notice from node 0\)$" % p, "a surviving place")
    e.expect_nothing_left("after a hosted place was killed")

    run = e.start("run", "ring", "--hosted", "--places", "3", "--timeout", "120", "--", "laps=1000000")
    try:
        wait_for(lambda: any(re.search(r"^place0\| ring: 3 nodes joined", line) for line in run.lines), 60,
                 "the hosted job to start")
        run.send_signal(signal.SIGINT)
        rc = run.wait(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
        run.reader.join(timeout=5)
    if rc != 130:
        raise Failure("an interrupted hosted job exited %d, expected 130" % rc)
    e.expect_nothing_left("after an interrupted hosted job")
    _, out = e.fox_cmd("run", "ring", "--hosted", "--nodes", "2", check=2)
    expect(out, r"--hosted runs no nodes", "bad arguments")
    # An APGAS program by its path (issue 12: places as processes).
    program = os.path.join(os.environ.get("FOX_BUILD", os.path.join(ROOT, "build")), "host", "tests", "apgas", "apgas_node")
    _, out = e.fox_cmd("run", program, "--hosted", "--places", "4", "--timeout", "120", "--", "basic", "team", check=0)
    expect(out, r"^place0\| apgas: basic: PASS", "apgas")
    expect(out, r"^place0\| apgas: team of 4 places: barrier, allreduce, broadcast, agree: 4 of 4 right", "apgas")
    e.expect_nothing_left("after the hosted APGAS job")
    # The finish mode (--finish: fox.finish at every place).
    _, out = e.fox_cmd("run", program, "--hosted", "--places", "3", "--finish", "optimistic", "--timeout", "120",
                       "--", "basic", check=0)
    expect(out, r"^place0\| apgas: 3 places, finish mode optimistic$", "apgas")
    expect(out, r"^place0\| apgas: basic: PASS", "apgas")
    _, out = e.fox_cmd("run", program, "--hosted", "--finish", "eager", check=2)
    expect(out, r"--finish: invalid choice: 'eager'", "bad arguments")
    # Spares (--spares: fox.spares, PlaceManager's default): places 1 and 2 die (the job's status is theirs, 9).
    _, out = e.fox_cmd("run", program, "--hosted", "--places", "4", "--spares", "1", "--timeout", "120", "--",
                       "spares", check=9)
    expect(out, r"^place0\| apgas: place manager: place 2 died, spare 3 took index 2 .*: PASS$", "apgas")
    _, out = e.fox_cmd("run", program, "--hosted", "--places", "4", "--spares", "4", check=2)
    expect(out, r"--spares 4 of --places 4 would leave none active", "bad arguments")
    e.expect_nothing_left("after the hosted APGAS jobs")
    # A job that grows (PlaceManager::addPlaces, issue 12): place 2 dies (its status, 9, is the job's), and
    # fox run starts place 4 when place 0 asks; it joins the transport, the Dht and the places.
    _, out = e.fox_cmd("run", program, "--hosted", "--places", "4", "--finish", "optimistic", "--timeout", "120",
                       "--", "add_places", check=9)
    expect(out, r"^fox run: place 0 asked for 1 more places: started 4:\d+$", "run")
    expect(out, r"^place0\| apgas: place 4 joined the job: 5 places$", "apgas")
    expect(out, r"^place0\| apgas: place manager: place 2 died, addPlaces\(1\) gave place 4 in \d+ ms, which took "
                r"index 2 and restored its slice from the store: 4 of 4 slices right, 4 of 4 places know it: PASS$",
           "apgas")
    e.expect_nothing_left("after the hosted APGAS job that grew")
    # An iterative app keeps its spares topped up (issue 39): place 2 dies in step 5 (--kill-at: fox.kill_at),
    # the spare takes its index, and the executor asks fox run for a new spare.
    _, out = e.fox_cmd("run", "kmeans", "--hosted", "--places", "4", "--spares", "1", "--kill-at", "2:step:5",
                       "--timeout", "120", "--", "points=20000", "every=4", check=9)
    expect(out, r"^place2\| apgas: place 2 dies in step 5 \(fox.kill_at\) at unix [0-9.]+$", "kmeans")
    expect(out, r"^fox run: place 2 died \(status 9\): telling the job$", "run")
    expect(out, r"^fox run: place 0 asked for 1 more places: started 4:\d+$", "run")
    expect(out, r"^place0\| kmeans: .* 1 failures, 1 restores .*, 1 new spares \([0-9.]+ s\); active places at the "
                r"end: 0 1 3$", "kmeans")
    expect(out, r"^place0\| kmeans: the same as the run at one place$", "kmeans")
    _, out = e.fox_cmd("run", "kmeans", "--hosted", "--kill-at", "2:stop:5", check=2)
    expect(out, r"--kill-at '2:stop:5': expected PLACE:step\|checkpoint\|restore:N", "bad arguments")
    e.expect_nothing_left("after the hosted iterative job")


def app_input(e):
    """Input files on QEMU nodes (issue 39): the nodes have none, so they read place 0's through the
    FileSystem Ebb (fox run's working directory for relative paths). The files hold the generated
    inputs (tests/apps/points.py, edges.py), so the answers must be the generated ones."""
    apps = os.path.join(ROOT, "tests", "apps")
    subprocess.run([sys.executable, os.path.join(apps, "points.py"), os.path.join(e.dir, "points.csv"), "100000"],
                   check=True)
    subprocess.run([sys.executable, os.path.join(apps, "edges.py"), os.path.join(e.dir, "edges.txt"), "20000"],
                   check=True)
    _, out = e.fox_cmd("run", "kmeans", "--nodes", "3", "--name", e.name("kin"), "--timeout", "300", "--",
                       "input=points.csv", "blocks=13", "executor=spmd", check=0, cwd=e.dir)
    expect(out, r"^place0\| kmeans: 100000 points of 4 dimensions, k=8$", "kmeans")
    expect(out, r"^place0\| kmeans: cost 33990390\.346802 after 20 steps$", "kmeans")
    expect(out, r"^place0\| kmeans: the same as the run at one place$", "kmeans")
    e.expect_nothing_left("after the kmeans job")
    # A node killed in step 5 (its blocks' splits read again by the survivors).
    _, out = e.fox_cmd("run", "pagerank", "--nodes", "3", "--name", e.name("pin"), "--kill-at", "2:step:5",
                       "--timeout", "300", "--", "input=" + os.path.join(e.dir, "edges.txt"), "blocks=31", "every=4",
                       check=9)
    expect(out, r"^place0\| pagerank: rank checksum 351002f57548cf9e after 20 steps$", "pagerank")
    expect(out, r"^place0\| pagerank: .* 1 failures, 1 restores .* active places at the end: 0 1 3$", "pagerank")
    expect(out, r"^place0\| pagerank: the same as the run at one place$", "pagerank")
    e.expect_nothing_left("after the pagerank job")
    _, out = e.fox_cmd("run", "kmeans", "--nodes", "2", "--name", e.name("kno"), "--timeout", "300", "--",
                       "input=no-such-points.csv", check=1, cwd=e.dir)
    expect(out, r"^place0\| apgas: the program failed: .*cannot read no-such-points.csv: no such file", "kmeans")
    e.expect_nothing_left("after the job without its file")


def run32(e):
    """Issue 14: `make run NODES=32` (fox run ring --nodes 32 -- laps=100) failed with false deaths."""
    name = e.name("run32")
    _, out = e.fox_cmd("run", "ring", "--nodes", "32", "--name", name, "--timeout", "300", "--", "laps=100", check=0)
    check_ring(out, 33)
    if re.search(r"declared dead|died", out):
        raise Failure("a death in a healthy 32-node job")
    e.expect_nothing_left("after the job")


def scale64(e):
    """Issue 14's cluster test: 64 nodes on this host, membership without false deaths, and a
    hang detected by every survivor within the bound the frontend's timers state
    (qemu_run.detection_bound_s: three probe periods plus the suspicion)."""
    sys.path.insert(0, os.path.join(ROOT, "boot"))
    import qemu_run
    probe_ms, suspect_ms, _ = qemu_run.membership_timers("tcg", 64)
    bound = qemu_run.detection_bound_s("tcg", 64)
    print("membership timers for 64 nodes here: probe %d ms, suspicion %d ms; bound %.1f s" %
          (probe_ms, suspect_ms, bound))
    name = e.name("scale")
    _, out = e.fox_cmd("cluster", "up", "--nodes", "64", "--mem", "64", "--name", name, "--timeout", "400", check=0)
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "300", "--", "laps=30", check=0)
    check_ring(out, 65)
    if re.search(r"declared dead|died", out):
        raise Failure("a death in a healthy 64-node job")
    print("ok: 64 nodes, ring, 0 deaths (%d suspicions, all refuted)" % len(re.findall(r"am: node \d+ suspected", out)))
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 200, "the nodes back in the pool")
    pids = {r["node"]: r["pid"] for r in e.status(name)["nodes"]}
    run = e.start("run", "ring", "--name", name, "--timeout", "400", "--", "laps=1000000")
    stopped = []
    try:
        wait_for(lambda: any("nodes joined" in line for line in run.lines), 300, "the job to start")
        wait_for(lambda: any(re.search(r"ring: node 0: job-wide", line) for line in run.lines), 60, "place 0's ids")
        time.sleep(3)
        pids = {r["node"]: r["pid"] for r in e.status(name)["nodes"]}
        pause = suspect_ms / 4000.0
        os.kill(pids[10], signal.SIGSTOP)
        time.sleep(pause)
        os.kill(pids[10], signal.SIGCONT)
        time.sleep(bound + 3)
        if any("declared dead" in line for line in run.lines) or run.poll() is not None:
            raise Failure("a node paused for %.1f s (suspicion %.1f s) was declared dead" % (pause, suspect_ms / 1000.0))
        print("ok: node 10 paused %.1f s, nobody declared dead %.1f s later" % (pause, bound + 3))
        os.kill(pids[20], signal.SIGSTOP)  # hangs: its QEMU does not exit, the frontend sees nothing
        stopped.append(pids[20])
        hung_at = time.monotonic()
        run.wait(timeout=bound * 3 + 60)
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass  # the job ended and the frontend stopped it
        if run.poll() is None:
            run.kill()
        run.reader.join(timeout=5)
        print("\n".join("  | " + line for line in run.lines if "am stats" not in line and "] I " not in line))
    seen = {}
    for t, line in zip(run.times, run.lines):
        m = re.match(r"^place(\d+)\| .*am: node (\d+) declared dead", line)
        if m and int(m.group(2)) == 20:
            seen.setdefault(int(m.group(1)), t - hung_at)
        elif m and int(m.group(1)) not in seen:
            raise Failure("place %s declared node %s dead before node 20: %s" % (m.group(1), m.group(2), line))
    survivors = set(range(0, 65)) - {20}
    if set(seen) != survivors:
        raise Failure("node 20 was not declared dead by places %s" % sorted(survivors - set(seen)))
    times = sorted(seen.values())
    print("node 20 hung: declared dead by all %d survivors, first after %.1f s, median %.1f s, last after %.1f s "
          "(bound %.1f s); the latest: %s" % (len(times), times[0], times[len(times) // 2], times[-1], bound,
          ", ".join("place %d %.1f s" % (p, t) for p, t in sorted(seen.items(), key=lambda x: -x[1])[:5])))
    if times[-1] > bound + 3:  # the consoles reach us through files polled by fox run
        raise Failure("the last survivor saw the death %.1f s after the hang, above the bound %.1f s" %
                      (times[-1], bound))
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def bridge(e):
    name = e.name("bridge")
    _, out = e.fox_cmd("cluster", "up", "--bridge", "--nodes", "2", "--name", name, check=0)
    expect(out, r"^1\s+10\.77\.0\.11\s+idle", "up's table")
    st = e.status(name)
    ns = st.get("netns") or ""
    expect(st["network"], r"^bridge in namespace fox-t\d+-bridge-[0-9a-f]{6} \(DHCP and TFTP at 10\.77\.255\.254",
           "status's network")
    if ns not in namespaces():
        raise Failure("namespace %s does not exist" % ns)
    links = subprocess.run(["ip", "netns", "exec", ns, "ip", "-o", "link", "show", "master", "br0"],
                           capture_output=True, text=True).stdout
    for tap in ("tap1", "tap2", "sw0"):
        if ": %s:" % tap not in links:
            raise Failure("%s is not a port of br0 in %s: %s" % (tap, ns, links))
    with open(os.path.join(e.dir, name, "node1.log"), errors="replace") as f:
        expect(f.read(), r"net: DHCP lease 10\.77\.0\.11/255\.255\.0\.0 from 10\.77\.255\.254", "node 1's console")
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=20", check=0)
    check_ring(out, 3)
    wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 120, "the nodes back in the pool")
    e.fox_cmd("kill", "2", "--name", name, check=0)
    e.fox_cmd("add", "--nodes", "1", "--name", name, check=0)
    status, out = e.fox_cmd("add", "--nodes", "1", "--wrong-key", "--name", name, "--timeout", "120")
    if status != 1:
        raise Failure("adding a node with the wrong key exited %d, expected 1" % status)
    if states(e.status(name)) != {1: "idle", 2: "dead", 3: "idle", 4: "refused"}:
        raise Failure("status: %s" % states(e.status(name)))
    with open(os.path.join(e.dir, name, "supervisor.log")) as f:
        expect(f.read(), r"refusing node 4 at 10\.77\.0\.14 \(MAC 52:54:00:77:00:04\): its frames fail the cluster's key",
               "supervisor.log")
    _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=20", check=0)
    check_ring(out, 3, ids=(1, 3))  # the ring on nodes 1 and 3: places 1 and 3
    os.kill(e.status(name)["pid"], signal.SIGKILL)
    time.sleep(0.5)
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    if ns in namespaces():
        raise Failure("namespace %s left after SIGKILL of the supervisor and down" % ns)
    e.expect_nothing_left("after SIGKILL of the supervisor and down")


def pxe(e):
    name = e.name("pxe")
    _, out = e.fox_cmd("cluster", "up", "--pxe", "--nodes", "2", "--name", name, "--timeout", "180", check=0)
    st = e.status(name)
    if st["boot"] != "by iPXE":
        raise Failure("status says the nodes boot %r" % st["boot"])
    for k in (1, 2):
        with open(os.path.join(e.dir, name, "node%d.log" % k), errors="replace") as f:
            expect(f.read(), r"\| iPXE [^|]+\| boot args: fox\.app=agent fox\.node=%d " % k, "node %d's console" % k)
    for laps in (5, 10):  # each job boots its nodes by PXE again
        _, out = e.fox_cmd("run", "ring", "--name", name, "--timeout", "200", "--", "laps=%d" % laps, check=0)
        check_ring(out, 3)
        wait_for(lambda: set(states(e.status(name)).values()) == {"idle"}, 180, "the nodes back in the pool")
    with open(os.path.join(e.dir, name, "node1.log"), errors="replace") as f:
        text = f.read()
    # Its agent took each job without a reboot; after each, it booted by PXE into the pool again.
    expect(text, r"agent: node 1 takes job \d+ \(no reboot\)\nfox: pool image, app ring", "node 1's console")
    if len(re.findall(r"\| iPXE [^|]+\| boot args: fox\.app=agent fox\.node=1 ", text)) != 3:
        raise Failure("node 1 did not boot by PXE three times (the pool, after each of 2 jobs)")
    _, out = e.fox_cmd("run", "ring", "--reboot", "--name", name, "--timeout", "200", "--", "laps=7", check=0)
    check_ring(out, 3)
    with open(os.path.join(e.dir, name, "node1.log"), errors="replace") as f:
        expect(f.read(), r"\| iPXE [^|]+\| boot args: fox\.app=ring fox\.node=1 .* -- laps=7", "node 1's boot into the job")
    with open(os.path.join(e.dir, name, "dnsmasq.log"), errors="replace") as f:
        expect(f.read(), r"sent .*/tftp/node-52-54-00-77-00-02\.ipxe to 10\.77\.0\.12", "dnsmasq's log")
    e.fox_cmd("cluster", "down", "--name", name, check=0)
    e.expect_nothing_left("after down")


def dhcp_discover(iface, mac, user_class=None, timeout=20):
    """A DHCPDISCOVER from `mac` as a PXE ROM sends it (vendor class PXEClient; iPXE adds user
    class "iPXE"): (boot file name, next server) of the first offer."""
    import socket
    import struct
    # Each call its own transaction: a late offer to an earlier call from this
    # process (resent after a second without answer, as on a loaded host)
    # must not pass for this call's.
    xid = int.from_bytes(os.urandom(4), "big")
    opts = bytes([53, 1, 1]) + bytes([60, 32]) + b"PXEClient:Arch:00000:UNDI:002001"
    if user_class:
        opts += bytes([77, len(user_class)]) + user_class.encode()
    opts += bytes([55, 3, 1, 66, 67]) + b"\xff"
    packet = struct.pack("!BBBBIHH", 1, 1, 6, 0, xid, 0, 0x8000) + b"\0" * 16 + mac + b"\0" * 10 + b"\0" * 192 + \
        b"\x63\x82\x53\x63" + opts
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.encode())
    s.bind(("0.0.0.0", 68))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            s.sendto(packet, ("255.255.255.255", 67))
            s.settimeout(1.0)
            try:
                data, _ = s.recvfrom(2048)
            except socket.timeout:
                continue
            if len(data) < 240 or data[0] != 2 or struct.unpack_from("!I", data, 4)[0] != xid:
                continue
            siaddr = socket.inet_ntoa(data[20:24])
            name = data[108:236].split(b"\0")[0].decode()
            i = 240
            while i < len(data) and data[i] != 255:  # option 67 overrides the file field
                if data[i] == 0:
                    i += 1
                    continue
                if data[i] == 67:
                    name = data[i + 2:i + 2 + data[i + 1]].split(b"\0")[0].decode()
                i += 2 + data[i + 1]
            return name, siaddr
    finally:
        s.close()
    raise Failure("no DHCP offer on %s within %d s" % (iface, timeout))


def tftp_read(server, name, timeout=20):
    """The file `name` from a TFTP server (RFC 1350, octet mode)."""
    import socket
    import struct
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(b"\0\1" + name.encode() + b"\0octet\0", (server, 69))
        data, block = b"", 1
        while True:
            packet, peer = s.recvfrom(4 + 512)
            op, number = struct.unpack_from("!HH", packet)
            if op == 5:
                raise Failure("TFTP error for %s: %r" % (name, packet[4:]))
            if op != 3 or number != block & 0xFFFF:
                continue
            data += packet[4:]
            s.sendto(struct.pack("!HH", 4, number), peer)
            if len(packet) - 4 < 512:
                return data
            block += 1
    finally:
        s.close()


def pxe_serve(e):
    """fox pxe serve on a bridge in a namespace this test makes (its only network)."""
    ns = "foxtest-%s-pxe" % e.tag
    client = "foxtest-%s-client" % e.tag
    run = None
    try:
        for n in (ns, client):
            subprocess.run(["ip", "netns", "add", n], check=True)
        inside = ["ip", "netns", "exec", ns]
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "link", "add", "br0", "type", "bridge"],
                    ["ip", "addr", "add", "10.78.0.1/24", "dev", "br0"], ["ip", "link", "set", "br0", "up"],
                    ["ip", "tuntap", "add", "dev", "tap1", "mode", "tap"], ["ip", "link", "set", "tap1", "master", "br0", "up"],
                    ["ip", "tuntap", "add", "dev", "tap2", "mode", "tap"], ["ip", "link", "set", "tap2", "master", "br0", "up"],
                    ["ip", "tuntap", "add", "dev", "tap3", "mode", "tap"], ["ip", "link", "set", "tap3", "master", "br0", "up"],
                    ["ip", "link", "add", "vb", "type", "veth", "peer", "name", "vc", "netns", client],
                    ["ip", "link", "set", "vb", "master", "br0", "up"]):
            subprocess.run(inside + cmd, check=True)
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", "10.78.0.99/24", "dev", "vc"],
                    ["ip", "link", "set", "vc", "up"]):
            subprocess.run(["ip", "netns", "exec", client] + cmd, check=True)
        hosts = os.path.join(e.dir, "hosts")
        with open(hosts, "w") as f:
            # The README's rack: two machines with fixed addresses running the ring between them.
            key, peers = "00112233445566778899aabbccddeeff", "fox.peers=0@10.78.0.20,1@10.78.0.21"
            f.write("# MAC  IP  boot arguments\n")
            for k in (0, 1):
                f.write("52:54:00:78:00:%02x  10.78.0.2%d  fox.app=ring fox.node=%d fox.ip=10.78.0.2%d/24 fox.key=%s %s "
                        "-- laps=20\n" % (k + 1, k, k, k, key, peers))
        run = subprocess.Popen(inside + [e.fox, "pxe", "serve", "--interface", "br0", "--range", "10.78.0.50,10.78.0.60",
                                         "--hosts", hosts], env=e.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        lines = []
        threading.Thread(target=lambda: [lines.append(line.rstrip("\n")) for line in run.stdout], daemon=True).start()
        wait_for(lambda: any("Ctrl-C stops" in line for line in lines) or run.poll() is not None, 30, "pxe serve to start")
        expect("\n".join(lines), r"fox pxe serve: DHCP 10\.78\.0\.50-10\.78\.0\.60 and TFTP on br0 \(10\.78\.0\.1\), iPXE "
                                 r"booting fox\.elf fox\.app=hello; legacy PXE ROMs chain-load undionly\.kpxe; 2 fixed hosts",
               "pxe serve")
        # A legacy PXE ROM (no iPXE user class) gets undionly.kpxe, and can read it; iPXE gets boot.ipxe.
        legacy = subprocess.run(["ip", "netns", "exec", client, sys.executable, "-c",
                                 "import sys; sys.path.insert(0, %r); import frontend_test as t; "
                                 "print(t.dhcp_discover('vc', bytes.fromhex('525400780063'))); "
                                 "print(t.dhcp_discover('vc', bytes.fromhex('525400780063'), 'iPXE')); "
                                 "d = t.tftp_read('10.78.0.1', 'undionly.kpxe'); "
                                 "print('undionly.kpxe', len(d), d == open('/usr/lib/ipxe/undionly.kpxe', 'rb').read())"
                                 % os.path.dirname(os.path.abspath(__file__))],
                                capture_output=True, text=True, timeout=90)
        print(legacy.stdout + legacy.stderr)
        expect(legacy.stdout, r"^\('undionly\.kpxe', '10\.78\.0\.1'\)$", "a legacy PXE client's offer")
        expect(legacy.stdout, r"^\('boot\.ipxe', '10\.78\.0\.1'\)$", "an iPXE client's offer")
        expect(legacy.stdout, r"^undionly\.kpxe [1-9]\d+ True$", "undionly.kpxe by TFTP")
        consoles = []
        qemus = []
        for k in (1, 2, 3):
            console = os.path.join(e.dir, "machine%d.log" % k)
            consoles.append(console)
            qemus.append(subprocess.Popen(inside + [
                "qemu-system-x86_64", "-accel", "tcg", "-m", "128", "-display", "none", "-nodefaults", "-no-reboot",
                "-serial", "file:%s" % console, "-name", "fox:t%s-pxe:node%d" % (e.tag, k),
                "-netdev", "tap,id=n0,ifname=tap%d,script=no,downscript=no" % k,
                "-device", "virtio-net-pci,netdev=n0,mac=52:54:00:78:00:%02x" % k, "-boot", "n",
                "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"], env=e.env))
        for q in qemus:
            try:
                rc = q.wait(timeout=180)
            except subprocess.TimeoutExpired:
                q.kill()
                rc = q.wait()
            if rc != 1:  # isa-debug-exit: 2 * 0 + 1
                raise Failure("a PXE-booted machine's QEMU exited %d, expected 1 (status 0)" % rc)
        with open(consoles[0], errors="replace") as f:
            text = f.read()
        expect(text, r"\| iPXE [^|]+\| boot args: fox\.app=ring fox\.node=0 fox\.ip=10\.78\.0\.20/24 ", "machine 1 (--hosts)")
        expect(text, r"ring: 20 laps around 2 nodes", "machine 1")
        expect(text, r"ring: every node said goodbye: job done", "machine 1")
        with open(consoles[1], errors="replace") as f:
            expect(f.read(), r"ring: node 1: done, saying goodbye", "machine 2 (--hosts)")
        with open(consoles[2], errors="replace") as f:
            text = f.read()
        expect(text, r"\| iPXE [^|]+\| boot args: fox\.app=hello$", "machine 3 (the range)")
        expect(text, r"^Hello from fox", "machine 3")
        run.send_signal(signal.SIGINT)
        if run.wait(timeout=20) != 0:
            raise Failure("pxe serve exited %d after Ctrl-C, expected 0" % run.returncode)
        time.sleep(0.3)
        out = "\n".join(lines)
        print("\n".join("  | " + line for line in lines))
        expect(out, r"DHCPACK\(br0\) 10\.78\.0\.20 52:54:00:78:00:01", "pxe serve")
        expect(out, r"DHCPACK\(br0\) 10\.78\.0\.5\d 52:54:00:78:00:03", "pxe serve")
        expect(out, r"^fox pxe serve: stopped$", "pxe serve")
        left = [line for line in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
                if line.startswith("dnsmasq") and "fox-pxe-" in line]
        if left:
            raise Failure("dnsmasq left after Ctrl-C: %s" % left)
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        for n in (ns, client):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
    e.expect_nothing_left("after pxe serve")


SCENARIOS = {f.__name__: f for f in (lifecycle, kill_during_job, supervisor_killed, run_interrupted, two_clusters, consecutive_jobs,
                                     run_temporary, wrong_key, build_id, iso, bad_arguments, control_backpressure,
                                     memcached_job, memcached_gateway, run32, scale64, hosted, add_places, memcached_grow,
                                     app_input, bridge, pxe, pxe_serve)}
ROOT_SCENARIOS = ("bridge", "pxe", "pxe_serve")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--fox", default=FOX)
    args = ap.parse_args()
    if not os.access(args.fox, os.X_OK):
        print("frontend_test: %s is not built (make)" % args.fox)
        return 2
    if args.scenario in ROOT_SCENARIOS and os.geteuid() != 0:
        print("frontend_test: SKIP: %s needs root (network namespaces)" % args.scenario)
        return 77
    e = Env(args.fox)
    failure = None
    try:
        SCENARIOS[args.scenario](e)
    except (Failure, subprocess.TimeoutExpired) as err:
        failure = str(err)
    finally:
        left = e.clean()
    if left and failure is None:
        failure = "had to remove: %s" % "; ".join(left)
    if failure:
        print("FAILED: %s" % failure)
        return 1
    print("frontend %s: ok" % args.scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
