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
    dht_cores.sets_scaling_ratio  the same for sets
    dht_cores.shards_ratio      2 cores, shards on both, over shards on one (gets)

A get is served on the calling core whatever core its key's shard lies on
(the other core's shard is read in place: ebb/dht/local.cc), and so is a set
(a node alone: every key has one owner; ebb/dht/local.cc writes the other
core's shard under its lock). Each client lets the core's other events run every 16 requests. The machine's cores bound it: the ratio means something only with
at least 2 idle host cores.

Then the same program as a compute node (build/native/bench_dht_cores.elf)
under QEMU (KVM, else TCG), 1 or 2 kernel cores, on QEMU's restricted user
network, with the same figures as dht_cores_native.*: the node's own heap,
idle and wake-up paths instead of Linux threads, glibc's malloc and
eventfds. --hosted or --native runs one of the two.
"""
import argparse
import os
import re
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(ROOT, "build", "host", "tests", "bench", "dht_cores")
NATIVE_IMAGE = os.path.join(ROOT, "build", "native", "bench_dht_cores.elf")
sys.path.insert(0, os.path.join(ROOT, "boot"))
import qemu_run  # noqa: E402
LINE = re.compile(r"dht_cores: (\d+) cores: (\d+) gets/s, (\d+) sets/s, requests served on (\d+) cores")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_native(cores, serving, a, accel):
    """The same program as a compute node under QEMU: `cores` kernel cores
    (each takes events: clients and shards), on QEMU's restricted user
    network (the transport needs one; every request stays on the node)."""
    append = "fox.kcores=%d fox.dht_cores=%d fox.node=0 fox.peers=0@10.0.2.15 -- %g %d %d" % (
        cores, serving, a.seconds, a.clients, a.keys)
    cmd = qemu_run.qemu_command(NATIVE_IMAGE, append, cores, 512, accel, None, False, net="user")
    r = qemu_run.run_qemu(cmd, 300, echo=False)
    m = LINE.search(r["text"])
    if r["status"] != 0 or not m:
        sys.exit("bench dht_cores --native: %d cores: %s\n%s" % (cores, r["reason"] or "failed", r["text"][-2000:]))
    return int(m.group(2)), int(m.group(3)), int(m.group(4))


def run_hosted(cores, serving, a):
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
    ap.add_argument("--native", action="store_true", help="only the compute node (dht_cores_native.*)")
    ap.add_argument("--hosted", action="store_true", help="only the hosted node (dht_cores.*)")
    a = ap.parse_args()
    kinds = [k for k, only in (("hosted", a.hosted), ("native", a.native)) if only] or ["hosted", "native"]
    for kind in kinds:
        measure(kind == "native", a)
    return 0


def measure(native, a):
    if native:
        name = "dht_cores_native"
        if not os.path.exists(NATIVE_IMAGE):
            sys.exit("bench dht_cores: %s missing; run make first" % NATIVE_IMAGE)
        accel = qemu_run.bench_accel(name)
        run = lambda cores, serving: run_native(cores, serving, a, accel)  # noqa: E731
    else:
        name = "dht_cores"
        if not os.access(PROGRAM, os.X_OK):
            sys.exit("bench dht_cores: %s missing; run make first" % PROGRAM)
        run = lambda cores, serving: run_hosted(cores, serving, a)  # noqa: E731
    gets, sets = {}, {}
    for case, cores, serving in (("1core", 1, 1), ("2cores_1serving", 2, 1), ("2cores_2serving", 2, 2)):
        g, s, served_on = run(cores, serving)
        gets[case] = g
        sets[case] = s
        print("%s.%s_gets_per_s %d ops/s (served on %d cores)" % (name, case, g, served_on), flush=True)
        print("%s.%s_sets_per_s %d ops/s" % (name, case, s), flush=True)
    print("%s.scaling_ratio %.2f x (2 cores, shards on both, over 1 core, gets; %d clients per core; "
          "host cores: %d)" % (name, gets["2cores_2serving"] / gets["1core"], a.clients, os.cpu_count()))
    print("%s.shards_ratio %.2f x (2 cores: shards on both over shards on one, gets)" %
          (name, gets["2cores_2serving"] / gets["2cores_1serving"]), flush=True)
    print("%s.sets_scaling_ratio %.2f x (2 cores, shards on both, over 1 core, sets: another core's shard "
          "written in place under its lock)" % (name, sets["2cores_2serving"] / sets["1core"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
