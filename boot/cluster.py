#!/usr/bin/env python3
"""A local cluster of fox nodes on a private network, for cluster tests.

    cluster.py --nodes N [--image IMG] [--append "ARGS"] [--smp S] [--mem M]
               [--netem "loss 5% duplicate 5% delay 1ms 1ms"] [--timeout T]
               [--expect-node I:REGEX]... [--expect-exit S] [--host-command CMD]

Creates a network namespace of its own (fox-<pid>) holding a bridge
(10.77.0.1/24) and one tap per node, boots the nodes inside it with QEMU
(virtio-net on tap I, MAC 52:54:00:77:00:I, boot args plus fox.node=I),
optionally runs a host command inside the namespace too, waits for every
node to exit, checks expectations, and removes the namespace (with its
bridge and taps) and every process it started, whatever happens. Needs root
(CAP_NET_ADMIN). Touches no address outside the namespace.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_run  # noqa: E402

BRIDGE_IP = "10.77.0.1/24"


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def netem_available():
    """Whether this kernel has the netem qdisc (some sandboxes lack sch_netem)."""
    probe = "fox-probe-%d" % os.getpid()
    sh("ip", "netns", "add", probe)
    try:
        ns = ["ip", "netns", "exec", probe]
        sh(*ns, "ip", "link", "add", "d0", "type", "dummy", check=False)
        return sh(*ns, "tc", "qdisc", "add", "dev", "d0", "root", "netem", "loss", "1%", check=False).returncode == 0
    finally:
        sh("ip", "netns", "del", probe, check=False)


class Namespace:
    def __init__(self, nodes, netem):
        self.name = "fox-%d" % os.getpid()
        self.nodes = nodes
        self.netem = netem

    def __enter__(self):
        sh("ip", "netns", "add", self.name)
        try:
            ns = ["ip", "netns", "exec", self.name]
            sh(*ns, "ip", "link", "set", "lo", "up")
            sh(*ns, "ip", "link", "add", "foxbr0", "type", "bridge")
            sh(*ns, "ip", "addr", "add", BRIDGE_IP, "dev", "foxbr0")
            sh(*ns, "ip", "link", "set", "foxbr0", "up")
            for i in range(self.nodes):
                tap = "foxtap%d" % i
                sh(*ns, "ip", "tuntap", "add", "dev", tap, "mode", "tap")
                sh(*ns, "ip", "link", "set", tap, "master", "foxbr0")
                sh(*ns, "ip", "link", "set", tap, "up")
                if self.netem:  # impairment on the bridge's way to each node
                    sh(*ns, "tc", "qdisc", "add", "dev", tap, "root", "netem", *self.netem.split())
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def exec_prefix(self):
        return ["ip", "netns", "exec", self.name]

    def __exit__(self, *exc):
        # Deleting the namespace deletes the bridge and taps inside it.
        sh("ip", "netns", "del", self.name, check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--image", default=os.path.join(qemu_run.ROOT, "build", "native", "vmtest.elf"))
    ap.add_argument("--append", default="")
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--mem", type=int, default=128)
    ap.add_argument("--accel", default="auto", choices=["auto", "kvm", "tcg"])
    ap.add_argument("--netem", default="")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--expect-exit", type=int, default=0)
    ap.add_argument("--expect-node", action="append", default=[], help="I:REGEX on node I's console")
    ap.add_argument("--host-command", help="run inside the namespace while the nodes run")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("cluster: SKIP: needs root to create a network namespace")
        return 77
    if args.netem and not netem_available():
        print("cluster: SKIP: tc netem is not available in this kernel (no sch_netem)")
        return 77
    accel, why = qemu_run.choose_accel(args.accel)
    if accel is None:
        print("cluster: SKIP: %s" % why)
        return 77
    procs, results = [], {}
    with Namespace(args.nodes, args.netem) as ns:
        try:
            host = None
            if args.host_command:
                host = subprocess.Popen(ns.exec_prefix() + ["sh", "-c", args.host_command], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
                procs.append(host)

            def boot(i):
                cmd = qemu_run.qemu_command(args.image, ("fox.node=%d " % i) + args.append, args.smp, args.mem,
                                            accel, None, False)
                cmd += ["-netdev", "tap,id=n0,ifname=foxtap%d,script=no,downscript=no" % i,
                        "-device", "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:%02x" % i]
                results[i] = qemu_run.run_qemu(ns.exec_prefix() + cmd, args.timeout, echo=False)

            threads = [threading.Thread(target=boot, args=(i,)) for i in range(args.nodes)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            host_out = ""
            if host is not None:
                try:
                    host_out = host.communicate(timeout=5)[0]
                except subprocess.TimeoutExpired:
                    os.killpg(host.pid, signal.SIGKILL)
                    host_out = host.communicate()[0]
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
    failures = []
    for i in range(args.nodes):
        r = results.get(i)
        if r is None or r["reason"] or r["status"] != args.expect_exit:
            failures.append("node %d: status %s%s" % (i, r and r["status"], r and r["reason"] and ", " + r["reason"] or ""))
    for spec in args.expect_node:
        i, _, regex = spec.partition(":")
        r = results.get(int(i))
        if r is None or not re.search(regex, r["text"], re.M):
            failures.append("node %s's console lacks /%s/" % (i, regex))
    for i in range(args.nodes):
        print("---- node %d ----\n%s" % (i, results.get(i, {}).get("text", "")))
    if args.host_command:
        print("---- host ----\n" + host_out)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("cluster: %d nodes ok (accel %s)" % (args.nodes, accel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
