#!/usr/bin/env python3
"""The unikernel's own gain on the iterative apps (issue 39; make bench B=apps
runs it after the peers): each app on fox QEMU nodes against the same app's
hosted program in Linux guests, under the same QEMU options (1 vCPU, the
same -m and -cpu, virtio-net-pci on a bridge in a network namespace of its
own, the accelerator qemu_run.bench_accel picks), the sides alternated over
ROUNDS rounds.

  apps_guest.py [--apps kmeans,linreg,pagerank,lulesh] [--nodes 2] [--rounds 3]

  fox      boot/cluster.py --nodes N --peers --image build/native/APP.elf:
           place I is node I (10.77.0.(10+I)), the app's SPMD executor
  Linux    N guests of boot/linux_guest.sh (Debian's kernel, busybox), guest
           I at node I's address and MAC, running the app's hosted program
           with FOX_ARGS "fox.node=I fox.peers=0@10.77.0.10,..." (the places
           talk UDP through the guests' kernels, as hosted places on
           separate hosts do). The program is the app built as the node
           images are (clang, -O3, the x86-64 baseline: build/bench/guest-host,
           FOX_HOSTED_APP_MARCH=x86-64), so that only the platform differs.

Both sides run the same arguments (small problems: everything is emulated)
with a checkpoint every 10 steps, and print their executor's figures; the
ratio is of the steps' time (with checkpoints), Linux's over fox's (above 1:
fox nodes are faster). Prints per app

    apps.APP_native_steps_s       MEDIAN s (MIN..MAX)
    apps.APP_linux_guest_steps_s  MEDIAN s (MIN..MAX)
    apps.APP_native_vs_linux_guest_ratio  X x

and fails if the two sides' answers differ. Needs root (namespace, taps).
Everything it creates is removed when it returns or fails.
"""
import argparse
import base64
import os
import re
import statistics
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "boot"))
import cluster  # noqa: E402
import linux_udp_rtt  # noqa: E402
import qemu_run  # noqa: E402

BUILD = os.path.join(ROOT, "build", "bench", "guest-host")
GUEST_DIR = os.path.join(ROOT, "build", "bench", "linux-guest-apps")
MEM = 256  # MiB a VM, both sides
TIMEOUT = 900
NODES, ROUNDS = 2, 3
# Per app: its arguments (both sides) and the line that is its answer.
APPS = {
    "kmeans": (["points=40000", "dim=4", "k=8", "iterations=20", "seed=1", "executor=spmd"],
               r"kmeans: (cost [0-9.]+ after \d+ steps)"),
    "linreg": (["samples=20000", "features=16", "iterations=20", "seed=1", "executor=spmd"],
               r"linreg: (mean squared error [0-9.]+ after \d+ steps)"),
    "pagerank": (["vertices=20000", "iterations=20", "seed=1", "executor=spmd"],
                 r"pagerank: (rank checksum \w+ after \d+ steps)"),
    "lulesh": (["size=5", "domains=2", "iterations=20"],
               r"lulesh: (iteration count \d+, final origin energy \S+ \(\S+\))"),
}
STATS = re.compile(r": ([0-9.]+) s; (\d+) steps \(([0-9.]+) s\), (\d+) checkpoints \(([0-9.]+) s")


def build_programs(apps):
    """The apps' hosted programs for the x86-64 baseline; returns their paths."""
    if not os.path.exists(os.path.join(BUILD, "build.ninja")):
        env = dict(os.environ, CC="clang", CXX="clang++")
        subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DFOX_HOSTED_APP_MARCH=x86-64"], env=env,
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", BUILD] + list(apps), check=True, stdout=subprocess.DEVNULL)
    return [os.path.join(BUILD, "apps", app, app) for app in apps]


