#!/usr/bin/env python3
"""The supervisor's HTTP port (boot/fox/web.py) against clients good and bad, without a cluster.

    web_server.py

A Server on 127.0.0.1 (a port of its own) in a selector loop on a thread, as the supervisor
runs it, with a route that answers /hello and raises on /bug. Checked:
  - GET and HEAD of a page (status, headers, body; HEAD without the body) through urllib;
  - query parameters reach the route;
  - 404 for an unknown page, 405 for POST, 400 for a malformed request line and for HTTP/2,
    431 for a request over 8 KiB, 500 (not the loop's end) for a route that raises;
  - a client that sends half a request and stays does not stop others being served, and is
    closed by sweep() once older than web.TIMEOUT_S (made short here);
  - more clients than MAX_CONNECTIONS at once: the extra ones are closed, the loop serves on;
  - stop() closes the port.
Exits 1 naming the first check that fails.
"""
import os
import selectors
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "boot"))
from fox import web  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frontend_test import Failure, check  # noqa: E402


def route(path, query):
    if path == "/hello":
        return 200, "text/plain", ("hello %s\n" % query.get("who", "you")).encode()
    if path == "/bug":
        raise RuntimeError("a bug")
    return 404, "text/plain", b"no\n"


def raw(port, data, read=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    if not read:
        return s
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    return out


def status_of(reply):
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else None


def main():
    web.TIMEOUT_S = 1.0
    sel = selectors.DefaultSelector()
    server = web.Server(sel, "127.0.0.1", 0, route)
    port = server.address[1]
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            for key, _ in sel.select(0.05):
                key.data()
            server.sweep()
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    base = server.url()
    try:
        with urllib.request.urlopen(base + "hello?who=fox", timeout=5) as r:
            body = r.read()
            check(r.status == 200 and body == b"hello fox\n" and r.headers["Content-Type"] == "text/plain"
                  and r.headers["Content-Length"] == "10", "GET with a query: %r" % body)
        with urllib.request.urlopen(urllib.request.Request(base + "hello", method="HEAD"), timeout=5) as r:
            check(r.status == 200 and r.read() == b"" and r.headers["Content-Length"] == "10",
                  "HEAD: the headers without the body")
        for path, method, want in (("nothing", "GET", 404), ("hello", "POST", 405), ("bug", "GET", 500)):
            try:
                urllib.request.urlopen(urllib.request.Request(base + path, method=method, data=b"x" if method ==
                                                              "POST" else None), timeout=5)
                raise Failure("%s /%s answered 200" % (method, path))
            except urllib.error.HTTPError as e:
                check(e.code == want, "%s /%s: %d" % (method, path, e.code))
        check(status_of(raw(port, b"NONSENSE\r\n\r\n")) == 400, "a malformed request line: 400")
        check(status_of(raw(port, b"GET / HTTP/2.0\r\n\r\n")) == 400, "HTTP/2 in the request line: 400")
        check(status_of(raw(port, b"GET /hello HTTP/1.1\r\nX: " + b"a" * 9000)) == 431,
              "a request head over 8 KiB: 431")
        slow = raw(port, b"GET /hello HTTP/1.1\r\nHost: x\r\n", read=False)
        with urllib.request.urlopen(base + "hello", timeout=5) as r:
            check(r.status == 200, "served while another client sent half a request")
        time.sleep(web.TIMEOUT_S + 0.5)
        slow.settimeout(5)
        check(slow.recv(100) == b"", "the half request's connection closed by sweep() after TIMEOUT_S")
        slow.close()
        many = [raw(port, b"GET /hel", read=False) for _ in range(web.MAX_CONNECTIONS + 8)]
        closed = 0
        for s in many[web.MAX_CONNECTIONS:]:
            s.settimeout(5)
            try:
                closed += s.recv(10) == b""
            except OSError:
                closed += 1
        check(closed == 8, "clients beyond %d at once closed (%d of 8)" % (web.MAX_CONNECTIONS, closed))
        for s in many:
            s.close()
        time.sleep(0.3)
        with urllib.request.urlopen(base + "hello", timeout=5) as r:
            check(r.status == 200, "served again once they went")
        stop.set()
        thread.join(timeout=5)
        server.stop()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            raise Failure("the port still accepts after stop()")
        except ConnectionRefusedError:
            check(True, "stop() closed the port")
    except (Failure, OSError) as e:
        print("FAILED: %s" % e)
        return 1
    finally:
        stop.set()
    print("web_server: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
