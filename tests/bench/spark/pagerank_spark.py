"""PageRank as Spark's own example runs it: the Spark peer of apps/pagerank in `make bench B=apps`.

  spark-submit ... --py-files appdata.py,peer.py pagerank_spark.py VERTICES ITERATIONS SEED

fox's graph (appdata.pagerank_edges = apps/pagerank/graph.h's Make), its
edges generated in the Python workers as (source, target) pairs, then the
algorithm of Spark's examples/src/main/python/pagerank.py: the links grouped
by source and cached (counted before the clock starts), every rank 1.0, and
per iteration links.join(ranks), each source sending rank / degree to each of
its targets, reduceByKey(add), rank = 0.15 + 0.85 * the sum. The iterations
are lazy, as in the example: the clock runs over them and the action that
computes the last ranks (cached, counted).

Where the example differs from fox (so compare the top vertices loosely):
it has no dangling-node handling (a vertex without out-edges keeps its rank
and gives none; fox gives it to all), a vertex that nothing links to drops
out of the ranks after the first iteration (its links then send nothing),
and ranks sum to about the number of vertices (fox's to 1, in 2^-50 units).
Unlike the example this keeps duplicate edges (no distinct()): the generated
graph has them on purpose and fox counts each.

Prints the ranks' sum, how many vertices have one, and the top 5 vertices,
their rank over the sum (fox prints each vertex's share of 1).
"""
import sys
from operator import add

import numpy as np

import appdata
import peer


def edges(seed, vertices, first, end):
    degree, targets = appdata.pagerank_edges(seed, vertices, first, end)
    sources = np.repeat(np.arange(first, end), degree).tolist()
    return zip(sources, targets.tolist())


def compute_contribs(urls, rank):
    """As the example: rank / len(urls) to each of urls."""
    num_urls = len(urls)
    for url in urls:
        yield (url, rank / num_urls)


def main():
    vertices, iterations, seed = (int(a) for a in sys.argv[1:4])
    spark, parts = peer.start("pagerank")
    sc = spark.sparkContext

    load = peer.Clock()
    links = peer.shares(sc, vertices, parts, lambda first, end: edges(seed, vertices, first, end)).groupByKey().cache()
    sources = links.count()
    load_s = load.seconds()

    steps = peer.Clock()
    ranks = links.map(lambda url_neighbors: (url_neighbors[0], 1.0))
    for _ in range(iterations):
        contribs = links.join(ranks).flatMap(
            lambda url_urls_rank: compute_contribs(url_urls_rank[1][0], url_urls_rank[1][1]))
        ranks = contribs.reduceByKey(add).mapValues(lambda rank: rank * 0.85 + 0.15)
    ranks = ranks.cache()
    ranked = ranks.count()
    steps_s = steps.seconds()

    total = ranks.values().sum()
    top = ranks.takeOrdered(5, key=lambda vr: (-vr[1], vr[0]))
    peer.report("pagerank", "rank sum %.6f over %d ranked vertices (%d with out-edges) after %d steps" %
                (total, ranked, sources, iterations), load_s, steps_s, iterations)
    print("spark_pagerank: top vertices: %s" % " ".join("%d (%.9f)" % (v, r / total) for v, r in top))
    spark.stop()


if __name__ == "__main__":
    main()
