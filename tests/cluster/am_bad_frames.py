#!/usr/bin/env python3
"""Sends crafted bad active-message frames from Linux to a live fox node.

    am_bad_frames.py NODE_IP NODE_ID --source ID [--job J] [--port P] [--rounds R]

One round is one frame of each kind (net/include/fox/net/am_frame.h): truncated,
oversized-in-header, wrong magic, wrong version, wrong job, wrong destination,
bad payload length, bad MAC, unknown flags, bad message count, record overrun,
bad padding, out-of-window and stale sequence numbers (authenticated with the
job key, as a replaying or confused peer would send), and random bytes.
Frames that need a valid MAC use the development key the nodes derive from the
job id when no fox.key is given (net/am.cc). The node must keep serving good
traffic afterwards, which the cluster test checks with a real peer.
"""
import argparse
import os
import socket
import struct
import sys

MASK = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK


def siphash24(k0, k1, data):
    v0, v1, v2, v3 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rnd():
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & MASK; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
        v2 = (v2 + v3) & MASK; v3 = rotl(v3, 16); v3 ^= v2
        v0 = (v0 + v3) & MASK; v3 = rotl(v3, 21); v3 ^= v0
        v2 = (v2 + v1) & MASK; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v3 ^= m
        rnd(); rnd()
        v0 ^= m
    tail = data[end:] + bytes(7 - n % 8)
    b = (n & 0xFF) << 56 | int.from_bytes(tail[:7], "little")
    v3 ^= b
    rnd(); rnd()
    v0 ^= b
    v2 ^= 0xFF
    rnd(); rnd(); rnd(); rnd()
    return v0 ^ v1 ^ v2 ^ v3


def dev_key(job):
    """The key nodes use without fox.key: SipHash of the job id under a fixed key."""
    dk0, dk1 = 0x666F782D6465762D, 0x6B65792D76312D2D
    h = siphash24(dk0, dk1, struct.pack("<Q", job))
    return h, (~h) & MASK


def frame(key, job, src, dst, seq, ack=0, flags=0, records=None, count=None, version=1, magic=b"FOXA",
          payload_len=None, extra=b"", mac=None, raw=None):
    payload = b"" if raw is None else raw
    n = 0
    for ebb, handler, data, pad in records or []:
        payload += struct.pack("<IHH", ebb, handler, len(data)) + data + pad
        n += 1
    if raw is not None:
        n = 1
    header = bytearray(56)
    header[0:4] = magic
    header[4] = version
    header[5] = flags
    struct.pack_into("<H", header, 6, n if count is None else count)
    struct.pack_into("<QIIIIQHH", header, 8, job, src, dst, seq, ack, 0, 128,
                     len(payload) if payload_len is None else payload_len)
    body = bytes(header) + payload
    tag = siphash24(key[0], key[1], body) if mac is None else mac
    return body[:48] + struct.pack("<Q", tag) + body[56:] + extra


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ip")
    ap.add_argument("node", type=int)
    ap.add_argument("--source", type=int, required=True, help="a node id the target knows as a peer")
    ap.add_argument("--job", type=int, default=1)
    ap.add_argument("--port", type=int, default=7700)
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    key = dev_key(a.job)
    msg = [(0xA70001, 1, b"12345678", b"")]
    good = dict(key=key, job=a.job, src=a.source, dst=a.node)
    kinds = {
        "truncated": lambda r: frame(seq=r, records=msg, **good)[:40],
        "payload_length_past_end": lambda r: frame(seq=r, records=msg, payload_len=1000, **good),
        "bad_magic": lambda r: frame(seq=r, records=msg, magic=b"XXXX", **good),
        "bad_version": lambda r: frame(seq=r, records=msg, version=9, **good),
        "wrong_job": lambda r: frame(key=key, job=a.job + 1, src=a.source, dst=a.node, seq=r, records=msg),
        "wrong_destination": lambda r: frame(key=key, job=a.job, src=a.source, dst=a.node + 1000, seq=r, records=msg),
        "bad_length": lambda r: frame(seq=r, records=msg, extra=b"\0" * 8, **good),
        "bad_mac": lambda r: frame(seq=r, records=msg, mac=0x1234567890ABCDEF ^ r, **good),
        "bad_flags": lambda r: frame(seq=r, records=msg, flags=0x80, **good),
        "bad_count": lambda r: frame(seq=r, records=msg, count=3, **good),
        "record_overrun": lambda r: frame(seq=r, raw=struct.pack("<IHH", 0xA70001, 1, 200) + b"12345678",
                                          count=1, **good),
        "bad_padding": lambda r: frame(seq=r, records=[(0xA70001, 1, b"123", b"\1\0\0\0\0")], **good),
        "out_of_window": lambda r: frame(seq=100000 + r, records=msg, **good),
        "stale": lambda r: frame(seq=(1 << 31) + r, records=msg, **good),
        "random": lambda r: os.urandom(64 + r * 37 % 1200),
    }
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0
    for r in range(a.rounds):
        for name, make in kinds.items():
            s.sendto(make(r), (a.ip, a.port))
            sent += 1
    print("am_bad_frames: sent %d bad frames (%d kinds x %d rounds) to node %d at %s:%d"
          % (sent, len(kinds), a.rounds, a.node, a.ip, a.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
