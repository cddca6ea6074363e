#!/usr/bin/env python3
"""icmp_ping.py ADDRESS [--count N] [--interval S] [--deadline S]

ICMP echo from Linux (a raw socket; needs root), for cluster tests run
inside their namespace, so they need no ping package. Sends one echo request
per --interval until --count replies came back or --deadline seconds passed
(the first requests may be lost while ARP resolves). Prints one line per reply
and a summary; exits 0 when --count replies arrived, 1 otherwise, 2 on bad
arguments.
"""
import argparse
import ipaddress
import os
import select
import socket
import struct
import sys
import time


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def echo_request(ident, seq, payload):
    header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    return struct.pack("!BBHHH", 8, 0, checksum(header + payload), ident, seq) + payload


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("--count", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--deadline", type=float, default=10)
    ap.add_argument("--size", type=int, default=56, help="payload bytes")
    args = ap.parse_args()
    try:
        target = str(ipaddress.IPv4Address(args.address))
    except ValueError:
        ap.error("%r is not an IPv4 address" % args.address)
    if args.count < 1 or args.interval <= 0 or args.deadline <= 0 or not 8 <= args.size <= 1400:
        ap.error("--count >= 1, --interval > 0, --deadline > 0 and 8 <= --size <= 1400")
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    except PermissionError:
        print("icmp_ping: a raw ICMP socket needs root (CAP_NET_RAW)", file=sys.stderr)
        return 2
    ident = os.getpid() & 0xFFFF
    payload = bytes(i & 0xFF for i in range(args.size))
    sent_at = {}
    rtts = []
    seq = 0
    start = time.monotonic()
    next_send = start
    while len(rtts) < args.count and time.monotonic() - start < args.deadline:
        now = time.monotonic()
        if now >= next_send:
            seq += 1
            sent_at[seq] = now
            sock.sendto(echo_request(ident, seq, payload), (target, 0))
            next_send = now + args.interval
        ready, _, _ = select.select([sock], [], [], max(0.0, min(next_send, start + args.deadline) - now))
        if not ready:
            continue
        packet, (source, _) = sock.recvfrom(65535)
        ihl = (packet[0] & 0x0F) * 4
        if source != target or len(packet) < ihl + 8:
            continue
        kind, _, _, rid, rseq = struct.unpack_from("!BBHHH", packet, ihl)
        if kind != 0 or rid != ident or rseq not in sent_at:
            continue
        if packet[ihl + 8:] != payload:
            print("icmp_ping: reply %d from %s has a corrupted payload" % (rseq, source))
            continue
        rtt = (time.monotonic() - sent_at.pop(rseq)) * 1000
        rtts.append(rtt)
        print("%d bytes from %s: icmp_seq=%d time=%.3f ms" % (len(packet) - ihl, source, rseq, rtt), flush=True)
    print("icmp_ping: %s: %d requests, %d replies%s" % (
        target, seq, len(rtts), ", rtt min/avg/max %.3f/%.3f/%.3f ms" % (min(rtts), sum(rtts) / len(rtts), max(rtts))
        if rtts else ""))
    return 0 if len(rtts) >= args.count else 1


if __name__ == "__main__":
    sys.exit(main())
