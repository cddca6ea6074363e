"""Linear regression by gradient descent in Spark: the Spark peer of apps/linreg in `make bench B=apps`.

  spark-submit ... --py-files appdata.py,peer.py linreg_spark.py SAMPLES FEATURES ITERATIONS SEED [gd|lbfgs]

fox's samples (appdata.linreg_rows = apps/linreg/gd.h's Row), generated in
the Python workers, cached in the JVM and counted before the clock starts.

gd (the bench's): MLlib's full-batch gradient descent,
org.apache.spark.mllib.regression.LinearRegressionWithSGD (what pyspark.mllib's
LinearRegressionWithSGD.train runs; called on the JVM RDD of LabeledPoints so
that the fit does not re-pickle the data) with stepSize 1 (fox's rate),
ITERATIONS iterations, miniBatchFraction 1 (every sample every step, as fox),
regParam 0, no intercept and convergenceTol 0, so that it makes every step.
A step is one treeAggregate of the least-squares gradient and loss over the
cached samples, then the update at the driver: fox's step. MLlib's step size
decays as 1 / sqrt(step) where fox's stays 1, so the weights differ: compare
the mean squared errors' order of magnitude only (both near the noise's
variance, 0.1^2 / 3).

lbfgs: what the DataFrame API's users fit, pyspark.ml.regression.LinearRegression
with solver "l-bfgs", regParam 0, no intercept, maxIter ITERATIONS, tol 0, on a
cached DataFrame. Not the bench's peer: on these data it converges (gradient
norm ~1e-10) in 4 iterations, and its fit is mostly a pass for the features'
statistics and one that blockifies and caches the data (each L-BFGS pass
after them takes ~0.1 s on 1M samples): its time over its iterations is no
step time.

Prints the mean squared error of the final weights over the samples
(computed after the clock, in numpy on the driver from the same generator),
|w - w*| and the steps made.
"""
import sys

import numpy as np

import appdata
import peer


def mse(seed, samples, features, w):
    x, y = appdata.linreg_rows(seed, features, 0, samples)
    return float(np.mean((x @ w - y) ** 2))


def fit_gd(spark, parts, samples, features, iterations, seed):
    """(load s, fit s, weights, steps) of MLlib's gradient descent."""
    from pyspark.mllib.common import _to_java_object_rdd
    from pyspark.mllib.linalg import DenseVector
    from pyspark.mllib.regression import LabeledPoint
    sc = spark.sparkContext
    jvm = sc._jvm

    def points(first, end):
        x, y = appdata.linreg_rows(seed, features, first, end)
        return (LabeledPoint(float(label), DenseVector(row)) for row, label in zip(x, y))

    load = peer.Clock()
    data = _to_java_object_rdd(peer.shares(sc, samples, parts, points)).rdd().cache()  # RDD[LabeledPoint]
    assert data.count() == samples
    gd = jvm.org.apache.spark.mllib.regression.LinearRegressionWithSGD(1.0, iterations, 0.0, 1.0)
    gd.setIntercept(False)
    gd.optimizer().setConvergenceTol(0.0)
    zeros = jvm.org.apache.spark.mllib.linalg.Vectors.zeros(features)
    load_s = load.seconds()

    fit = peer.Clock()
    model = gd.run(data, zeros)
    fit_s = fit.seconds()
    return load_s, fit_s, np.array(list(model.weights().toArray())), iterations


def fit_lbfgs(spark, parts, samples, features, iterations, seed):
    """(load s, fit s, weights, steps) of the DataFrame API's L-BFGS."""
    from pyspark.ml.linalg import DenseVector
    from pyspark.ml.regression import LinearRegression
    sc = spark.sparkContext

    def rows(first, end):
        x, y = appdata.linreg_rows(seed, features, first, end)
        return ((DenseVector(row), float(label)) for row, label in zip(x, y))

    load = peer.Clock()
    data = spark.createDataFrame(peer.shares(sc, samples, parts, rows), ["features", "label"]).cache()
    assert data.count() == samples
    lr = LinearRegression(solver="l-bfgs", regParam=0.0, elasticNetParam=0.0, fitIntercept=False,
                          maxIter=iterations, tol=0.0)
    load_s = load.seconds()

    fit = peer.Clock()
    model = lr.fit(data)
    fit_s = fit.seconds()
    return load_s, fit_s, model.coefficients.toArray(), model.summary.totalIterations


def main():
    samples, features, iterations, seed = (int(a) for a in sys.argv[1:5])
    solver = sys.argv[5] if len(sys.argv) > 5 else "gd"
    spark, parts = peer.start("linreg")
    sc = spark.sparkContext
    sc.setJobGroup("fit", "the timed fit")
    load_s, fit_s, w, steps = {"gd": fit_gd, "lbfgs": fit_lbfgs}[solver](spark, parts, samples, features,
                                                                        iterations, seed)
    jobs = len(sc.statusTracker().getJobIdsForGroup("fit")) - 1  # less the load's count
    spark.stop()

    distance = float(np.linalg.norm(w - appdata.linreg_truth(seed, features)))
    peer.report("linreg", "mean squared error %.9f after %d steps (%s, %d jobs in the fit); |w - w*| %.9f" %
                (mse(seed, samples, features, w), steps, solver, jobs, distance), load_s, fit_s, steps)
    print("spark_linreg: coefficients: %s" % " ".join("%.6f" % v for v in w[:16]))


if __name__ == "__main__":
    main()
