#!/usr/bin/env python3
"""make bench B=dht: the memcached protocol served by fox against memcached
in a Linux guest, in one run, under the same QEMU options (1 vCPU, the same
-m and -cpu, virtio-net on a bridge in a namespace of its own, the
accelerator qemu_run.bench_accel picks).

  (a) one fox node (the memcached app over the Dht, a ring of one node)
  (b) memcached 1.6 from Debian (-t 1) inside the Linux guest of
      boot/linux_guest.sh
  (c) three fox nodes with r = 2, the load spread over all three
  (d) one fox node of 2 cores, its connections served on one core (the
      memcached app's default) and then spread over both (cores=0)

The load is tests/bench/mc_load.c (built here with gcc; memcslap prints no
latencies) on the host side of the namespace: CONNS connections, one request
outstanding each, a set phase then a get phase of random keys, in the text
protocol and then (one node and Linux) in the binary one. Prints, per system,
`dht.<system>_<set|get>_ops_per_s` and `..._p99_us` (text; `dht.<system>_binary_...`
binary), then

    dht.throughput_vs_linux_ratio  fox get ops/s over Linux's
    dht.p99_vs_linux_ratio         fox get p99 over Linux's (lower is better)
    dht.binary_throughput_vs_linux_ratio, dht.binary_p99_vs_linux_ratio
                                   the same in the binary protocol
    dht.replication_cost_ratio     3 nodes r=2 set ops/s over one node's
    dht.connection_cores_ratio     (d): get ops/s spread over 2 cores over
                                   served on one
    dht.rebuild_s_per_100k_keys    a node of 3 killed (r = 2): seconds from
                                   the kill until every key has 2 copies
                                   again (tests/memcached/dht_cluster.py)

Needs root (network namespaces). Everything it creates is removed when it
returns or fails.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import am_cluster  # noqa: E402
import linux_udp_rtt  # noqa: E402

ROOT = am_cluster.ROOT
qemu_run = am_cluster.qemu_run
cluster = linux_udp_rtt.cluster
IMAGE = os.path.join(ROOT, "build", "native", "memcached.elf")
LOAD = os.path.join(ROOT, "build", "bench", "mc_load")
GUEST_DIR = os.path.join(ROOT, "build", "linux-guest-memcached")
RESULT = re.compile(r"mc_load: (text|binary) (set|get) (\d+) ops in ([\d.]+) s: (\d+) ops/s p50 (\d+) us p99 (\d+) us "
                    r"errors (\d+) misses (\d+)")


def build_load():
    os.makedirs(os.path.dirname(LOAD), exist_ok=True)
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-pthread", "-o", LOAD, os.path.join(HERE, "mc_load.c")],
                   check=True)


def parse(text, what, protocols=("text",)):
    """{protocol: {phase: figures}} from mc_load's lines."""
    figures = {}
    for m in RESULT.finditer(text):
        if int(m.group(8)) != 0:
            raise RuntimeError("%s: %s errors in the %s %s phase" % (what, m.group(8), m.group(1), m.group(2)))
        figures.setdefault(m.group(1), {})[m.group(2)] = {"ops": int(m.group(5)), "p50": int(m.group(6)),
                                                          "p99": int(m.group(7)), "misses": int(m.group(9))}
    if set(figures) != set(protocols) or any(set(f) != {"set", "get"} for f in figures.values()):
        raise RuntimeError("%s: no load figures for %s in:\n%s" % (what, "/".join(protocols), text[-4000:]))
    return figures


def load_command(ips, a, protocol="text"):
    return "%s %s 11211 %d %g %d %d %s" % (LOAD, ",".join(ips), a.conns, a.seconds, a.keys, a.value, protocol)


# The load starts once every node says it serves. (It used to start on the
# last node's word, and a node that came up later than that one refused the
# first connections: an RST from a node with no listener yet.)
SERVING = "all:memcached: node \\d+ serving"


def fox(nodes, a, accel, protocols=("text",), smp=1, serving=1):
    """`nodes` nodes of `smp` cores (kernel cores all), connections served on
    `serving` of them (0: all)."""
    ips = [cluster.node_ip(i) for i in range(nodes)]
    load = "; ".join(load_command(ips, a, p) for p in protocols)
    append = "fox.kcores=%d -- cores=%d" % (smp, serving)
    out = am_cluster.run_cluster(nodes, append, accel, timeout=600, image=IMAGE, extra=[
        "--smp", str(smp), "--peers", "--until-host", "--host-after", SERVING, "--host-cmd", load])
    return parse(out, "fox, %d nodes of %d cores" % (nodes, smp), protocols)


