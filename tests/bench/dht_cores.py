#!/usr/bin/env python3
"""make bench B=dht_cores: the Dht's per-core representatives (dht.h,
"Shards") on one hosted node (build/host/tests/bench/dht_cores): with 1 core,
with 2 cores and its shards on one of them (fox.dht_cores=1: one serving
core), and with 2 cores and its shards on both; each core runs CLIENTS
events that get (then set) random keys of the node's own Dht one request at
a time. Prints

    dht_cores.<case>_gets_per_s, dht_cores.<case>_sets_per_s
        case: 1core, 2cores_1serving, 2cores_2serving
    dht_cores.scaling_ratio     2 cores, shards on both, over 1 core (gets)
    dht_cores.shards_ratio      2 cores, shards on both, over shards on one (gets)

A request whose key's shard lies on the calling core is served inline; one
whose shard lies on the other core costs two cross-core events (there, and
the answer back): the figures say what that costs against what the second
core adds. The machine's cores bound it: the ratio means something only with
at least 2 idle host cores.
"""
import argparse
import os
import re
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(ROOT, "build", "host", "tests", "bench", "dht_cores")
LINE = re.compile(r"dht_cores: (\d+) cores: (\d+) gets/s, (\d+) sets/s, requests served on (\d+) cores")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cores, serving, a):
    port = free_port()
    env = dict(os.environ, FOX_CORES=str(cores),
               FOX_ARGS="fox.node=0 fox.amport=%d fox.peers=0@127.0.0.1:%d fox.dht_cores=%d" % (port, port, serving))
    p = subprocess.run([PROGRAM, str(a.seconds), str(a.clients), str(a.keys)], env=env, capture_output=True,
                       text=True, timeout=120)
    m = LINE.search(p.stdout)
    if p.returncode != 0 or not m:
        sys.exit("bench dht_cores: %d cores: exit %d\n%s%s" % (cores, p.returncode, p.stdout, p.stderr))
    return int(m.group(2)), int(m.group(3)), int(m.group(4))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--clients", type=int, default=16, help="client events per core")
    ap.add_argument("--keys", type=int, default=10000)
    a = ap.parse_args()
    if not os.access(PROGRAM, os.X_OK):
        sys.exit("bench dht_cores: %s missing; run make first" % PROGRAM)
    gets = {}
    for case, cores, serving in (("1core", 1, 1), ("2cores_1serving", 2, 1), ("2cores_2serving", 2, 2)):
        g, s, served_on = run(cores, serving, a)
        gets[case] = g
        print("dht_cores.%s_gets_per_s %d ops/s (served on %d cores)" % (case, g, served_on))
        print("dht_cores.%s_sets_per_s %d ops/s" % (case, s))
    print("dht_cores.scaling_ratio %.2f x (2 cores, shards on both, over 1 core, gets; %d clients per core; "
          "host cores: %d)" % (gets["2cores_2serving"] / gets["1core"], a.clients, os.cpu_count()))
    print("dht_cores.shards_ratio %.2f x (2 cores: shards on both over shards on one, gets)" %
          (gets["2cores_2serving"] / gets["2cores_1serving"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