def build_guest(programs):
    r = subprocess.run([os.path.join(ROOT, "boot", "linux_guest.sh"), GUEST_DIR] + programs, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("boot/linux_guest.sh failed:\n" + r.stdout + r.stderr)
    return os.path.join(GUEST_DIR, "vmlinuz"), os.path.join(GUEST_DIR, "initramfs.gz")


def peers(nodes):
    return "fox.peers=" + ",".join("%d@%s" % (i, cluster.node_ip(i)) for i in range(nodes))


def figures(app, text, side):
    """(steps with checkpoints, answer) from place 0's output."""
    stats, answer = STATS.search(text), re.search(APPS[app][1], text)
    if not stats or not answer:
        raise RuntimeError("%s on %s printed no figures:\n%s" % (app, side, text[-4000:]))
    return float(stats.group(3)) + float(stats.group(5)), answer.group(1)


def run_fox(app, nodes, accel):
    args = APPS[app][0] + ["every=10", "check=0"]
    cmd = [sys.executable, os.path.join(ROOT, "boot", "cluster.py"), "--nodes", str(nodes), "--peers",
           "--image", os.path.join(ROOT, "build", "native", app + ".elf"), "--mem", str(MEM), "--accel", accel,
           "--timeout", str(TIMEOUT), "--append=-- " + " ".join(args)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT + 120)
    if r.returncode != 0:
        raise RuntimeError("%s on fox nodes failed (%d):\n%s%s" % (app, r.returncode, r.stdout[-4000:], r.stderr))
    return figures(app, r.stdout, "fox nodes")


def run_linux(app, nodes, accel, kernel, initrd):
    args = APPS[app][0] + ["every=10", "check=0"]
    results = {}
    cluster.remove_stale_namespaces()
    with cluster.Namespace(nodes, name="fox-bench-%d" % os.getpid()) as ns:
        def boot(i):
            fox_args = base64.b64encode(("fox.node=%d %s" % (i, peers(nodes))).encode()).decode()
            cmd = linux_udp_rtt.guest_command(kernel, initrd, i, ",".join(["/bin/" + app] + args), ns, accel, MEM,
                                              extra=["fox.args64=" + fox_args])
            results[i] = qemu_run.run_qemu(cmd, TIMEOUT, echo=False)

        threads = [threading.Thread(target=boot, args=(i,)) for i in range(nodes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    text = results[0]["text"]
    done = re.search(r"linux-guest: exit (\d+)", text)
    if done is None or done.group(1) != "0":
        raise RuntimeError("%s in Linux guests failed:\n%s" % (app, "\n".join(
            "--- guest %d ---\n%s" % (i, results[i]["text"][-2000:]) for i in sorted(results))))
    return figures(app, text, "Linux guests")


def spread(values):
    return "%.4f s (%.4f..%.4f)" % (statistics.median(values), min(values), max(values))


def measure(apps, nodes, rounds, accel):
    """Per app, the medians' ratio; prints each side's figures."""
    kernel, initrd = build_guest(build_programs(apps))
    ratios = {}
    for app in apps:
        fox, linux, answers = [], [], set()
        for r in range(rounds):
            for side in (("fox", "linux") if r % 2 == 0 else ("linux", "fox")):
                if side == "fox":
                    steps, answer = run_fox(app, nodes, accel)
                    fox.append(steps)
                else:
                    steps, answer = run_linux(app, nodes, accel, kernel, initrd)
                    linux.append(steps)
                answers.add(answer)
        if len(answers) != 1:
            raise RuntimeError("%s: fox nodes and Linux guests answered differently: %s" % (app, sorted(answers)))
        ratios[app] = statistics.median(linux) / statistics.median(fox)
        print("apps.%s_native_steps_s %s" % (app, spread(fox)))
        print("apps.%s_linux_guest_steps_s %s" % (app, spread(linux)))
        print("apps.%s_native_vs_linux_guest_ratio %.3f x (%s, %d places, %d rounds; %s)" % (
            app, ratios[app], accel, nodes, rounds, answers.pop()), flush=True)
    return ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--nodes", type=int, default=NODES)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    a = ap.parse_args()
    apps = [x for x in a.apps.split(",") if x]
    for app in apps:
        if app not in APPS:
            sys.exit("apps_guest: unknown app %s (known: %s)" % (app, ", ".join(APPS)))
    if os.geteuid() != 0:
        sys.exit("apps_guest: needs root (a network namespace with taps)")
    accel = qemu_run.bench_accel("apps", "; the Linux guests run under TCG")
    try:
        measure(apps, a.nodes, a.rounds, accel)
    except RuntimeError as e:
        sys.exit("apps_guest: %s" % e)


if __name__ == "__main__":
    main()
