#!/usr/bin/env python3
"""The memcached app over the Dht on a cluster of fox nodes, driven by stock
clients (issue 13): memccapable through one node, then KEYS keys set with
pymemcache through every node, one node killed, every key read back through
the survivors, and the redundancy rebuilt.

Usage: dht_cluster.py --nodes IP,IP,... --victim I --keys N --r R [--port P]

Run as a host command of boot/cluster.py (FOX_NETNS names the namespace;
tests/cluster/kill_node.sh kills the victim's QEMU). Redundancy is counted
from each survivor's `stats` (fox_held_items: the copies it holds, as
primary or replica): a node holds only keys it owns, so the sum over the survivors is
R x KEYS exactly when no key has fewer than R copies; the script prints the
number of missing copies (0 after the rebuild) and how long the rebuild
took. Exit status 0 only if every step held.
"""
import argparse
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

try:
    from pymemcache.client.base import Client
    from pymemcache.exceptions import MemcacheError
except ImportError:  # the pyenv python of CI lacks Debian's python3-pymemcache
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

sys.path.insert(0, HERE)
import conformance  # noqa: E402


class Failure(Exception):
    pass


def key_of(i):
    return "key:%06d" % i


def value_of(i, generation=0):
    return ("v%d-%06d-" % (generation, i)).ljust(40, "x").encode()


def client(ip, port):
    # Generous timeouts: a call whose primary died waits for the membership
    # to declare it (seconds under TCG) and is retried on the new primary.
    return Client((ip, port), connect_timeout=10, timeout=40)


def set_range(ip, port, keys, generation, failures, batch=200):
    c = client(ip, port)
    try:
        for start in range(0, len(keys), batch):
            chunk = keys[start:start + batch]
            failed = c.set_many({key_of(i): value_of(i, generation) for i in chunk}, noreply=False)
            failures.extend(failed)
    except MemcacheError as e:
        failures.append("%s: %s" % (ip, e))
    finally:
        c.close()


