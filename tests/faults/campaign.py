#!/usr/bin/env python3
"""A fault campaign (issue 43; `make faults`, and a bounded one in `make test`): applications run
through faults injected at random moments, each run judged against the failure-free answer, and a
table of what survived.

  campaign.py [--runs N] [--seed S] [--apps pi,uts,kmeans,gups,bfs,mcphoton,memcached]
              [--kinds kill,pause,pause_long,rogue,kill_checkpoint,kill_restore]
              [--deadline S] [--only APP:KIND:RUN] [--pairs APP:KIND,...] [--out DIR] [--chart]

Every run is `fox run APP --hosted` (every place a Linux process here; the frontend tells the
places of a death it sees, as users run it) with one fault drawn from the campaign's seed and the
run's number, at a time drawn between 10% and 70% of the failure-free run's, printed with the run so
that `--only APP:KIND:RUN` (with the same --seed, on a machine as fast) replays it:
  kill        place K (never place 0) SIGKILLed T ms after the places started
  pause       place K stopped (SIGSTOP) for less than the suspicion timeout (fox.suspect_ms,
              1000 ms hosted), then continued: it must stay alive, and the job right
  pause_long  place K stopped for 3 s, longer than the suspicion timeout, then continued: it is
              declared dead (and fenced when it resumes), and the job ends as after a kill
  rogue       frames sent to every place's AM port from 127.0.0.1 for about a second: sealed with
              another key, of another job, from a forged node id, cut short, too long, and noise;
              the job must end right, nobody declared dead, and the places must say that they
              dropped frames of a bad MAC, naming the sender's address
  kill_checkpoint  (apps on the iterative executor: kmeans) place K killed as it writes the
              checkpoint after N steps (fox run --kill-at K:checkpoint:N)
  kill_restore     place K killed in step S, then place J in the restore that follows
              (--kill-at K:step:S,J:restore:1): a death during recovery
A run is correct when place 0 prints the app's failure-free answer (taken from a run without
faults, once per app), a documented error when it prints the error the app documents for a failure
it does not survive (gups, bfs: not resilient), wrong when it prints another answer or nothing (or,
memcached, when an acknowledged write is not read back whole: mc_writes.py), and a
hang when the job has not ended by the deadline (the campaign then stops it).

The table: per app and kind, runs, faults injected (the fault happened before the job ended),
correct, documented errors, wrong, hangs, and the downtime per failure where the app says when it
was whole again (uts: its restore's end; kmeans: its catch plus rebuild, remake and restore): median
and maximum seconds from the fault (a kill, or a long pause's start) to then, detection included;
then one line for scripts:
  faults: R runs, F faults, C correct, E documented errors, W wrong, H hangs, L writes lost
(L: acknowledged writes lost: memcached's, mc_writes.py; a run that lost any is wrong).
The table is also written to DIR/table.md (with the seed and the command that replays it) and,
every run with its fault and verdict, to DIR/campaign.json (DIR: --out, default build/faults);
with --chart (make faults), DIR/campaign.png draws the verdicts and downtimes per app and kind
(tests/faults/campaign_chart.py, with matplotlib in the benchmarks' virtualenv, installed from
PyPI the first time).
Exit status 1 if any run was wrong or hung.
"""
import argparse
import importlib.util
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
# The memcached workload's stock client is Debian's python3-pymemcache (make deps), which a Python
# of its own (CI's pyenv) lacks: the campaign then runs under Debian's.
if importlib.util.find_spec("pymemcache") is None and sys.executable != "/usr/bin/python3" and \
        os.path.exists("/usr/bin/python3"):
    os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
sys.path.insert(0, os.path.join(ROOT, "boot"))
from fox import siphash  # noqa: E402  (the AM frame's MAC)
from mc_writes import Writes  # noqa: E402
FOX = os.path.join(ROOT, "build", "bin", "fox")
PIDS = re.compile(r"fox run: (\d+) hosted places of \S+ on 127\.0\.0\.1 \(job \d+\): pids (.*)")

