#!/usr/bin/env python3
"""Linux guest UDP round trip: the baseline of the am_rtt benchmark.

    linux_udp_rtt.py [--count N] [--size BYTES] [--mem MIB] [--accel auto|kvm|tcg]

Boots two minimal Linux guests (boot/linux_guest.sh: Debian's kernel, busybox,
tests/bench/udp_pingpong.c built static with the host's gcc) with the QEMU
options of a fox node (1 vCPU, the same -m and -cpu, virtio-net-pci, the
accelerator qemu_run.bench_accel picks) on a bridge in a network namespace of
their own, addressed like cluster nodes 0 and 1 (boot/cluster.py: 10.77.0.10
and 10.77.0.11, MACs 52:54:00:77:00:00 and :01). Guest 1 times N ping-pongs
of SIZE-byte UDP datagrams (one outstanding at a time) against an echo server
on guest 0. Prints

    am_rtt.linux_udp_rtt_us MEDIAN us
    am_rtt.linux_udp_rtt_mean_us MEAN us

The fox side (a later am_rtt.py) imports measure_linux_udp_rtt() to measure
the baseline in the same run. Needs root (network namespace, taps).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading

BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot")
sys.path.insert(0, BOOT)
import cluster  # noqa: E402
import qemu_run  # noqa: E402

ROOT = qemu_run.ROOT
SOURCE = os.path.join(ROOT, "tests", "bench", "udp_pingpong.c")
GUEST_DIR = os.path.join(ROOT, "build", "linux-guest-udp")
PORT = 7777
RESULT = re.compile(r"udp_pingpong: (\d+) round trips of (\d+) bytes: median ([\d.]+) us mean ([\d.]+) us "
                    r"min ([\d.]+) us max ([\d.]+) us lost (\d+)")


def build_guest(guest_dir=GUEST_DIR):
    """Builds udp_pingpong (static) and the guest kernel + initramfs; returns (vmlinuz, initramfs)."""
    os.makedirs(guest_dir, exist_ok=True)
    program = os.path.join(guest_dir, "udp_pingpong")
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Werror", "-o", program, SOURCE], check=True)
    r = subprocess.run([os.path.join(BOOT, "linux_guest.sh"), guest_dir, program], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("boot/linux_guest.sh failed:\n" + r.stdout + r.stderr)
    return os.path.join(guest_dir, "vmlinuz"), os.path.join(guest_dir, "initramfs.gz")


def guest_dir_of(kernel):
    return os.path.dirname(os.path.abspath(kernel))


def guest_command(kernel, initrd, i, run, ns, accel, mem, extra=()):
    """QEMU for guest I: a fox node's options, with Linux and its initramfs instead of a fox image
    (`extra`: more of boot/linux_guest.sh's kernel arguments)."""
    append = " ".join(["console=ttyS0 quiet panic=-1 fox.ip=%s/%d" % (cluster.node_ip(i), cluster.PREFIX)] +
                      list(extra) + ["fox.run=" + run])
    cmd = qemu_run.qemu_command(kernel, append, 1, mem, accel, None, False, initrd=initrd)
    cmd += ["-netdev", ns.netdev(i), "-device", "virtio-net-pci,netdev=n0,mac=%s" % cluster.node_mac(i)]
    return ["setpriv", "--pdeathsig", "KILL", "--"] + ns.exec_prefix() + cmd


def measure_linux_udp_rtt(count=1000, size=64, accel=None, mem=128, timeout=300):
    """Times COUNT UDP round trips of SIZE bytes between two Linux guests.

    Blocks for the whole run (~10 s under TCG plus the round trips). Needs
    root. accel=None asks qemu_run.bench_accel. Returns a dict: median_us,
    mean_us, min_us, max_us, lost, count, size, accel. Raises RuntimeError
    when a guest fails (with its console). Everything it creates (namespace
    fox-bench-<pid>, taps, QEMUs) is gone when it returns or raises.
    """
    if os.geteuid() != 0:
        raise RuntimeError("needs root to create a network namespace")
    kernel, initrd = build_guest()
    if accel is None:
        accel = qemu_run.bench_accel("am_rtt", "; the Linux guest runs under TCG")
    cluster.remove_stale_namespaces()
    results = {}
    with cluster.Namespace(2, name="fox-bench-%d" % os.getpid()) as ns:
        runs = {0: "/bin/udp_pingpong,server,%d,%d" % (PORT, int(timeout)),
                1: "/bin/udp_pingpong,client,%s,%d,%d,%d" % (cluster.node_ip(0), PORT, count, size)}

        pidfile = os.path.join(guest_dir_of(kernel), "server.pid")

        def boot(i):
            cmd = guest_command(kernel, initrd, i, runs[i], ns, accel, mem)
            if i == 0:
                cmd += ["-pidfile", pidfile]
            results[i] = qemu_run.run_qemu(cmd, timeout, echo=False)

        threads = [threading.Thread(target=boot, args=(i,)) for i in (0, 1)]
        try:
            for t in threads:
                t.start()
            threads[1].join()
            # The server stops on the client's "bye"; if that never comes
            # (the client failed), it is stopped after a grace period.
            threads[0].join(timeout=15)
        finally:
            if threads[0].is_alive():
                try:
                    with open(pidfile) as f:
                        os.kill(int(f.read().strip()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            for t in threads:
                t.join()
    client = results[1]["text"]
    m = RESULT.search(client)
    done = re.search(r"linux-guest: exit (\d+)", client)
    if m is None or done is None or done.group(1) != "0":
        raise RuntimeError("the Linux guests failed:\n--- server ---\n%s\n--- client ---\n%s" % (
            results[0]["text"][-1500:], client[-1500:]))
    return {"median_us": float(m.group(3)), "mean_us": float(m.group(4)), "min_us": float(m.group(5)),
            "max_us": float(m.group(6)), "lost": int(m.group(7)), "count": int(m.group(1)),
            "size": int(m.group(2)), "accel": accel}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--mem", type=int, default=128, help="MiB, as a cluster node (boot/cluster.py --mem)")
    ap.add_argument("--accel", default="auto", choices=["auto", "kvm", "tcg"])
    args = ap.parse_args()
    if not 1 <= args.count <= 1000000 or not 4 <= args.size <= 1400 or args.mem < 64:
        ap.error("--count from 1 to 1000000, --size from 4 to 1400, --mem at least 64")
    if os.geteuid() != 0:
        sys.exit("bench linux_udp_rtt: needs root to create a network namespace")
    accel = None
    if args.accel != "auto":
        accel, why = qemu_run.choose_accel(args.accel)
        if accel is None:
            sys.exit("bench linux_udp_rtt: %s" % why)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # cleanups run
    try:
        r = measure_linux_udp_rtt(args.count, args.size, accel, args.mem)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        sys.exit("bench linux_udp_rtt: %s" % e)
    print("# linux_udp_rtt: %d round trips of %d-byte UDP datagrams between two Linux guests (accel %s), "
          "min %.1f us, max %.1f us, lost %d" % (r["count"], r["size"], r["accel"], r["min_us"], r["max_us"],
                                                 r["lost"]))
    print("am_rtt.linux_udp_rtt_us %.1f us" % r["median_us"])
    print("am_rtt.linux_udp_rtt_mean_us %.1f us" % r["mean_us"])


if __name__ == "__main__":
    main()
