"""A TCP sink for the tcp benchmark (run inside the cluster's namespace):
accepts one connection on PORT, reads until EOF, prints the byte count and
the rate measured from the first byte to EOF."""
import socket
import sys
import time

port = int(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.1", port))
s.listen(1)
s.settimeout(120)
c, _ = s.accept()
total, t0 = 0, None
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    if t0 is None:
        t0 = time.monotonic()
    total += len(b)
dt = time.monotonic() - (t0 or time.monotonic())
print("tcp_sink: received %d bytes in %.3f s: %.1f MiB/s" % (total, dt, total / (1 << 20) / dt if dt else 0))
