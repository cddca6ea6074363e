#!/usr/bin/env python3
"""Iterative apps against their peers (make bench B=apps; issue 39).

For each app on the same data and the same cores (P processes or threads on
this machine's first P CPUs), alternating the sides over ROUNDS rounds (a
different side first each round), prints the median and spread (min..max)
of the timed steps, the input generated before them and reported apart:
  apps.APP_fox_steps_s          fox, hosted places (fox.spares none, executor=spmd), a
                                checkpoint only before the first step (every=1000000):
                                its steps
  apps.APP_fox_resilient_steps_s  the same with a checkpoint every 10 steps (its
                                executor's whole time: steps and checkpoints; the
                                overhead ratio divides it by the first run's whole time)
  apps.APP_mpi_steps_s          the MPI peer (tests/bench/mpi/APP_mpi.cc, mpicxx -O3
                                -march=native with fox's compiler, clang, as fox's apps
                                are built; mpirun -np P): MPI_Allreduce per step
  apps.APP_spark_steps_s        the Spark peer (tests/bench/spark/APP_spark.py, PySpark
                                local[P]; see its README): MLlib's KMeans, MLlib's
                                gradient descent (LinearRegressionWithSGD), Spark's
                                example PageRank
  apps.APP_spark_load_s         its input generated, cached and counted (not timed above)
  apps.APP_vs_mpi_ratio x       fox's throughput / MPI's (median step times)
  apps.APP_vs_spark_ratio x     fox's throughput / Spark's (median times per step)
  apps.APP_resilience_overhead_ratio x  resilient / not (median times)
  apps.APP_downtime_s           one place killed (fox run --hosted, a spare taking its
                                place): its exit to the executor's catch (detection),
                                rebuild, remake, restore, a new spare; the median of 3 runs
  apps.APP_native_vs_linux_guest_ratio x  fox QEMU nodes against the app's hosted
                                program in Linux guests under the same QEMU options
                                (tests/bench/apps_guest.py: smaller problems, 3 rounds;
                                needs root, else skipped with a line that says why)
and draws build/bench/apps_steps.png (ms per step, every side) and
build/bench/apps_timeline_APP.png (the failure run: steps per second, the
death, each recovery phase) with matplotlib (tests/bench/apps_charts.py).
and checks that fox and MPI printed the same answer. Spark's is printed
beside fox's (apps.APP_spark_answer): kmeans' cost must be fox's to ~10
digits (MLlib adds doubles where fox adds integers); linreg's and pagerank's
algorithms are not fox's (a decaying step size; no dangling-node handling),
so their answers compare loosely. Spark's input is checked once per app: a
numpy replay of fox's steps on it (tests/bench/spark/check_data.py) must
print fox's answer (apps.APP_spark_input).

Sizes (the same for every side): kmeans 2M points of 4 dimensions, k=8;
linreg 1M samples of 16 features; pagerank 50k vertices (PySpark's PageRank
takes ~1 s a step at 50k on 2 cores and ~8 s at 200k, where its 5 rounds
alone would take ~15 minutes); 20 steps each, but pagerank's 200 for fox
and MPI (0.5 ms a step: 20 would time mostly the first step's warm-up); lulesh the mesh of LULESH
-s 30 as 8 subdomains of 15^3, its first 300 iterations (fox and MPI only:
the MPI peer exchanges halos with MPI_Irecv/MPI_Isend/MPI_Waitall and
allreduces the time constraints, LULESH's MPI pattern). The whole bench:
~10 minutes, and ~5 more for the Linux guests; `apps.py [--no-spark]
[--no-guest] [APP...]` runs some of the apps, with or without Spark and the
guests.

Place i runs on CPU i (its process's affinity; mpirun binds rank i to core i
likewise; Spark's JVM and Python workers inherit CPUs 0..P-1). OpenMPI comes
from Debian (installed on the first run if missing); Spark from PyPI
(pyspark and numpy, in build/bench/spark-venv, made on the first run);
Spark needs Java 17 or later. A Spark peer that cannot run is skipped with a
line that says why, the other sides' figures still printed.
"""
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys

import apps_guest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "boot"))
from cluster import free_port_range  # noqa: E402