def parallel_set(ips, port, keys, generation, per_node=2):
    """Sets `keys` through every node, `per_node` connections each; returns failures."""
    failures = []
    workers = len(ips) * per_node
    threads = [threading.Thread(target=set_range, args=(ips[w % len(ips)], port, keys[w::workers], generation, failures))
               for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def read_range(ip, port, keys, expected_generation, result, batch=100):
    c = client(ip, port)
    missing = wrong = 0
    errors = []
    try:
        for start in range(0, len(keys), batch):
            chunk = keys[start:start + batch]
            got = c.get_many([key_of(i) for i in chunk])
            for i in chunk:
                v = got.get(key_of(i))
                if v is None:
                    missing += 1
                elif v != value_of(i, expected_generation(i)):
                    wrong += 1
    except MemcacheError as e:
        errors.append("%s: %s" % (ip, e))
    finally:
        c.close()
    result.append((missing, wrong, errors))


def parallel_read(ips, port, keys, expected_generation, per_node=2):
    result = []
    workers = len(ips) * per_node
    # Each key read through a node other than the one that set it (shifted by one).
    threads = [threading.Thread(target=read_range,
                                args=(ips[(w + 1) % len(ips)], port, keys[w::workers], expected_generation, result))
               for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    missing = sum(r[0] for r in result)
    wrong = sum(r[1] for r in result)
    errors = [e for r in result for e in r[2]]
    return missing, wrong, errors


def held(ips, port):
    total = 0
    for ip in ips:
        c = client(ip, port)
        try:
            total += int(c.stats()[b"fox_held_items"])
        finally:
            c.close()
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", required=True, help="the nodes' addresses, node 0 first")
    ap.add_argument("--victim", type=int, required=True)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--r", type=int, default=2)
    ap.add_argument("--port", type=int, default=11211)
    ap.add_argument("--rebuild-timeout", type=float, default=180)
    ap.add_argument("--quick", action="store_true",
                    help="for make bench B=dht: no memccapable, no rewrites or reads around the death, only the "
                         "time until redundancy is rebuilt")
    args = ap.parse_args()
    ips = args.nodes.split(",")
    port, n, r = args.port, args.keys, args.r
    survivors = [ip for i, ip in enumerate(ips) if i != args.victim]

    # memccapable through a node that is not the primary of most of its keys.
    if not args.quick:
        conformance.run_memccapable(conformance.Remote(ips[1 % len(ips)], port))
    # noreply sets (pymemcache's default) answer nothing: the next request
    # must not wait for more bytes to come.
    c = client(ips[1 % len(ips)], port)
    quiet = {"quiet:%d" % i: b"q%d" % i for i in range(2000)}
    c.set_many(quiet)
    got = c.get_many(list(quiet))
    if got != quiet:
        raise Failure("noreply sets: %d of %d read back" % (len(got), len(quiet)))
    print("dht_cluster: 2000 noreply sets through one node, all read back", flush=True)
    c.close()
    c = client(ips[0], port)
    c.flush_all(noreply=False)  # memccapable's items become tombstones: they hold no copies
    c.close()
    if held(ips, port) != 0:
        raise Failure("items left after flush_all")

    keys = list(range(n))
    t0 = time.monotonic()
    failures = parallel_set(ips, port, keys, 0)
    took = time.monotonic() - t0
    if failures:
        raise Failure("%d sets failed, the first: %s" % (len(failures), failures[:3]))
    print("dht_cluster: set %d keys through %d nodes in %.1f s (%.0f sets/s), 0 failed" % (n, len(ips), took, n / took),
          flush=True)
    copies = held(ips, port)
    c = client(ips[2 % len(ips)], port)
    curr_items = int(c.stats()[b"curr_items"])
    c.close()
    print("dht_cluster: %d copies held for %d keys (r = %d); stats through a node: curr_items %d" %
          (copies, n, r, curr_items), flush=True)
    if curr_items != n:
        raise Failure("curr_items %d, expected %d (the whole Dht's)" % (curr_items, n))
    if copies != r * n:
        raise Failure("expected %d copies before the death" % (r * n))

    # The victim dies while keys are being rewritten (generation 1 for the
    # first tenth) through the survivors.
    rewritten = keys[: n // 10] if not args.quick else []
    late_failures = []
    writer = threading.Thread(target=lambda: late_failures.extend(parallel_set(survivors, port, rewritten, 1, 1)))
    writer.start()
    time.sleep(0.5)
    kill = subprocess.run(["sh", os.path.join(ROOT, "tests/cluster/kill_node.sh"), str(args.victim)],
                          capture_output=True, text=True)
    print(kill.stdout.strip(), flush=True)
    if kill.returncode != 0:
        raise Failure("could not kill node %d: %s" % (args.victim, kill.stderr))
    killed_at = time.monotonic()
    writer.join()
    if late_failures:
        raise Failure("%d sets failed while node %d died, the first: %s" %
                      (len(late_failures), args.victim, late_failures[:3]))
    print("dht_cluster: %d keys rewritten while node %d died, 0 failed" % (len(rewritten), args.victim), flush=True)

    rewritten_set = set(rewritten)
    t0 = time.monotonic()
    read_keys = keys if not args.quick else keys[:1000]
    missing, wrong, errors = parallel_read(survivors, port, read_keys, lambda i: 1 if i in rewritten_set else 0)
    print("dht_cluster: node %d killed: read %d keys through the survivors in %.1f s: %d missing, %d wrong, %d errors" %
          (args.victim, len(read_keys), time.monotonic() - t0, missing, wrong, len(errors)), flush=True)
    if missing or wrong or errors:
        raise Failure("keys lost or wrong after the death: %s" % errors[:3])

    deadline = killed_at + args.rebuild_timeout
    while True:
        copies = held(survivors, port)
        if copies >= r * n or time.monotonic() > deadline:
            break
        time.sleep(1)
    short = r * n - copies
    print("dht_cluster: redundancy after the death: %d copies on %d survivors, %d missing copies, %.1f s after the kill" %
          (copies, len(survivors), short, time.monotonic() - killed_at), flush=True)
    if copies != r * n:
        raise Failure("redundancy not rebuilt: %d copies for %d keys" % (copies, n))
    print("dht_cluster: ok", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, RuntimeError, MemcacheError, OSError) as e:
        print("dht_cluster: FAILED: %s" % e, flush=True)
        sys.exit(1)
