#!/usr/bin/env python3
"""A minimal DHCP server for the cluster tests (run inside the namespace).

    dhcp_server.py IFACE [--count N] [--timeout S]

Answers DHCPDISCOVER with an OFFER and DHCPREQUEST with an ACK on IFACE,
giving the node whose MAC is 52:54:00:77:00:II the address of the cluster's
plan (boot/cluster.py: 10.77.0.(10+II)/24), router and server 10.77.0.1,
lease one hour. Exits 0 after N ACKs (default: 1), 1 on timeout. Anything
that is not a well-formed BOOTREQUEST is ignored.
"""
import argparse
import socket
import struct
import sys
import time

SERVER = "10.77.0.1"
MAGIC = b"\x63\x82\x53\x63"


def options(data):
    out, i = {}, 0
    while i < len(data):
        code = data[i]
        if code == 255:
            break
        if code == 0:
            i += 1
            continue
        if i + 1 >= len(data):
            break
        n = data[i + 1]
        out[code] = data[i + 2:i + 2 + n]
        i += 2 + n
    return out


def reply(req, kind, yiaddr):
    xid, flags, chaddr = req[4:8], req[10:12], req[28:44]
    head = struct.pack("!BBBB", 2, 1, 6, 0) + xid + b"\0\0" + flags + b"\0" * 4 + socket.inet_aton(yiaddr) \
        + socket.inet_aton(SERVER) + b"\0" * 4 + chaddr + b"\0" * 192
    opts = bytes([53, 1, kind]) + bytes([54, 4]) + socket.inet_aton(SERVER) + bytes([51, 4]) + struct.pack("!I", 3600) \
        + bytes([1, 4]) + socket.inet_aton("255.255.255.0") + bytes([3, 4]) + socket.inet_aton(SERVER) + b"\xff"
    return head + MAGIC + opts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("iface")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, a.iface.encode())
    s.bind(("0.0.0.0", 67))
    deadline = time.monotonic() + a.timeout
    acks = 0
    while acks < a.count:
        left = deadline - time.monotonic()
        if left <= 0:
            print("dhcp_server: timed out after %d of %d leases" % (acks, a.count))
            return 1
        s.settimeout(left)
        try:
            req, _ = s.recvfrom(2048)
        except socket.timeout:
            continue
        if len(req) < 240 or req[0] != 1 or req[236:240] != MAGIC or req[1:3] != b"\x01\x06":
            continue
        mac = req[28:34]
        if mac[:5] != bytes([0x52, 0x54, 0x00, 0x77, 0x00]):
            continue
        ip = "10.77.0.%d" % (10 + mac[5])
        kind = options(req[240:]).get(53, b"\0")[0]
        if kind == 1:  # DISCOVER
            s.sendto(reply(req, 2, ip), ("255.255.255.255", 68))
            print("dhcp_server: offered %s to %s" % (ip, mac.hex(":")))
        elif kind == 3:  # REQUEST
            s.sendto(reply(req, 5, ip), ("255.255.255.255", 68))
            acks += 1
            print("dhcp_server: leased %s to %s" % (ip, mac.hex(":")))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