# app: places, spares, arguments, the answer's regex (place 0's line), the documented error's regex
# (None: the app survives every fault but place 0's). A fault comes between 10% and 70% of the
# failure-free run's time (from its places' start to its end). RECOVERED: how an app tells when it
# was whole again after a failure (the realtime clock, which hosted places share with this script).
APPS = {
    "pi": (3, 0, ["samples=2000000000", "chunks=256"], r"place0\| pi: (\S+ from \d+ hits of \d+ samples)", None),
    "uts": (3, 0, ["tree=t1", "depth=11", "resilient=on", "epoch_ms=200", "check=off", "trace=on"],
            r"place0\| uts: t1 tree \(geometric, depth 11, b 4, seed 19\): (\d+) nodes", None),
    "kmeans": (4, 1, ["points=1000000", "k=8", "iterations=40", "every=5", "seed=1", "trace=1"],
               r"place0\| kmeans: (cost [0-9.]+ after \d+ steps)", None),
    "gups": (3, 0, ["log2=22"], r"place0\| gups: verification: (0 errors in \d+ words)",
             r"place0\| gups: a place died: .*: the table is lost"),
    "bfs": (3, 0, ["scale=18", "roots=32"], r"place0\| bfs: (32 roots): harmonic mean .*: every tree valid",
            r"place0\| bfs: a place died: .*: the graph is lost"),
    "mcphoton": (3, 0, ["photons=2000000", "tasks=64"], r"place0\| mcphoton: \d+ photons: .*(tally checksum \w+)",
                 None),
    # The memcached app over the replicated Dht (r = 2) for 12 s, written to through every place's
    # gateway by stock clients for the first MC_WRITE_S (mc_writes.py), read back through place 0.
    "memcached": (3, 0, ["seconds=12"], r"place0\| memcached: (12 s are over): the job ends", None),
}
MC_WRITE_S = 8  # then every acknowledged write is read back, before the job's 12 s are over
# A death's end, in seconds of the realtime clock, from a run's output: uts, the restore's end
# (glb.h's trace); kmeans, the executor's catch plus its rebuild, remake and restore (not the new
# spare's wait, which runs while the job goes on).
def recovered_at(app, out):
    if app == "uts":
        m = re.search(r"glb: restored from epoch \d+ after \d+ places lost at unix ([0-9.]+)", out)
        return float(m.group(1)) if m else None
    if app == "kmeans":
        caught = re.search(r"kmeans: the last failure caught at unix ([0-9.]+)", out)
        parts = re.search(r"restores \(rebuild ([0-9.]+) s, remake ([0-9.]+) s, restore ([0-9.]+) s", out)
        return float(caught.group(1)) + sum(float(x) for x in parts.groups()) if caught and parts else None
    return None


KINDS = ("kill", "pause", "pause_long", "rogue", "kill_checkpoint", "kill_restore")
# Kills at chosen moments of the iterative executor (fox.kill_at through fox run --kill-at), for the
# apps that run on it: their steps and how often they checkpoint (fox.kill_at's checkpoint:N is the
# checkpoint taken after N steps).
EXECUTOR = {"kmeans": dict(every=5, steps=40)}
ROGUE_FRAMES = 600  # per place, over about a second
SHORT_PAUSE_MS = 300  # under the hosted suspicion timeout (1000 ms)
LONG_PAUSE_MS = 3000


class Run:
    """One `fox run`, its output read as it comes, faults injected into its places."""

    def __init__(self, app, deadline, kill_at=None):
        places, spares, args, _, _ = APPS[app]
        cmd = [FOX, "run", app, "--hosted", "--places", str(places), "--timeout", str(deadline)]
        if kill_at:
            cmd += ["--kill-at", kill_at]
        if spares:
            cmd += ["--spares", str(spares)]
        self.proc = subprocess.Popen(cmd + ["--"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.lines, self.pids, self.started, self.ended_at = [], {}, None, None
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            m = PIDS.search(line)
            if m:
                self.pids = {int(i): int(p) for i, p in (e.split(":") for e in m.group(2).split())}
                self.started = time.monotonic()
                self.ready.set()
        self.ready.set()

    def signal(self, place, sig):
        """True if the place was still there to receive it."""
        try:
            os.kill(self.pids[place], sig)
            return True
        except (KeyError, ProcessLookupError):
            return False

    def ended(self):
        return self.proc.poll() is not None

    def seconds(self):
        """From the places' start to the job's end."""
        return (self.ended_at or time.monotonic()) - (self.started or time.monotonic())

    def wait(self, deadline):
        """True if the job ended by `deadline` (seconds); else it is stopped, and False."""
        try:
            self.proc.wait(timeout=deadline)
            self.ended_at = time.monotonic()
        except subprocess.TimeoutExpired:
            self.stop()
            return False
        self.reader.join(10)
        return True

    def stop(self):
        """Stops the job and every place it started, whatever state they are in: a place paused is
        continued (fox run, alive, has not reaped it: its pid is its own), then fox run is asked to
        stop its places (SIGTERM), and killed with them if it does not. Nothing once fox run ended
        (it stopped its places itself; their pids may be another process's by now)."""
        if self.proc.poll() is None:
            for pid in self.pids.values():
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                for pid in self.pids.values():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(5)

    def output(self):
        return "\n".join(self.lines)


def sleep_until(run, at):
    while not run.ended() and time.monotonic() < at:
        time.sleep(0.005)
    return not run.ended()


def place_port(pid):
    """A hosted place's AM port (fox.amport in its FOX_ARGS), or None."""
    try:
        env = open("/proc/%d/environ" % pid, "rb").read().split(b"\0")
    except OSError:
        return None
    for var in env:
        if var.startswith(b"FOX_ARGS="):
            m = re.search(rb"fox\.amport=(\d+)", var)
            return int(m.group(1)) if m else None
    return None


def rogue_frames(rng, job, destination):
    """Frames the job must refuse: sealed with another key, of another job, from a node id nobody
    has, cut short, too long, and noise."""
    other = (rng.getrandbits(64), rng.getrandbits(64))
    record = [(0x1234, 1, bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64))))]
    sealed = siphash.seal_frame(other, job, 1, destination, record)
    return [
        sealed,                                                      # another job's key
        siphash.seal_frame(other, job + 1, 1, destination, record),  # another job
        siphash.seal_frame(other, job, 9999, destination, record),   # a forged source
        sealed[:rng.randrange(1, len(sealed))],                      # truncated
        sealed + bytes(rng.getrandbits(8) for _ in range(1500)),     # oversized
        bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 1600))),  # noise
    ]


