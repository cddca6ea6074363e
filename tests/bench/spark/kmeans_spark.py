"""KMeans as Spark runs it: the Spark peer of apps/kmeans in `make bench B=apps` (tests/bench/apps.py).

  spark-submit ... --py-files appdata.py,peer.py kmeans_spark.py POINTS DIM K ITERATIONS SEED

fox's points (appdata.kmeans_points = apps/kmeans/lloyd.h), generated in the
Python workers and handed to the JVM as MLlib vectors (an RDD cached
deserialized in the JVM and counted before the clock starts). The timed part
is MLlib's own Lloyd's loop, org.apache.spark.mllib.clustering.KMeans.run,
called on that JVM RDD: k centres, fox's initial centroids as its initial
model (lloyd.h's InitialCentroids), maxIterations = ITERATIONS and
epsilon = 0, so that it runs every step fox runs (it would stop before only
at a fixed point, where no centre moves). Each step is one pass:
assign (a broadcast of the centres, a mapPartitions over the cached points),
reduceByKey of the sums, collectAsMap; the first also computes and caches
the points' norms, as every fit does.

The DataFrame API (pyspark.ml.clustering.KMeans) cannot be given initial
centres, and pyspark.mllib's KMeans.train pickles the Python RDD into the
JVM inside the fit: hence the JVM call, on the same class both of them use.

Prints MLlib's training cost (the sum of squared distances of the last
step's assignment, which is what fox prints: it must match fox's cost to
~10 digits, fox rounding each point's term to 2^-16) and the steps made.
"""
import sys

from pyspark.mllib.common import _py2java, _to_java_object_rdd
from pyspark.mllib.linalg import DenseVector

import appdata
import peer


def main():
    points, dim, k, iterations, seed = (int(a) for a in sys.argv[1:6])
    spark, parts = peer.start("kmeans")
    sc = spark.sparkContext
    jvm = sc._jvm

    load = peer.Clock()
    rows = peer.shares(sc, points, parts, lambda first, end: (
        DenseVector(x) for x in appdata.kmeans_points(seed, k, dim, first, end)))
    data = _to_java_object_rdd(rows).rdd().cache()  # RDD[mllib Vector] in the JVM
    assert data.count() == points
    initial = [DenseVector(c) for c in appdata.kmeans_initial_centroids(seed, k, dim, points)]
    kmeans = (jvm.org.apache.spark.mllib.clustering.KMeans().setK(k).setMaxIterations(iterations)
              .setEpsilon(0.0).setInitialModel(jvm.org.apache.spark.mllib.clustering.KMeansModel(
                  _py2java(sc, initial))))
    load_s = load.seconds()

    fit = peer.Clock()
    model = kmeans.run(data)
    steps_s = fit.seconds()

    peer.report("kmeans", "cost %.6f after %d steps" % (model.trainingCost(), model.numIter()), load_s, steps_s,
                model.numIter())
    for j, c in enumerate(model.clusterCenters()):
        print("spark_kmeans: centroid %d: %s" % (j, " ".join("%.6f" % v for v in c.toArray())))
    spark.stop()


if __name__ == "__main__":
    main()
