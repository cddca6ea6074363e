#!/usr/bin/env python3
"""TCP echo client for the cluster tests: opens CONNS connections to IP:PORT
at once, sends BYTES random bytes on each (in pieces, reading as it goes),
and checks every byte comes back in order. Exit 0 on success."""
import os
import socket
import sys
import threading

ip, port, conns, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
errors = []


def one(k):
    data = os.urandom(size)
    s = socket.create_connection((ip, port), timeout=30)
    got = bytearray()

    def reader():
        while len(got) < size:
            b = s.recv(65536)
            if not b:
                break
            got.extend(b)
    t = threading.Thread(target=reader)
    t.start()
    for i in range(0, size, 4096):
        s.sendall(data[i:i + 4096])
    t.join(60)
    s.close()
    if bytes(got) != data:
        errors.append("connection %d: %d of %d bytes came back%s" % (k, len(got), size,
                      "" if len(got) != size else " (different)"))


threads = [threading.Thread(target=one, args=(k,)) for k in range(conns)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    print("tcp_echo_client: FAILED: " + "; ".join(errors))
    sys.exit(1)
print("tcp_echo_client: %d connections x %d bytes echoed intact" % (conns, size))
