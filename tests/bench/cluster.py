#!/usr/bin/env python3
"""make bench B=cluster: what the frontend costs a user, against the launcher
they know (issue 11).

    cluster.up_4nodes_s         `fox cluster up --nodes 4`, command start to exit (every node joined)
    cluster.node_boot_s         median time from a node's QEMU start to its first authenticated
                                frame (what a node's return to the pool after a job costs)
    cluster.launch_s            median of `fox run hello` on the 4 idle nodes (an empty job:
                                place 0 here, the 4 nodes' agents take it without a reboot),
                                command start to exit
    cluster.mpirun_s            median of `mpirun -np 4 /bin/true` (Debian's openmpi-bin,
                                installed here on the first run if missing)
    cluster.launch_vs_mpirun_ratio   launch_s / mpirun_s

Nodes run under TCG here (see DESIGN.md): the figures are for this machine.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOX = os.path.join(ROOT, "build", "bin", "fox")
RUNS = 5


def timed(cmd, env=None):
    start = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.monotonic() - start
    if p.returncode != 0:
        raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return took, p.stdout


def ensure_mpirun():
    if shutil.which("mpirun"):
        return True
    print("# cluster: installing openmpi-bin (Debian) for the mpirun comparison", flush=True)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "update", "-qq"], env=env, check=False)
    r = subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "openmpi-bin"], env=env)
    return r.returncode == 0 and shutil.which("mpirun") is not None


def wait_idle(env, name, count, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run([FOX, "status", "--name", name], env=env, capture_output=True, text=True).stdout
        if len(re.findall(r"^\d+\s+\S+\s+idle\b", out, re.M)) == count:
            return
        time.sleep(0.1)
    raise RuntimeError("the pool did not come back idle")


def main():
    state_dir = tempfile.mkdtemp(prefix="fox-bench-")
    env = dict(os.environ, FOX_STATE_DIR=state_dir, FOX_ACCEL=os.environ.get("FOX_ACCEL", "tcg"))
    name = "bench%d" % os.getpid()
    try:
        up_s, _ = timed([FOX, "cluster", "up", "--nodes", "4", "--name", name], env)
        launches = []
        for _ in range(RUNS):
            wait_idle(env, name, 4)
            took, out = timed([FOX, "run", "hello", "--name", name], env)
            if len(re.findall(r"^place[1-4]\| Hello from fox", out, re.M)) != 4:
                raise RuntimeError("the empty job did not run on the 4 nodes:\n" + out)
            launches.append(took)
        with open(os.path.join(state_dir, name, "supervisor.log")) as f:
            boots = [float(s) for s in re.findall(r"joined the pool \(([0-9.]+) s after its boot\)", f.read())]
    finally:
        subprocess.run([FOX, "cluster", "down", "--name", name], env=env, capture_output=True)
        shutil.rmtree(state_dir, ignore_errors=True)
    print("cluster.up_4nodes_s %.3f s" % up_s)
    print("cluster.node_boot_s %.3f s" % statistics.median(boots))
    launch = statistics.median(launches)
    print("cluster.launch_s %.3f s" % launch)
    if not ensure_mpirun():
        print("# cluster: mpirun unavailable (apt-get install openmpi-bin failed): no comparison")
        return 1
    mpi = ["mpirun", "--oversubscribe", "-np", "4"]
    if os.geteuid() == 0:
        mpi.insert(1, "--allow-run-as-root")
    mpi_env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_plm_rsh_agent="")
    timed(mpi + ["/bin/true"], mpi_env)  # warm the page cache
    mpirun = statistics.median(timed(mpi + ["/bin/true"], mpi_env)[0] for _ in range(RUNS))
    print("cluster.mpirun_s %.3f s" % mpirun)
    print("cluster.launch_vs_mpirun_ratio %.2f x" % (launch / mpirun))
    return 0


if __name__ == "__main__":
    sys.exit(main())
