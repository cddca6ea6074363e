#!/usr/bin/env python3
"""A fox node's memcached served from all of its cores, checked with pymemcache.

Usage: cores_check.py PORT HOST CORES (the order of pymemcache_check.py's)

Opens 4 x CORES connections at once (a thread each; the node gives each
accepted connection the next core in turn), and on every one, concurrently:
sets and reads back keys of its own, adds to one counter every connection
shares (incr), and checks its values. Then, over one more connection:

  - the shared counter holds every increment (none lost between cores);
  - `stats` says threads = CORES and fox_core_connections shows every core
    with connections (the spreading happened);
  - the counters are the sum over the cores: cmd_get, cmd_set and the hits
    cover what the connections did; after `stats reset`, they count only
    what came after it, whichever core served it.

Exits 0 when every check holds.
"""
import socket
import sys
import threading

from pymemcache.client.base import Client

ROUNDS = 50


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def client(host, port):
    return Client((host, port), connect_timeout=5, timeout=20)


def stats(c):
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in c.stats().items()}


def work(host, port, index, errors):
    try:
        c = client(host, port)
        for i in range(ROUNDS):
            key, value = "cores_%d_%d" % (index, i), b"v%d.%d" % (index, i)
            check(c.set(key, value, noreply=False), "set " + key)
            check(c.get(key) == value, "get " + key)
            check(c.incr("cores_shared", 1, noreply=False) is not None, "incr")
        got = c.get_many(["cores_%d_%d" % (index, i) for i in range(ROUNDS)])
        check(len(got) == ROUNDS, "connection %d reads back %d of %d keys" % (index, len(got), ROUNDS))
        c.close()
    except Exception as e:  # noqa: BLE001 (reported below)
        errors.append("connection %d: %r" % (index, e))


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    port, host, cores = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    connections = 4 * cores
    c = client(host, port)
    check(c.set("cores_shared", b"0", noreply=False), "set the shared counter")
    before = stats(c)
    errors = []
    threads = [threading.Thread(target=work, args=(host, port, i, errors)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "; ".join(errors))
    total = int(c.get("cores_shared"))
    print("cores_check: %d connections, shared counter %d (expected %d)" % (connections, total, connections * ROUNDS))
    check(total == connections * ROUNDS, "increments lost")

    s = stats(c)
    per_core = [int(x) for x in s["fox_core_connections"].decode().split(",")]
    print("cores_check: threads %d, connections per core %s" % (int(s["threads"]), per_core))
    check(int(s["threads"]) == cores and len(per_core) >= cores, "threads = %s, not %d" % (s["threads"], cores))
    check(all(n > 0 for n in per_core[:cores]), "a core served no connection: %s" % per_core)
    sets = int(s["cmd_set"]) - int(before["cmd_set"])
    gets = int(s["cmd_get"]) - int(before["cmd_get"])
    hits = int(s["get_hits"]) - int(before["get_hits"])
    incrs = int(s["incr_hits"]) - int(before["incr_hits"])
    print("cores_check: counted over the cores: %d sets, %d gets (%d hits), %d incr hits" % (sets, gets, hits, incrs))
    check(sets == connections * ROUNDS, "cmd_set counted %d of %d" % (sets, connections * ROUNDS))
    check(gets == 2 * connections * ROUNDS + 1, "cmd_get counted %d" % gets)  # + the counter's get
    check(hits == gets and incrs == connections * ROUNDS, "hits counted %d, incr hits %d" % (hits, incrs))

    # stats reset (pymemcache waits for an END that RESET never has: a
    # socket of our own): every core's counters start again.
    with socket.create_connection((host, port), timeout=10) as raw:
        raw.sendall(b"stats reset\r\n")
        answer = b""
        while not answer.endswith(b"\r\n"):
            chunk = raw.recv(64)
            check(chunk, "stats reset: connection closed")
            answer += chunk
        check(answer == b"RESET\r\n", "stats reset answered %r" % answer)
    others = [client(host, port) for _ in range(cores)]
    for o in others:
        check(o.get("cores_0_0") == b"v0.0", "get after the reset")
    s = stats(c)
    print("cores_check: after stats reset and %d gets: cmd_get %d, get_hits %d, cmd_set %d" %
          (cores, int(s["cmd_get"]), int(s["get_hits"]), int(s["cmd_set"])))
    check(int(s["cmd_get"]) == cores and int(s["get_hits"]) == cores and int(s["cmd_set"]) == 0, "reset")
    check(int(s["curr_connections"]) >= cores + 1, "curr_connections %s" % s["curr_connections"])
    for o in others:
        o.close()
    c.close()
    print("cores_check: every check holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
