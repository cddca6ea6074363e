#!/usr/bin/env python3
"""make bench B=dht_cores: the Dht's per-core representatives (dht.h,
"Shards") on one hosted node (build/host/tests/bench/dht_cores), with 1 core
and with 2, each core running CLIENTS events that get (then set) random keys
of the node's own Dht one request at a time. Prints

    dht_cores.<N>core_gets_per_s, dht_cores.<N>core_sets_per_s
    dht_cores.scaling_ratio     2-core gets/s over 1-core gets/s

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


def run(cores, a):
    port = free_port()
    env = dict(os.environ, FOX_CORES=str(cores),
               FOX_ARGS="fox.node=0 fox.amport=%d fox.peers=0@127.0.0.1:%d" % (port, port))
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
    for cores in (1, 2):
        g, s, serving = run(cores, a)
        gets[cores] = g
        print("dht_cores.%dcore_gets_per_s %d ops/s (served on %d cores)" % (cores, g, serving))
        print("dht_cores.%dcore_sets_per_s %d ops/s" % (cores, s))
    print("dht_cores.scaling_ratio %.2f x (2 cores over 1, gets; %d clients per core; host cores: %d)" %
          (gets[2] / gets[1], a.clients, os.cpu_count()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