def rogue(run, rng):
    """ROGUE_FRAMES frames at every place's port, from a socket of this script's (127.0.0.1)."""
    job = int(PIDS.search(run.output()).group(0).split("(job ")[1].split(")")[0])
    ports = {i: place_port(pid) for i, pid in run.pids.items()}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for n in range(ROGUE_FRAMES):
            for i, port in ports.items():
                if port is None or run.ended():
                    continue
                frames = rogue_frames(rng, job, i)
                try:
                    sock.sendto(frames[n % len(frames)], ("127.0.0.1", port))
                except OSError:
                    pass
            time.sleep(1.0 / ROGUE_FRAMES)
    return any(p is not None for p in ports.values())


def inject(run, kind, place, at_ms, rng=None):
    """The fault; its time on the realtime clock if it happened while the job ran, else None."""
    if not run.ready.wait(60) or run.started is None:
        return None
    if not sleep_until(run, run.started + at_ms / 1000.0):
        return None
    at = time.time()
    if kind == "rogue":
        return at if rogue(run, rng) else None
    if kind == "kill":
        return at if run.signal(place, signal.SIGKILL) else None
    if not run.signal(place, signal.SIGSTOP):
        return None
    time.sleep((SHORT_PAUSE_MS if kind == "pause" else LONG_PAUSE_MS) / 1000.0)
    run.signal(place, signal.SIGCONT)
    return at


