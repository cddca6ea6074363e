"""What the Spark peers of tests/bench/apps.py share: the session, the input's partitions, the report line.

A peer is run by spark-submit (its settings come from the command line that
apps.py builds: master local[P], driver memory, Kryo, log level) with
appdata.py shipped to the Python workers (--py-files). It generates its
input in the workers, partition i of n drawing rows [rows * i / n,
rows * (i + 1) / n) as fox's blocks would, caches it and counts it (the load,
timed apart), then times the iterations alone and prints

  spark_APP: ANSWER; load L s, steps S s (N steps)

which the bench parses (N: the passes Spark made, when they are not the
iterations asked for).
"""
import time

from pyspark.sql import SparkSession


def start(app):
    """The session (its settings, the log level too, from spark-submit) and its default parallelism."""
    spark = SparkSession.builder.appName("fox-bench-" + app).getOrCreate()
    return spark, spark.sparkContext.defaultParallelism


def shares(sc, rows, parts, make):
    """An RDD of `parts` partitions, partition i holding make(first, end) over its share of [0, rows)."""
    return sc.parallelize(range(parts), parts).mapPartitionsWithIndex(
        lambda i, _: make(rows * i // parts, rows * (i + 1) // parts))


class Clock:
    """Wall time since construction, in seconds."""

    def __init__(self):
        self.t0 = time.perf_counter()

    def seconds(self):
        return time.perf_counter() - self.t0


def report(app, answer, load_s, steps_s, steps):
    print("spark_%s: %s; load %.3f s, steps %.3f s (%d steps)" % (app, answer, load_s, steps_s, steps), flush=True)