def linux(a, accel):
    memcached = "/usr/bin/memcached"
    if not os.path.exists(memcached):
        raise RuntimeError("memcached is not installed (make deps)")
    os.makedirs(GUEST_DIR, exist_ok=True)
    r = subprocess.run([os.path.join(ROOT, "boot", "linux_guest.sh"), GUEST_DIR, memcached], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("boot/linux_guest.sh failed:\n" + r.stdout + r.stderr)
    kernel, initrd = os.path.join(GUEST_DIR, "vmlinuz"), os.path.join(GUEST_DIR, "initramfs.gz")
    cluster.remove_stale_namespaces()
    run = "/bin/memcached,-u,root,-l,0.0.0.0,-p,11211,-U,0,-t,1,-m,64,-c,1024"
    result = {}
    with cluster.Namespace(1, name="fox-bench-%d" % os.getpid()) as ns:
        cmd = linux_udp_rtt.guest_command(kernel, initrd, 0, run, ns, accel, a.mem)
        pidfile = os.path.join(GUEST_DIR, "guest.pid")
        cmd += ["-pidfile", pidfile]
        guest = threading.Thread(target=lambda: result.update(qemu_run.run_qemu(cmd, 600, echo=False)))
        guest.start()
        try:
            ip = cluster.node_ip(0)
            probe = ns.exec_prefix() + [sys.executable, "-c",
                                        "import socket; socket.create_connection(('%s', 11211), timeout=1).close()" % ip]
            deadline = time.monotonic() + 180
            while subprocess.run(probe, capture_output=True).returncode != 0:
                if time.monotonic() > deadline or not guest.is_alive():
                    raise RuntimeError("memcached in the Linux guest never listened")
                time.sleep(1)
            loads = [subprocess.run(ns.exec_prefix() + load_command([ip], a, p).split(), capture_output=True,
                                    text=True, timeout=a.seconds * 2 + 120) for p in ("text", "binary")]
        finally:
            try:
                with open(pidfile) as f:
                    os.kill(int(f.read().strip()), 9)
            except (OSError, ValueError):
                pass
            guest.join()
    return parse("".join(r.stdout + r.stderr for r in loads), "Linux guest memcached", ("text", "binary"))


def rebuild(a, accel):
    ips = [cluster.node_ip(i) for i in range(3)]
    cmd = "python3 tests/memcached/dht_cluster.py --quick --nodes %s --victim 2 --keys %d" % (",".join(ips), a.rebuild_keys)
    out = am_cluster.run_cluster(3, "", accel, timeout=900, image=IMAGE, extra=[
        "--peers", "--until-host", "--killed", "2", "--host-after", SERVING, "--host-cmd", cmd])
    m = am_cluster.find(r"dht_cluster: redundancy after the death: \d+ copies on \d+ survivors, 0 missing copies, "
                        r"([\d.]+) s after the kill", out, "the rebuild")
    return float(m.group(1)) * 100000 / a.rebuild_keys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--keys", type=int, default=10000)
    ap.add_argument("--value", type=int, default=64, help="value bytes")
    ap.add_argument("--mem", type=int, default=128, help="MiB per guest, as a cluster node")
    ap.add_argument("--rebuild-keys", type=int, default=100000)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("# skipped: bench dht needs root (network namespaces)")
        return 0
    accel = qemu_run.bench_accel("dht", "; the Linux guest runs under TCG")
    build_load()
    both = ("text", "binary")
    figures = {"fox_1node": fox(1, a, accel, both), "linux_memcached": linux(a, accel),
               "fox_3nodes_r2": fox(3, a, accel),
               "fox_2cores_1serving": fox(1, a, accel, smp=2, serving=1),
               "fox_2cores": fox(1, a, accel, smp=2, serving=0)}
    for system, by_protocol in figures.items():
        for protocol, f in by_protocol.items():
            name = system if protocol == "text" else system + "_binary"
            for phase in ("set", "get"):
                print("dht.%s_%s_ops_per_s %d ops/s" % (name, phase, f[phase]["ops"]))
                print("dht.%s_%s_p99_us %d us (p50 %d us)" % (name, phase, f[phase]["p99"], f[phase]["p50"]))
    for protocol in both:
        fox1, lin = figures["fox_1node"][protocol], figures["linux_memcached"][protocol]
        prefix = "" if protocol == "text" else "binary_"
        print("dht.%sthroughput_vs_linux_ratio %.2f x (get; set %.2f x; %s protocol, %d connections, %d-byte values, "
              "accel %s)" % (prefix, fox1["get"]["ops"] / lin["get"]["ops"], fox1["set"]["ops"] / lin["set"]["ops"],
                             protocol, a.conns, a.value, accel))
        print("dht.%sp99_vs_linux_ratio %.2f x (get; set %.2f x; below 1 is better)" %
              (prefix, fox1["get"]["p99"] / max(lin["get"]["p99"], 1), fox1["set"]["p99"] / max(lin["set"]["p99"], 1)))
    fox1, fox3 = figures["fox_1node"]["text"], figures["fox_3nodes_r2"]["text"]
    print("dht.replication_cost_ratio %.2f x (3 nodes r = 2 over 1 node, set; get %.2f x)" %
          (fox3["set"]["ops"] / fox1["set"]["ops"], fox3["get"]["ops"] / fox1["get"]["ops"]))
    one, two = figures["fox_2cores_1serving"]["text"], figures["fox_2cores"]["text"]
    print("dht.connection_cores_ratio %.2f x (a node of 2 cores serving its connections on both over on one, get; "
          "set %.2f x; lwIP runs on core 0 either way)" % (two["get"]["ops"] / one["get"]["ops"],
                                                           two["set"]["ops"] / one["set"]["ops"]))
    print("dht.rebuild_s_per_100k_keys %.1f s" % rebuild(a, accel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
