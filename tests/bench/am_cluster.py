"""Shared helper of the network benchmarks: runs boot/cluster.py with the
am_node image (tests/cluster/am_node.cc) and returns every node's console."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "boot"))
import qemu_run  # noqa: E402

IMAGE = os.path.join(ROOT, "build", "native", "am_node.elf")
HOSTED = os.path.join(ROOT, "build", "host", "am_node_hosted")
PEERS = "fox.peers=0@10.77.0.10,1@10.77.0.11,100@10.77.0.1"


def run_cluster(nodes, append, accel, timeout=300, extra=(), image=IMAGE):
    """Boots `nodes` images (am_node unless `image`) with `append`; returns the harness output. Raises on failure."""
    if not os.path.exists(image):
        raise RuntimeError("%s is missing: run make first" % image)
    cmd = [sys.executable, os.path.join(ROOT, "boot", "cluster.py"), "--nodes", str(nodes), "--image", image,
           "--append=" + append, "--accel", accel, "--timeout", str(timeout)] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60)
    if r.returncode == 77:
        print("# skipped: " + r.stdout.strip().splitlines()[-1])
        sys.exit(0)
    if r.returncode != 0:
        raise RuntimeError("cluster run failed (%d):\n%s%s" % (r.returncode, r.stdout[-6000:], r.stderr[-2000:]))
    return r.stdout


def find(pattern, text, what):
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError("no %s in the output:\n%s" % (what, text[-6000:]))
    return m
