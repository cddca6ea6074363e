#!/usr/bin/env python3
"""The supervisor's metrics (boot/fox/metrics.py) in Prometheus' text format, without a cluster.

    metrics_format.py

A snapshot as the supervisor makes it (three nodes: one idle, one running a job with a status
report, one dead in that job with its last report) becomes exposition text, which must
  - pass `promtool check metrics` (Prometheus' own linter, Debian's prometheus package), when it
    is installed (make deps installs it);
  - parse line by line as the format says: each family's HELP and TYPE once, before its samples,
    its samples together; valid names; counters ending in _total; no series twice;
  - carry the values of the snapshot: nodes by state, the dead node down, the report's counters
    with their node, place, host and job labels (the transport's, membership's, drops by reason,
    per core, the Dht's gauges and counters, the APGAS runtime's);
  - leave out what a node's report may hold that is not a known counter: unknown keys, keys with
    characters outside [a-z0-9_.], values that are not whole non-negative numbers.
Prints each check; exits 1 naming the first that fails.
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "boot"))
from fox import metrics  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frontend_test import Failure, check  # noqa: E402

REPORT = {
    "node": 2, "platform": "native", "cores": 2, "uptime_ms": 5000,
    "core0.events": 100, "core1.events": 7, "core1.sleeps": 3, "core0.wakeup_ipis": 1,
    "am.messages_sent": 42, "am.messages_delivered": 40, "am.frames_retransmitted": 2, "am.peers_dead": 1,
    "am.fd.suspicions": 3, "am.fd.declared_dead": 1, "am.dropped.duplicate": 5, "am.dropped.bad_mac": 1,
    "nic.rx_packets": 77, "large.sent": 4,
    "dht.epoch": 3, "dht.items": 1234, "dht.served_gets": 99, "dht.rebuilt": 12,
    "apgas.finishes": 10, "apgas.spawned_local": 20, "apgas.spawned_remote": 30, "apgas.done": 50,
    "apgas.dead_places": 1,
    # what must be left out
    "am.weird-key": 1, 'dht.x"y': 2, "apgas.done.extra": 3, "unknown.thing": 4, "core.x": 5, "corex.events": 6,
    "am.negative": -1, "am.text": "many", "am.flag": True, "am.fraction": 1.5, "": 7, "am.": 8,
}

SNAPSHOT = {
    "ok": True, "name": "t1-metrics", "pid": 1234, "host": "hostA", "accel": "tcg", "network": "switch",
    "boot": "kernel", "queued": 1,
    "counters": {"deaths": 1, "boots": 4, "jobs_started": 2, "jobs_ended": 1},
    "job": {"id": 2, "app": "pi", "nodes": [2, 3], "endpoints": [], "seconds": 12.5},
    "nodes": [
        {"node": 1, "host": "hostA", "state": "idle", "cores": 2, "uptime": 30.0, "job": None, "place": None,
         "boots": 1, "switch": {"rx": 10, "tx": 11, "dropped": 0, "to_place0": 0, "from_place0": 0,
                                "no_route": 0, "refused": 0, "send_errors": 0}, "am": None, "am_age": None},
        {"node": 2, "host": "hostB", "state": "running", "cores": 2, "uptime": 12.0, "job": 2, "place": 2,
         "boots": 2, "switch": {"rx": 500, "tx": 400, "dropped": 1, "to_place0": 30, "from_place0": 31,
                                "no_route": 0, "refused": 0, "send_errors": 0}, "am": REPORT, "am_age": 0.7},
        {"node": 3, "host": "hostA", "state": "dead", "cores": 2, "uptime": None, "job": 2, "place": 3,
         "boots": 1, "switch": {"rx": 5, "tx": 5, "dropped": 0, "to_place0": 0, "from_place0": 0,
                                "no_route": 0, "refused": 0, "send_errors": 0}, "am": REPORT, "am_age": 9.0},
    ],
}

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? '
                    r'(-?[0-9.e+]+|NaN|[+-]Inf)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def parse(text):
    """{(name, frozenset(labels)): value} and {family: type}, checking the format as it goes."""
    samples, types, helps, done = {}, {}, set(), set()
    current = None
    for number, line in enumerate(text.split("\n"), 1):
        if not line:
            if number != len(text.split("\n")):
                raise Failure("line %d is empty" % number)
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            family = line.split(" ")[2]
            if not NAME.match(family):
                raise Failure("line %d: bad family name %r" % (number, family))
            if family in done:
                raise Failure("line %d: family %s again after other families" % (number, family))
            if line.startswith("# HELP "):
                if family in helps:
                    raise Failure("line %d: a second HELP for %s" % (number, family))
                helps.add(family)
            else:
                if family in types:
                    raise Failure("line %d: a second TYPE for %s" % (number, family))
                types[family] = line.split(" ")[3]
                if types[family] not in ("counter", "gauge"):
                    raise Failure("line %d: type %s" % (number, types[family]))
                if types[family] == "counter" and not family.endswith("_total"):
                    raise Failure("line %d: counter %s does not end in _total" % (number, family))
            if current is not None and current != family:
                done.add(current)
            current = family
            continue
        m = SAMPLE.match(line)
        if not m:
            raise Failure("line %d does not parse as a sample: %r" % (number, line))
        name = m.group(1)
        if name != current or name not in types:
            raise Failure("line %d: sample of %s outside its family's block" % (number, name))
        labels = frozenset(LABEL.findall(m.group(3) or ""))
        key = (name, labels)
        if key in samples:
            raise Failure("line %d: series %s twice" % (number, line))
        samples[key] = float(m.group(4))
    return samples, types


def value(samples, name, **labels):
    want = {(k, str(v)) for k, v in labels.items()}
    found = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    if len(found) != 1:
        raise Failure("%s%s: %d series, wanted 1" % (name, labels, len(found)))
    return found[0]


def main():
    text = metrics.exposition(SNAPSHOT)
    try:
        promtool = shutil.which("promtool")
        if promtool:
            p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                               timeout=60)
            print(p.stdout + p.stderr, end="")
            check(p.returncode == 0, "promtool check metrics accepts the exposition")
        else:
            print("note: promtool is not installed (make deps): its check skipped")
        samples, types = parse(text)
        check(len(samples) > 60, "the exposition parses: %d series in %d families" % (len(samples), len(types)))
        check(value(samples, "fox_nodes", state="idle") == 1 and value(samples, "fox_nodes", state="dead") == 1
              and value(samples, "fox_nodes", state="running") == 1 and value(samples, "fox_nodes", state="booting")
              == 0, "nodes by state")
        check(value(samples, "fox_node_up", node=3) == 0 and value(samples, "fox_node_up", node=1) == 1,
              "the dead node is down, the others up")
        check(value(samples, "fox_node_state", node=2, state="running", host="hostB") == 1,
              "a node's state and host")
        check(value(samples, "fox_node_deaths_total") == 1 and value(samples, "fox_jobs_started_total") == 2
              and value(samples, "fox_jobs_queued") == 1, "the supervisor's counts")
        check(value(samples, "fox_job_info", fox_job=2, app="pi") == 1 and
              value(samples, "fox_job_places", fox_job=2) == 2, "the running job (label fox_job, not job)")
        labels = dict(node=2, place=2, host="hostB", fox_job=2)
        check(value(samples, "fox_am_messages_sent_total", **labels) == 42, "a transport counter with its labels")
        check(value(samples, "fox_membership_suspicions_total", node=2) == 3 and
              value(samples, "fox_membership_declared_dead_total", node=2) == 1, "membership's suspicions and deaths")
        check(value(samples, "fox_am_dropped_total", node=2, reason="duplicate") == 5, "drops by reason")
        check(value(samples, "fox_core_events_total", node=2, core=1) == 7, "per core counters")
        check(types.get("fox_dht_items") == "gauge" and value(samples, "fox_dht_items", node=2) == 1234 and
              value(samples, "fox_dht_rebuilt_total", node=2) == 12, "the Dht's items (gauge) and rebuilds")
        check(value(samples, "fox_apgas_done_total", node=2) == 50 and
              value(samples, "fox_apgas_finishes_total", node=2) == 10 and
              types.get("fox_apgas_dead_places") == "gauge", "the APGAS runtime's counts")
        check(value(samples, "fox_switch_rx_total", node=1) == 10, "the switch's counters for an idle node")
        check(value(samples, "fox_node_report_age_seconds", node=2) == 0.7, "the report's age")
        check(not any(ls and dict(ls).get("node") in ("1", "3") and n.startswith(("fox_am_", "fox_dht_"))
                      for n, ls in samples), "no report series for nodes outside a job, nor for a dead node's last")
        bad = [n for n, _ in samples if any(s in n for s in ("weird", "unknown", "negative", "text", "flag",
                                                            "fraction", "corex", "extra"))]
        check(not bad and "x\\\"y" not in text, "unknown, malformed and non-integer report keys left out (%s)" % bad)
        empty = metrics.exposition(dict(SNAPSHOT, nodes=[], job=None, counters={}))
        s2, _ = parse(empty)
        check(value(s2, "fox_job_running") == 0 and value(s2, "fox_nodes", state="idle") == 0,
              "a cluster with no nodes and no job")
    except Failure as e:
        print("FAILED: %s" % e)
        return 1
    print("metrics_format: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