ROUNDS = 5
PLACES = 2
APPS = {
    # app: (fox arguments, MPI's and Spark's arguments (positional), fox's answer regex, MPI's answer regex)
    "kmeans": (["points=2000000", "dim=4", "k=8", "iterations=20", "seed=1"], ["2000000", "4", "8", "20", "1"],
               r"kmeans: (cost [0-9.]+ after \d+ steps)", r"kmeans_mpi: (cost [0-9.]+ after \d+ steps)"),
    "linreg": (["samples=1000000", "features=16", "iterations=20", "seed=1"], ["1000000", "16", "20", "1"],
               r"linreg: (mean squared error [0-9.]+ after \d+ steps)",
               r"linreg_mpi: (mean squared error [0-9.]+ after \d+ steps)"),
    "pagerank": (["vertices=50000", "iterations=200", "seed=1"], ["50000", "200", "1"],
                 r"pagerank: (rank checksum \w+ after \d+ steps)", r"pagerank: (rank checksum \w+ after \d+ steps)"),
    # LULESH -s 30's mesh as 8 subdomains of 15^3, its first 300 iterations (no Spark peer).
    "lulesh": (["size=15", "domains=2", "iterations=300"], ["15", "2", "300"],
               r"lulesh: (iteration count \d+, final origin energy \S+ \(\S+\))",
               r"lulesh_mpi: (iteration count \d+, final origin energy \S+ \(\S+\))"),
}
NO_SPARK = ("lulesh",)  # Spark's users do not run it
# Spark's arguments where they differ (fewer steps: its time per step is compared).
SPARK_ARGS = {"pagerank": ["50000", "20", "1"]}
# fox's apps run on the SPMD executor, as an APGAS programmer runs a bulk-synchronous
# program (every place its own loop, a Team allreduce a step: MPI's pattern); the
# global executor's place 0 sends the state out and gathers every step.
FOX_EXECUTOR = "executor=spmd"
STATS = re.compile(r": ([0-9.]+) s; (\d+) steps \(([0-9.]+) s\), (\d+) checkpoints \(([0-9.]+) s")
SPARK_DIR = os.path.join(ROOT, "tests", "bench", "spark")
SPARK_VENV = os.path.join(ROOT, "build", "bench", "spark-venv")
SPARK_PACKAGES = ["pyspark==4.3.0", "numpy"]
CHART_PACKAGES = ["matplotlib"]  # apps_charts.py, in the same virtualenv
SPARK_REPORT = re.compile(r"spark_\w+: (.*); load ([0-9.]+) s, steps ([0-9.]+) s \((\d+) steps\)")
# What a Spark peer's answer is compared with, loosely: fox's answer for the app, or more of fox's output.
FOX_TOP = re.compile(r"pagerank: top vertices: (.*)")


CHARTS = {}  # per app: ms per step by side, and the failure run's timeline (apps_charts.py)


class SparkUnavailable(Exception):
    """Why the Spark peer cannot run (printed, and the bench goes on without it)."""


def ensure_mpi():
    if shutil.which("mpicxx") and shutil.which("mpirun"):
        return
    print("bench apps: installing OpenMPI (Debian: libopenmpi-dev openmpi-bin)", flush=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "libopenmpi-dev", "openmpi-bin"], check=True,
                   stdout=subprocess.DEVNULL)


def java_major():
    """The major version of the `java` on PATH, or None."""
    if not shutil.which("java"):
        return None
    r = subprocess.run(["java", "-version"], capture_output=True, text=True)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', r.stderr + r.stdout)
    if r.returncode != 0 or not m:
        return None
    return int(m.group(2)) if m.group(1) == "1" else int(m.group(1))  # "1.8.0" is Java 8


def ensure_spark():
    """Spark's virtualenv, made and filled from PyPI on the first run; raises SparkUnavailable."""
    java = java_major()
    if java is None:
        raise SparkUnavailable("no Java (`java -version` failed; Spark 4 needs Java 17 or later)")
    if java < 17:
        raise SparkUnavailable("Java %d found; Spark 4 needs Java 17 or later" % java)
    python = os.path.join(SPARK_VENV, "bin", "python")
    if os.path.exists(python) and subprocess.run([python, "-c", "import pyspark, numpy"],
                                                 capture_output=True).returncode == 0:
        return
    print("bench apps: installing Spark (pip: %s) into %s" % (" ".join(SPARK_PACKAGES),
                                                             os.path.relpath(SPARK_VENV, ROOT)), flush=True)
    for step in ([sys.executable, "-m", "venv", SPARK_VENV],
                 [python, "-m", "pip", "install", "-q"] + SPARK_PACKAGES):
        try:
            r = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SparkUnavailable("`%s` failed: %s" % (" ".join(step[:4]), e))
        if r.returncode != 0:
            last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["exit %d" % r.returncode]
            raise SparkUnavailable("`%s` failed: %s" % (" ".join(step[:4]), last[0]))