def one(app, kind, k, seed, deadline, expected, base_s):
    """Run k of (app, kind): its fault drawn from (seed, app, kind, k) and the failure-free run's time;
    returns (verdict, fault, injected, output)."""
    places, _, _, answer, documented = APPS[app]
    rng = random.Random("%d:%s:%s:%d" % (seed, app, kind, k))
    place = rng.randrange(1, places)
    at_ms = int(rng.uniform(0.1, 0.7) * base_s * 1000)
    fault = "%s place %d at %d ms" % (kind, place, at_ms)
    kill_at = None
    if kind == "rogue":
        fault = "rogue frames at every place from %d ms" % at_ms
    elif kind == "kill_checkpoint":  # an active place (a spare writes no checkpoint)
        place = rng.randrange(1, places - APPS[app][1])
        e = EXECUTOR[app]
        kill_at = "%d:checkpoint:%d" % (place, e["every"] * rng.randrange(1, e["steps"] // e["every"]))
        fault = "place killed as it checkpoints (--kill-at %s)" % kill_at
    elif kind == "kill_restore":  # a kill, then another place killed in the restore that follows
        place = rng.randrange(1, places - APPS[app][1])
        second = rng.choice([p for p in range(1, places) if p != place])
        kill_at = "%d:step:%d,%d:restore:1" % (place, rng.randrange(2, EXECUTOR[app]["steps"] - 2), second)
        fault = "a place killed in a step, another in the restore (--kill-at %s)" % kill_at
    run = Run(app, deadline, kill_at)
    writes = Writes(run, places, MC_WRITE_S) if app == "memcached" else None
    try:
        if kill_at:  # the fault is the places' own: it happened if a place says it died
            finished = run.wait(deadline + 30)
            died = re.search(r"apgas: place \d+ dies in \w+ \d+ \(fox.kill_at\) at unix ([0-9.]+)", run.output())
            fault_at = float(died.group(1)) if died else None
        else:
            fault_at = inject(run, kind, place, at_ms, rng)
            finished = run.wait(deadline + 30)
        if writes:
            writes.join(60)
    finally:
        run.stop()  # nothing of it left behind, even when this script is interrupted
    injected = fault_at is not None
    out = run.output()
    back = recovered_at(app, out)
    downtime = back - fault_at if injected and back is not None and kind != "pause" else None
    m = re.search(answer, out, re.M)
    if not finished or run.proc.returncode == 124:  # 124: fox run stopped it at its --timeout
        verdict = "hang"
    elif m and (expected is None or m.group(1) == expected):
        verdict = "correct"
    elif documented and re.search(documented, out, re.M):
        verdict = "documented"
    else:
        verdict = "wrong"
    if kind == "pause" and verdict == "correct" and re.search(r"place %d (dies|died)|declared dead" % place, out):
        verdict = "wrong"  # a pause under the suspicion timeout must not cost the place its life
    if kind == "rogue" and verdict == "correct" and injected:
        # Refused and said so, naming the sender: at least the frames of another key.
        if not re.search(r"am: dropping frames from 127\.0\.0\.1:\d+: MAC check failed", out):
            verdict = "wrong"
        if re.search(r"place \d+ (dies|died)|declared dead", out):
            verdict = "wrong"  # rogue frames must not cost anyone its life
    lost = 0
    if writes:
        lost = writes.lost
        fault += "; %d writes acknowledged, %d read back, %d lost%s" % (
            len(writes.acked), writes.checked, writes.lost, ": " + writes.error if writes.error else "")
        if verdict == "correct" and (writes.error or writes.lost or writes.checked == 0):
            verdict = "wrong"
    if downtime is not None:
        fault += ", whole again %.3f s later" % downtime
    return verdict, fault if injected else fault + " (after the job ended)", injected, out, downtime, lost


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20, help="runs per app and kind")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--deadline", type=int, default=120, help="seconds a run may take before it is a hang")
    ap.add_argument("--only", help="APP:KIND:RUN, one run to replay (with the campaign's --seed)")
    ap.add_argument("--pairs", help="APP:KIND,... : only these (instead of every app with every kind)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "faults"), help="where the table files go")
    ap.add_argument("--chart", action="store_true", help="also draw DIR/campaign.png (matplotlib)")
    a = ap.parse_args()
    if not os.path.exists(FOX):
        sys.exit("faults: %s is missing: run make first" % os.path.relpath(FOX))
    apps = a.apps.split(",")
    kinds = a.kinds.split(",")
    pairs = None
    if a.pairs:
        if any(p.count(":") != 1 for p in a.pairs.split(",")):
            sys.exit("faults: --pairs %r: expected APP:KIND,..." % a.pairs)
        pairs = [tuple(p.split(":")) for p in a.pairs.split(",")]
        apps = list(dict.fromkeys(app for app, _ in pairs))
        kinds = list(dict.fromkeys(kind for _, kind in pairs))
    only = None
    if a.only:
        if not re.fullmatch(r"[a-z_]+:[a-z_]+:\d+", a.only):
            sys.exit("faults: --only %r: expected APP:KIND:RUN" % a.only)
        app, kind, k = a.only.split(":")
        only, apps, kinds = (app, kind, int(k)), [app], [kind]
    for name in apps + kinds:
        if name not in APPS and name not in KINDS:
            sys.exit("faults: unknown app or kind '%s' (apps: %s; kinds: %s)" % (name, ", ".join(APPS), ", ".join(KINDS)))
    print("faults: seed %d (replay one run with --seed %d --only APP:KIND:RUN)" % (a.seed, a.seed), flush=True)
    table, bad = [], 0
    totals = dict(runs=0, faults=0, correct=0, documented=0, wrong=0, hang=0, lost=0)
    for app in apps:
        # The failure-free answer: a run without faults.
        base = Run(app, a.deadline)
        writes = Writes(base, APPS[app][0], MC_WRITE_S) if app == "memcached" else None
        try:
            base.wait(a.deadline + 30)
            if writes:
                writes.join(60)
        finally:
            base.stop()
        m = re.search(APPS[app][3], base.output(), re.M)
        if not m:
            print("faults: %s: the run without faults printed no answer:\n%s" % (app, base.output()[-2000:]))
            return 1
        if writes and (writes.error or writes.lost or writes.checked == 0):
            print("faults: %s: the run without faults: %d writes acknowledged, %d read back, %d lost%s" % (
                app, len(writes.acked), writes.checked, writes.lost, ": " + writes.error if writes.error else ""))
            return 1
        expected, base_s = m.group(1), base.seconds()
        print("faults: %s: failure-free answer: %s (%.2f s)" % (app, expected, base_s), flush=True)
        for kind in kinds:
            if kind.startswith("kill_") and app not in EXECUTOR:
                continue  # no executor's moments to choose
            if pairs is not None and (app, kind) not in pairs:
                continue
            row = dict(runs=0, faults=0, correct=0, documented=0, wrong=0, hang=0, lost=0, downtimes=[], each=[])
            for k in range(a.runs) if only is None else [only[2]]:
                verdict, fault, injected, out, downtime, lost = one(app, kind, k, a.seed, a.deadline, expected,
                                                                    base_s)
                row["lost"] += lost
                if downtime is not None:
                    row["downtimes"].append(downtime)
                row["runs"] += 1
                row["faults"] += 1 if injected else 0
                row[verdict] += 1
                print("faults: %s %s run %d: %s: %s" % (app, kind, k, fault, verdict), flush=True)
                row["each"].append(dict(run=k, fault=fault, injected=bool(injected), verdict=verdict,
                                        downtime=downtime, lost=lost))
                if verdict in ("wrong", "hang"):
                    bad += 1
                    print("faults: %s %s run %d's output (replay: --seed %d --only %s:%s:%d):\n%s" %
                          (app, kind, k, a.seed, app, kind, k, out[-3000:]), flush=True)
            table.append((app, kind, row))
            for key in totals:
                totals[key] += row[key]
    print("\n%-9s %-11s %5s %6s %8s %10s %6s %6s %5s  %s" % ("app", "fault", "runs", "faults", "correct",
                                                               "documented", "wrong", "hangs", "lost",
                                                               "downtime s (median, max)"))
    for app, kind, r in table:
        d = r["downtimes"]
        down = "%.3f, %.3f" % (statistics.median(d), max(d)) if d else "-"
        print("%-9s %-11s %5d %6d %8d %10d %6d %6d %5s  %s" % (
            app, kind, r["runs"], r["faults"], r["correct"], r["documented"], r["wrong"], r["hang"],
            r["lost"] if app == "memcached" else "-", down))
    summary = "faults: %d runs, %d faults, %d correct, %d documented errors, %d wrong, %d hangs, %d writes lost" % (
        totals["runs"], totals["faults"], totals["correct"], totals["documented"], totals["wrong"], totals["hang"],
        totals["lost"])
    print(summary)
    write_table(a, table, summary)
    return 1 if bad else 0


def write_table(a, table, summary):
    """DIR/table.md and DIR/campaign.json (and with --chart DIR/campaign.png): what the campaign saw."""
    os.makedirs(a.out, exist_ok=True)
    replay = "python3 tests/faults/campaign.py --seed %d --runs %d%s" % (
        a.seed, a.runs, " --pairs " + ",".join("%s:%s" % (app, kind) for app, kind, _ in table) if table else "")
    lines = ["# Fault campaign", "", "%s, seed %d, %d runs per app and fault; replay: `%s`" % (
        time.strftime("%Y-%m-%d %H:%M"), a.seed, a.runs, replay), "",
        "| app | fault | runs | faults | correct | documented errors | wrong | hangs | writes lost | "
        "downtime s (median, max) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for app, kind, r in table:
        d = [x for x in r["downtimes"]]
        lines.append("| %s | %s | %d | %d | %d | %d | %d | %d | %s | %s |" % (
            app, kind, r["runs"], r["faults"], r["correct"], r["documented"], r["wrong"], r["hang"],
            r["lost"] if app == "memcached" else "-",
            "%.3f, %.3f" % (statistics.median(d), max(d)) if d else "-"))
    lines += ["", summary, ""]
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write("\n".join(lines))
    path = os.path.join(a.out, "campaign.json")
    with open(path, "w") as f:
        json.dump(dict(seed=a.seed, runs=a.runs, summary=summary,
                       rows=[dict(app=app, fault=kind, **{k: v for k, v in r.items()}) for app, kind, r in table]),
                  f, indent=1)
    print("faults: the table in %s and %s" % (os.path.relpath(os.path.join(a.out, "table.md")), os.path.relpath(path)))
    if a.chart:
        sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
        import apps  # the benchmarks' virtualenv with matplotlib (apps.draw_charts)
        apps.run_chart("faults", os.path.join(HERE, "campaign_chart.py"), path, a.out)


if __name__ == "__main__":
    sys.exit(main())
