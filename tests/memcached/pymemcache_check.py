#!/usr/bin/env python3
"""What an application does with pymemcache (text protocol), checked against a
memcached-protocol server (127.0.0.1 unless HOST is given).

Usage: pymemcache_check.py PORT [HOST]. Exits 0 when every check holds; the same
checks pass against memcached itself (conformance.py reference).
"""
import sys

from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheServerError


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def main():
    port = int(sys.argv[1])
    host = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
    c = Client((host, port), connect_timeout=5, timeout=10)
    checks = 0

    def ok(condition, what):
        nonlocal checks
        check(condition, what)
        checks += 1

    ok(c.flush_all(noreply=False), "flush_all")
    # Storage, with and without noreply (pymemcache's default is noreply).
    ok(c.set("k1", b"v1") is True, "set noreply")
    ok(c.get("k1") == b"v1", "get")
    ok(c.get("missing") is None, "get miss")
    ok(c.set("k1", b"v1", noreply=False) is True, "set")
    ok(c.add("k1", b"x", noreply=False) is False, "add existing")
    ok(c.add("k2", b"two", noreply=False) is True, "add new")
    ok(c.replace("k2", b"2", noreply=False) is True, "replace existing")
    ok(c.replace("k3", b"3", noreply=False) is False, "replace missing")
    ok(c.append("k1", b"+", noreply=False) is True, "append")
    ok(c.prepend("k1", b"-", noreply=False) is True, "prepend")
    ok(c.append("k3", b"+", noreply=False) is False, "append missing")
    ok(c.get("k1") == b"-v1+", "append and prepend")
    ok(c.get_many(["k1", "k2", "nope"]) == {"k1": b"-v1+", "k2": b"2"}, "get_many")
    # Flags round trip (pymemcache's serde uses them; here raw).
    ok(c.set("flagged", b"f", flags=1234, noreply=False), "set flags")
    ok(c.get("flagged", default=None) == b"f", "get flagged")
    # CAS, between two connections.
    other = Client((host, port), connect_timeout=5, timeout=10)
    value, cas = c.gets("k1")
    ok(value == b"-v1+" and cas is not None, "gets")
    ok(other.gets("k1") == (value, cas), "gets from another connection")
    ok(other.cas("k1", b"theirs", cas, noreply=False) is True, "cas")
    ok(c.cas("k1", b"mine", cas, noreply=False) is False, "cas lost the race")
    ok(c.cas("absent", b"x", cas, noreply=False) is None, "cas missing")
    ok(c.get("k1") == b"theirs", "cas winner")
    other.close()
    # incr/decr.
    c.set("n", b"10")
    ok(c.incr("n", 5) == 15, "incr")
    ok(c.decr("n", 20) == 0, "decr floors at 0")
    ok(c.incr("n", 2**64 - 1) == 2**64 - 1, "incr to the top")
    ok(c.incr("n", 2) == 1, "incr wraps")
    ok(c.incr("absent", 1) is None, "incr missing")
    c.set("text", b"abc")
    try:
        c.incr("text", 1)
        ok(False, "incr of a non-number")
    except Exception as e:  # MemcacheClientError: CLIENT_ERROR cannot increment...
        ok("non-numeric" in str(e) or "cannot" in str(e), f"incr of a non-number: {e}")
    # touch, gat, gats, expiry.
    ok(c.touch("n", 100, noreply=False) is True, "touch")
    ok(c.touch("absent", 100, noreply=False) is False, "touch missing")
    if hasattr(c, "gat"):  # pymemcache 4; Debian 12 has 3.5 (differential.py covers gat)
        ok(c.gat(100, "n").rstrip() == b"1", "gat")
        value, cas = c.gats(100, "n")
        ok(value.rstrip() == b"1" and cas is not None, "gats")
    many = c.gets_many(["n", "k2", "absent"])
    # memcached may pad a number that got shorter with spaces (protocol.txt)
    ok(set(many) == {"n", "k2"} and many["n"][0].rstrip() == b"1", "gets_many")
    c.set("gone", b"soon", expire=-1)
    ok(c.get("gone") is None, "already expired")
    # delete, delete_many.
    ok(c.delete("n", noreply=False) is True, "delete")
    ok(c.delete("n", noreply=False) is False, "delete missing")
    c.set_many({"d1": b"1", "d2": b"2"})
    ok(c.delete_many(["d1", "d2"]) is True, "delete_many")
    ok(c.get_many(["d1", "d2"]) == {}, "deleted")
    # A large multiget: one line of 400 keys, over 2 KiB.
    keys = [f"many-keys-{i:04d}" for i in range(400)]
    ok(c.set_many({k: k.encode() for k in keys}, noreply=False) == [], "set_many")
    got = c.get_many(keys + ["many-keys-absent"])
    ok(got == {k: k.encode() for k in keys}, f"get_many of 400 keys ({len(got)} returned)")
    # Values: binary bytes, large, too large.
    blob = bytes(range(256)) * 16 + b"\r\nEND\r\n"
    ok(c.set("blob", blob, noreply=False) and c.get("blob") == blob, "binary value")
    big = b"x" * 1000000
    ok(c.set("big", big, noreply=False) is True, "1 MB value")
    ok(c.get("big") == big, "1 MB value read back")
    try:
        c.set("big", b"y" * (2 << 20), noreply=False)
        ok(False, "2 MiB value refused")
    except MemcacheServerError as e:
        ok("too large" in str(e), f"2 MiB value: {e}")
    c.close()  # pymemcache drops the connection after an error; a fresh one
    ok(c.get("big") is None, "a refused set removes the old value")
    ok(c.set("after", b"ok", noreply=False) and c.get("after") == b"ok", "the server goes on")
    # stats, version, delayed flush.
    stats = c.stats()
    for name in (b"uptime", b"time", b"version", b"curr_items", b"total_items", b"bytes", b"cmd_get", b"cmd_set",
                 b"get_hits", b"get_misses", b"curr_connections"):
        ok(name in stats, f"stat {name}")
    ok(stats[b"curr_items"] >= 400, "curr_items")
    ok(c.version(), "version")
    ok(c.flush_all(noreply=False), "flush_all")
    ok(c.get("after") is None, "flushed")
    c.quit()
    print(f"pymemcache: {checks} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