def spark_command(app, args, n):
    """spark-submit of the app's Spark peer on local[n], and its environment.

    The settings, as Spark's tuning guide has them for one machine: local[n]
    (n task threads, the places' count), the driver memory for the cached
    input (~200 MB of JVM objects at these sizes, plus the garbage of making
    it), Kryo for what the JVM serializes (shuffles, broadcasts, task
    results), spark.default.parallelism n (PySpark's reduceByKey and join
    otherwise size each shuffle by their input's partitions, and PageRank's
    grow every iteration: n keeps links and ranks co-partitioned, so the join
    does not shuffle the links), the UI and its progress bars off, WARN
    logs, and every socket on the loopback (SPARK_LOCAL_IP).
    """
    env = dict(os.environ, PATH=os.path.join(SPARK_VENV, "bin") + os.pathsep + os.environ.get("PATH", ""),
               PYSPARK_PYTHON=os.path.join(SPARK_VENV, "bin", "python"),
               PYSPARK_DRIVER_PYTHON=os.path.join(SPARK_VENV, "bin", "python"), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_HOME", None)  # the venv's pyspark finds its own
    conf = {
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.default.parallelism": str(n),
        "spark.sql.shuffle.partitions": str(n),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "WARN",
    }
    command = [os.path.join(SPARK_VENV, "bin", "spark-submit"), "--master", "local[%d]" % n, "--driver-memory", "4g",
               "--py-files", ",".join(os.path.join(SPARK_DIR, f) for f in ("appdata.py", "peer.py"))]
    for key, value in conf.items():
        command += ["--conf", "%s=%s" % (key, value)]
    return command + [os.path.join(SPARK_DIR, "%s_spark.py" % app)] + args, env


def run_spark(app, args, n):
    """The Spark peer's output; raises SparkUnavailable when it fails."""
    command, env = spark_command(app, args, n)
    cpus = set(sorted(os.sched_getaffinity(0))[:n])  # the places' CPUs: the JVM and its Python workers inherit them
    try:
        p = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    except OSError as e:
        raise SparkUnavailable("spark-submit did not start: %s" % e)
    try:
        out, err = p.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # its own session: spark-submit's JVM and the Python it started
        p.communicate()
        raise SparkUnavailable("%s_spark.py took more than 900 s" % app)
    if p.returncode != 0 or not SPARK_REPORT.search(out):
        tail = "\n".join(("bench apps:   " + line) for line in (err + out).strip().splitlines()[-12:])
        raise SparkUnavailable("%s_spark.py failed (exit %d):\n%s" % (app, p.returncode, tail))
    return out


def check_spark_input(app, args):
    """The answer that check_data.py's numpy replay of fox's steps gives on the Spark peer's input."""
    try:
        r = subprocess.run([os.path.join(SPARK_VENV, "bin", "python"), os.path.join(SPARK_DIR, "check_data.py"), app] +
                           args, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "check_data.py failed: %s" % e
    if r.returncode != 0:
        return "check_data.py failed: " + (r.stderr.strip() or "?")
    return r.stdout.strip().split(": ", 1)[-1]  # less "APP: ", as the answer regexes take fox's


def build_mpi(app):
    """The app's MPI peer, with the app's own sources it needs (lulesh's physics)."""
    out = os.path.join(ROOT, "build", "bench", "%s_mpi" % app)
    sources = [os.path.join(ROOT, "apps", "lulesh", f) for f in ("hydro.cc", "hydro_step.cc", "cube_root.cc")
               ] if app == "lulesh" else []
    os.makedirs(os.path.dirname(out), exist_ok=True)
    incs = ["-I" + os.path.join(ROOT, d) for d in ("apps", "apgas/include", "ebb/include", "net/include",
                                                   "kernel/include")]
    # fox's compiler (clang), as fox's apps are built: the ratio is the runtimes', not the compilers'.
    env = dict(os.environ, OMPI_CXX="clang++") if shutil.which("clang++") else None
    subprocess.run(["mpicxx", "-std=c++20", "-O3", "-march=native", "-ffp-contract=off"] + incs +
                   [os.path.join(ROOT, "tests", "bench", "mpi", "%s_mpi.cc" % app)] + sources + ["-o", out], check=True,
                   env=env)
    return out


def run_fox(app, args, n):
    program = os.path.join(ROOT, "build", "host", "apps", app, app)
    base = free_port_range(n)
    peers = "fox.peers=" + ",".join("%d@127.0.0.1:%d" % (i, base + i) for i in range(n))
    procs = []
    for i in range(n):
        env = dict(os.environ, FOX_CORES="1", FOX_ARGS="fox.node=%d fox.amport=%d %s" % (i, base + i, peers))
        cpu = i % os.cpu_count()  # place i on CPU i, as mpirun binds rank i (a place pins to its affinity's CPUs)
        procs.append(subprocess.Popen([program] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu})))
    out = procs[0].communicate(timeout=900)[0]
    for p in procs[1:]:
        p.communicate(timeout=60)
    if procs[0].returncode != 0:
        sys.exit("bench apps: fox %s failed:\n%s" % (app, out))
    return out


