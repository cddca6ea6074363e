"""The supervisor's HTTP port: a small HTTP/1.1 server inside its selector loop.

    server = web.Server(selector, "127.0.0.1", 0, route)
    ...
    server.sweep()   # now and then: connections older than TIMEOUT_S are closed

`route(path, query)` gets the request's path and its query parameters (a
dict of the last value of each) and returns (status, content type, body
bytes). One request per connection (the reply says Connection: close);
GET and HEAD only. Nothing a client sends can stop the loop: requests are
read and replies written without blocking, a request longer than
MAX_REQUEST_BYTES is answered 431, a malformed one 400, a connection idle
or slow for TIMEOUT_S is closed, and at most MAX_CONNECTIONS are open.
"""
import selectors
import socket
import time
import urllib.parse

MAX_REQUEST_BYTES = 8192
MAX_CONNECTIONS = 64
TIMEOUT_S = 10
REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}


class Connection:
    def __init__(self, sock):
        self.sock = sock
        self.since = time.monotonic()
        self.request = b""
        self.reply = None  # bytes left to send, once the request was read


class Server:
    def __init__(self, sel, host, port, route):
        self.sel = sel
        self.route = route
        self.listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(32)
        self.listener.setblocking(False)
        self.address = self.listener.getsockname()[:2]
        self.connections = {}
        sel.register(self.listener, selectors.EVENT_READ, self.on_accept)

    def url(self):
        host, port = self.address
        return "http://%s:%d/" % ("[%s]" % host if ":" in host else host, port)

    def on_accept(self):
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        if len(self.connections) >= MAX_CONNECTIONS:
            self.sweep()
        if len(self.connections) >= MAX_CONNECTIONS:
            sock.close()
            return
        sock.setblocking(False)
        c = Connection(sock)
        self.connections[sock] = c
        self.sel.register(sock, selectors.EVENT_READ, lambda: self.on_readable(c))

    def on_readable(self, c):
        try:
            data = c.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self.close(c)
        if not data:
            return self.close(c)
        c.request += data
        end = c.request.find(b"\r\n\r\n")
        if end < 0:
            if len(c.request) > MAX_REQUEST_BYTES:
                self.answer(c, "GET", 431, "text/plain", b"request too long\n")
            return
        self.answer(c, *self.respond(c.request[:end]))

    def respond(self, head):
        """(method, status, content type, body) for a request's head."""
        try:
            method, target, version = head.split(b"\r\n", 1)[0].decode("ascii").split(" ")
        except (UnicodeDecodeError, ValueError):
            return "GET", 400, "text/plain", b"malformed request line\n"
        if not version.startswith("HTTP/1."):
            return "GET", 400, "text/plain", b"HTTP/1.x only\n"
        if method not in ("GET", "HEAD"):
            return "GET", 405, "text/plain", b"GET or HEAD only\n"
        parts = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(parts.query))
        try:
            status, content_type, body = self.route(parts.path, query)
        except Exception as e:  # a bug of a page must not end the supervisor
            status, content_type, body = 500, "text/plain", ("error: %s\n" % e).encode()
        return method, status, content_type, body

    def answer(self, c, method, status, content_type, body):
        head = ("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nCache-Control: no-store\r\n"
                "Connection: close\r\n\r\n" % (status, REASONS.get(status, ""), content_type, len(body)))
        c.reply = head.encode() + (body if method != "HEAD" else b"")
        self.sel.modify(c.sock, selectors.EVENT_WRITE, lambda: self.on_writable(c))
        self.on_writable(c)

    def on_writable(self, c):
        try:
            sent = c.sock.send(c.reply)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self.close(c)
        c.reply = c.reply[sent:]
        if not c.reply:
            self.close(c)

    def close(self, c):
        if self.connections.pop(c.sock, None) is None:
            return
        self.sel.unregister(c.sock)
        c.sock.close()

    def sweep(self):
        now = time.monotonic()
        for c in [c for c in self.connections.values() if now - c.since > TIMEOUT_S]:
            self.close(c)

    def stop(self):
        for c in list(self.connections.values()):
            self.close(c)
        self.sel.unregister(self.listener)
        self.listener.close()