def run_mpi(binary, args, n):
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), binary] + args,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        sys.exit("bench apps: %s failed:\n%s%s" % (binary, r.stdout, r.stderr))
    return r.stdout


DIED = re.compile(r"^place(\d+)\| apgas: place \d+ dies in step \d+ \(fox.kill_at\) at unix ([0-9.]+)$", re.M)
CAUGHT = re.compile(r"^place0\| \w+: the last failure caught at unix ([0-9.]+)$", re.M)
STEP_END = re.compile(r"^place0\| iterative: step \d+ done at unix ([0-9.]+)$", re.M)
RECOVERY = re.compile(r"1 failures, 1 restores \(rebuild ([0-9.]+) s, remake ([0-9.]+) s, restore ([0-9.]+) s, "
                      r"lost [0-9.]+ s\), \d+ new spares \(([0-9.]+) s\)")


def downtime(app, fox_args):
    """The downtime of one killed place, as a user runs the app (fox run --hosted: 2 active places
    and a spare; place 1 exits in step 7, a checkpoint every 5 steps), in parts: detection (its
    exit to the executor's catch, on the realtime clock the places share), the group's rebuild,
    the app's remake (the spare makes its input), the restore of the last checkpoint, and the
    wait for a new spare from fox run (the executor tops its spares up before it goes on). Median
    of 3 runs, and that run's timeline (its steps' ends: trace=1); None (printed) if a run fails."""
    fox = os.path.join(ROOT, "build", "bin", "fox")
    runs = []
    for _ in range(3):
        r = subprocess.run([fox, "run", app, "--hosted", "--places", "3", "--spares", "1", "--kill-at", "1:step:7",
                            "--timeout", "600", "--"] + fox_args + ["every=5", "check=0", "trace=1"],
                           capture_output=True, text=True, timeout=900)
        out = r.stdout + r.stderr
        died, caught, parts = DIED.search(out), CAUGHT.search(out), RECOVERY.search(out)
        if not (died and caught and parts):
            print("bench apps: %s: the downtime run failed (exit %d):\n%s" % (app, r.returncode, out[-2000:]))
            return None
        detection = float(caught.group(1)) - float(died.group(2))
        timeline = {"steps": [float(x) for x in STEP_END.findall(out)], "died": float(died.group(2)),
                    "caught": float(caught.group(1))}
        timeline.update(zip(("rebuild", "remake", "restore", "top-up"), (float(x) for x in parts.groups())))
        runs.append(([detection] + [float(x) for x in parts.groups()], timeline))
    runs.sort(key=lambda run: sum(run[0]))
    return runs[len(runs) // 2]


def spread(values):
    return "%.4f s (%.4f..%.4f)" % (statistics.median(values), min(values), max(values))


def spark_versus_fox(app, spark_answer, fox_answer, fox_out):
    """What Spark's answer is beside fox's, in words."""
    if app == "kmeans":
        spark_cost, fox_cost = (float(re.search(r"cost ([0-9.]+)", a).group(1)) for a in (spark_answer, fox_answer))
        difference = abs(spark_cost - fox_cost) / fox_cost
        return "fox's cost %s: relative difference %.1e%s" % (
            "matches" if difference < 1e-6 else "DIFFERS", difference,
            "" if difference < 1e-6 else " (MISMATCH: more than 1e-6)")
    if app == "linreg":
        spark_mse, fox_mse = (float(re.search(r"mean squared error ([0-9.]+)", a).group(1))
                              for a in (spark_answer, fox_answer))
        return "fox's %.9f: %.2fx (a decaying step size where fox's stays 1: compare the order of magnitude)" % (
            fox_mse, spark_mse / fox_mse)
    fox_top = [int(v) for v in re.findall(r"(\d+) \(", FOX_TOP.search(fox_out).group(1))]
    spark_top = [int(v) for v in re.findall(r"(\d+) \(", spark_answer.split("top vertices:")[1])]
    return "fox's top 5 %s: %d of them in Spark's top 5%s (no dangling-node handling in Spark's example)" % (
        fox_top, len(set(fox_top) & set(spark_top)), ", in fox's order" if fox_top == spark_top else "")


def bench(app, spark):
    """One app's rounds; `spark` is False when the Spark peer is unavailable."""
    fox_args, mpi_args, fox_answer, mpi_answer = APPS[app]
    fox_args = fox_args + [FOX_EXECUTOR]
    binary = build_mpi(app)
    plain, plain_whole, resilient, mpi, answers = [], [], [], [], set()
    spark_steps, spark_per_step, spark_load, spark_answers, fox_out, fox_steps = [], [], [], set(), "", 0
    for r in range(ROUNDS):
        sides = ["fox", "resilient", "mpi"] + (["spark"] if spark else [])
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:  # a different side first each round
            if side == "spark":
                try:
                    out = run_spark(app, SPARK_ARGS.get(app, mpi_args), PLACES)
                except SparkUnavailable as e:
                    print("bench apps: %s: Spark peer skipped: %s" % (app, e), flush=True)
                    spark = False
                    continue
                m = SPARK_REPORT.search(out)
                spark_answers.add(m.group(1) + "".join("\n" + line.split(": ", 1)[1] for line in out.splitlines()
                                                       if "top vertices" in line))
                spark_load.append(float(m.group(2)))
                spark_steps.append(float(m.group(3)))
                spark_per_step.append(float(m.group(3)) / int(m.group(4)))
            elif side == "mpi":
                out = run_mpi(binary, mpi_args, PLACES)
                m = re.search(r"load ([0-9.]+) s, steps ([0-9.]+) s", out)
                mpi.append(float(m.group(2)))
                answers.add(re.search(mpi_answer, out).group(1))
            else:
                every = "every=10" if side == "resilient" else "every=1000000"
                out = run_fox(app, fox_args + [every, "check=0"], PLACES)
                m = STATS.search(out)
                steps_s, ckpt_s = float(m.group(3)), float(m.group(5))
                # Against the peers: the steps (as theirs, the input made before). The overhead: the executor's
                # whole time, steps and checkpoints (the plain run's one, before the first step, is the
                # resilient run's first too).
                if side == "resilient":
                    resilient.append(steps_s + ckpt_s)
                else:
                    plain.append(steps_s)
                    plain_whole.append(steps_s + ckpt_s)
                answers.add(re.search(fox_answer, out).group(1))
                fox_out, fox_steps = out, int(m.group(2))
    if len(answers) != 1:
        sys.exit("bench apps: %s: the sides' answers differ: %s" % (app, sorted(answers)))
    print("apps.%s_fox_steps_s %s" % (app, spread(plain)))
    print("apps.%s_fox_resilient_steps_s %s" % (app, spread(resilient)))
    print("apps.%s_mpi_steps_s %s" % (app, spread(mpi)))
    print("apps.%s_vs_mpi_ratio %.3f x" % (app, statistics.median(mpi) / statistics.median(plain)))
    print("apps.%s_resilience_overhead_ratio %.3f x" % (app, statistics.median(resilient) /
                                                           statistics.median(plain_whole)))
    answer = answers.pop()
    print("apps.%s_answer %s (fox and MPI alike)" % (app, answer))
    chart = {"ms": {"fox": 1e3 * statistics.median(plain) / fox_steps,
                    "resilient": 1e3 * statistics.median(resilient) / fox_steps,
                    "mpi": 1e3 * statistics.median(mpi) / fox_steps}}
    CHARTS[app] = chart
    median_run = downtime(app, fox_args)
    if median_run:
        parts, chart["timeline"] = median_run
        print("apps.%s_downtime_s %.3f s (detection %.3f s, rebuild %.3f s, remake %.3f s, restore %.3f s, a new "
              "spare %.3f s; fox run --hosted, a spare)" % (app, sum(parts), *parts), flush=True)
    if not spark_steps or not spark:
        return
    print("apps.%s_spark_steps_s %s" % (app, spread(spark_steps)))
    print("apps.%s_spark_load_s %s" % (app, spread(spark_load)))
    fox_per_step = statistics.median(plain) / fox_steps
    print("apps.%s_vs_spark_ratio %.3f x" % (app, statistics.median(spark_per_step) / fox_per_step))
    chart["ms"]["spark"] = 1e3 * statistics.median(spark_per_step)
    for a in sorted(spark_answers):
        lines = a.split("\n")
        print("apps.%s_spark_answer %s (%s)" % (app, "; ".join(lines), spark_versus_fox(app, a, answer, fox_out)))
    replayed = check_spark_input(app, mpi_args)  # fox's steps on Spark's input
    print("apps.%s_spark_input %s" % (app, "fox's (check_data.py's numpy replay of fox's steps on it: %s)" % replayed
                                     if replayed == answer else "NOT fox's: check_data.py printed %r, fox %r" %
                                     (replayed, answer)))


def main():
    ensure_mpi()
    args = sys.argv[1:]
    try:
        if "--no-spark" in args:
            args.remove("--no-spark")
            raise SparkUnavailable("--no-spark")
        ensure_spark()
        spark = True
    except SparkUnavailable as e:
        print("bench apps: Spark peer skipped: %s" % e, flush=True)
        spark = False
    guests = "--no-guest" not in args
    if not guests:
        args.remove("--no-guest")
    print("bench apps: %d places / ranks / Spark task threads, %d rounds, sides alternated" % (PLACES, ROUNDS),
          flush=True)
    chosen = args or list(APPS)  # apps.py [--no-spark] [--no-guest] [APP...]: some of them
    unknown = [a for a in chosen if a not in APPS]
    if unknown:
        sys.exit("bench apps: no app %s (%s)" % (", ".join(unknown), ", ".join(APPS)))
    for app in chosen:
        bench(app, spark and app not in NO_SPARK)
    if guests and os.geteuid() != 0:
        print("bench apps: Linux guests skipped: they need root (a network namespace with taps)", flush=True)
    elif guests:
        accel = apps_guest.qemu_run.bench_accel("apps", "; the Linux guests run under TCG")
        try:
            apps_guest.measure(chosen, apps_guest.NODES, apps_guest.ROUNDS, accel)
        except RuntimeError as e:
            sys.exit("bench apps: the Linux guests' comparison failed: %s" % e)
    charts()


def charts():
    """The PNG charts (tests/bench/apps_charts.py, with the virtualenv's matplotlib)."""
    draw_charts("apps", "apps_charts.py", CHARTS)


def draw_charts(bench, script, figures):
    """Runs tests/bench/SCRIPT FIGURES_JSON build/bench with the virtualenv's matplotlib (installed
    from PyPI on the first run); prints what it drew, or why it drew nothing."""
    outdir = os.path.join(ROOT, "build", "bench")
    path = os.path.join(outdir, "%s_figures.json" % bench)
    os.makedirs(outdir, exist_ok=True)
    with open(path, "w") as f:
        json.dump(figures, f)
    run_chart(bench, os.path.join(ROOT, "tests", "bench", script), path, outdir)


def run_chart(bench, script, path, outdir):
    """Runs SCRIPT FIGURES_JSON OUTDIR with the virtualenv's matplotlib (installed from PyPI on the
    first run); prints what it drew, or why it drew nothing."""
    python = os.path.join(SPARK_VENV, "bin", "python")
    why = None
    if not (os.path.exists(python) and subprocess.run([python, "-c", "import matplotlib"],
                                                      capture_output=True).returncode == 0):
        print("bench %s: installing matplotlib (pip) into %s" % (bench, os.path.relpath(SPARK_VENV, ROOT)), flush=True)
        for step in ([sys.executable, "-m", "venv", SPARK_VENV], [python, "-m", "pip", "install", "-q"] + CHART_PACKAGES):
            if os.path.exists(python) and step[1] == "-m" and step[2] == "venv":
                continue
            r = subprocess.run(step, capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                why = "`%s` failed: %s" % (" ".join(step[:4]), ((r.stderr or r.stdout).strip().splitlines() or ["?"])[-1])
                break
    if why is None:
        r = subprocess.run([python, script, path, outdir], capture_output=True, text=True)
        why = None if r.returncode == 0 else ((r.stderr.strip().splitlines() or ["?"])[-1])
    print("bench %s: no charts: %s" % (bench, why) if why else r.stdout.strip())


if __name__ == "__main__":
    main()
