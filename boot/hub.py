#!/usr/bin/env python3
"""hub.py: a userspace Ethernet switch that impairs traffic, for cluster tests.

    hub.py --ports N [--base-port P] [--tap NAME --tap-addr A.B.C.D/NN]
           [--loss PCT] [--dup PCT] [--reorder PCT] [--delay MS] [--jitter MS]
           [--impair-udp-port PORT] [--seed N] [--stats-json FILE]

It stands in for `tc netem` on kernels without sch_netem, and runs inside the
test's network namespace (its loopback is private to the namespace, so fixed
port numbers collide with nobody).

Ports. Port i (0 <= i < N) is a QEMU node attached with
    -netdev dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=P+2i+1,
            remote.type=inet,remote.host=127.0.0.1,remote.port=P+2i
i.e. the hub listens on 127.0.0.1:P+2i and sends that node's frames to
127.0.0.1:P+2i+1. With --tap, one more port (number N) is a tap device the hub
creates through /dev/net/tun (IFF_TAP|IFF_NO_PI) and gives the address
--tap-addr, so Linux processes in the namespace talk to the nodes. The tap
disappears when the hub exits.

Switching. The hub learns source MACs and forwards unicast frames to the
port that owns the destination; broadcast, multicast and unknown destinations
are flooded to every other port. Frames shorter than an Ethernet header or
longer than 65535 bytes are counted as bad and dropped.

Impairments apply to every frame copy leaving the hub towards any port (so
between any two ports), each decided independently from one seeded random
generator: --loss drops it; --dup sends it twice; --reorder holds it back
until the next frame to the same port has gone out (or 20 ms have passed, then
it is only late); --delay/--jitter delays it by DELAY +- uniform(JITTER) ms.
With --impair-udp-port, only IPv4 UDP datagrams from or to that port are
impaired; ARP, ICMP and other traffic pass untouched.

Output. "hub: ready ..." on stdout once every socket is bound and the tap is
up. On SIGTERM/SIGINT (or when its parent dies: PR_SET_PDEATHSIG) it prints
one counter line per port and a total, writes them as JSON to --stats-json if
given, and exits 0.
"""
import argparse
import ctypes
import fcntl
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import List, Union

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
PR_SET_PDEATHSIG = 1
MAX_FRAME = 65535
REORDER_HOLD_S = 0.020
COUNTERS = ("rx", "tx", "flooded", "dropped", "duplicated", "reordered", "delayed", "bad", "send_errors")


class Port:
    def __init__(self, index, name):
        self.index = index
        self.name = name
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.held = None  # frame held back for reordering: (deadline, frame, overtaken)

    def send(self, frame):
        raise NotImplementedError


class UdpPort(Port):
    def __init__(self, index, listen_port, peer_port):
        super().__init__(index, "node %d" % index)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.setblocking(False)
        self.peer = ("127.0.0.1", peer_port)

    def fileno(self):
        return self.sock.fileno()

    def receive(self):
        data, _ = self.sock.recvfrom(MAX_FRAME + 1)
        return data

    def send(self, frame):
        self.sock.sendto(frame, self.peer)


class TapPort(Port):
    def __init__(self, index, ifname, address):
        super().__init__(index, "tap %s" % ifname)
        self.fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        ifr = struct.pack("16sH22x", ifname.encode(), IFF_TAP | IFF_NO_PI)
        fcntl.ioctl(self.fd, TUNSETIFF, ifr)
        # Quiet the tap: no IPv6 autoconfiguration chatter through the hub.
        try:
            with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % ifname, "w") as f:
                f.write("1")
        except OSError:
            pass
        cmds = [["ip", "addr", "add", address, "dev", ifname]] if address else []  # None: a bridge port
        for cmd in cmds + [["ip", "link", "set", ifname, "up"]]:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise OSError("%s: %s" % (" ".join(cmd), r.stderr.strip()))

    def fileno(self):
        return self.fd

    def receive(self):
        return os.read(self.fd, MAX_FRAME + 1)

    def send(self, frame):
        os.write(self.fd, frame)


def udp_ports_of(frame):
    """(source, destination) UDP ports of an IPv4 UDP frame, else None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    if frame[14] >> 4 != 4 or ihl < 20 or frame[23] != 17 or len(frame) < 14 + ihl + 8:
        return None
    if struct.unpack_from("!H", frame, 20)[0] & 0x1FFF:  # a later fragment: no UDP header
        return None
    return struct.unpack_from("!HH", frame, 14 + ihl)


class Hub:
    NAME = "hub"  # in messages

    def __init__(self, args, ports):
        self.args = args
        self.ports = ports
        self.rng = random.Random(args.seed)
        self.macs = {}  # MAC bytes -> port index
        self.timers = []  # heap of (due, seq, port index, frame)
        self.seq = 0

    def impaired(self, frame):
        if self.args.impair_udp_port is None:
            return True
        udp = udp_ports_of(frame)
        return udp is not None and self.args.impair_udp_port in udp

    def on_frame(self, src, frame):
        src.counters["rx"] += 1
        if len(frame) < 14 or len(frame) > MAX_FRAME:
            src.counters["bad"] += 1
            return
        dst_mac, src_mac = frame[0:6], frame[6:12]
        if not src_mac[0] & 1:  # a unicast source: learn where it lives
            self.macs[src_mac] = src.index
        out = self.macs.get(dst_mac) if not dst_mac[0] & 1 else None
        if out is not None:
            if out != src.index:
                self.egress(self.ports[out], frame)
            return
        for port in self.ports:
            if port is not src:
                port.counters["flooded"] += 1
                self.egress(port, frame)

    def egress(self, port, frame):
        a = self.args
        if not self.impaired(frame):
            self.transmit(port, frame)
            return
        if a.loss and self.rng.random() * 100 < a.loss:
            port.counters["dropped"] += 1
            return
        copies = 1
        if a.dup and self.rng.random() * 100 < a.dup:
            port.counters["duplicated"] += 1
            copies = 2
        for _ in range(copies):
            delay = a.delay
            if a.jitter:
                delay += self.rng.uniform(-a.jitter, a.jitter)
            if delay > 0:
                port.counters["delayed"] += 1
                self.seq += 1
                heapq.heappush(self.timers, (time.monotonic() + delay / 1000.0, self.seq, port.index, frame))
            else:
                self.release(port, frame)

    def release(self, port, frame):
        """The reorder stage, last before the wire."""
        if self.args.reorder and port.held is None and self.impaired(frame) and \
                self.rng.random() * 100 < self.args.reorder:
            port.held = [time.monotonic() + REORDER_HOLD_S, frame, False]
            return
        self.transmit(port, frame)
        if port.held is not None:  # this frame overtook the held one
            held, port.held = port.held, None
            port.counters["reordered"] += 1
            self.transmit(port, held[1])

    def transmit(self, port, frame):
        try:
            port.send(frame)
            port.counters["tx"] += 1
        except OSError:
            port.counters["send_errors"] += 1

    def expire(self, now):
        while self.timers and self.timers[0][0] <= now:
            _, _, index, frame = heapq.heappop(self.timers)
            self.release(self.ports[index], frame)
        for port in self.ports:
            if port.held is not None and port.held[0] <= now:
                frame, port.held = port.held[1], None
                self.transmit(port, frame)

    def next_deadline(self):
        due = [self.timers[0][0]] if self.timers else []
        due += [p.held[0] for p in self.ports if p.held is not None]
        return min(due) if due else None

    def drain(self, port):
        """Takes a burst of frames from `port`, bounded so that timers stay on time."""
        for _ in range(64):
            try:
                frame = port.receive()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                port.counters["bad"] += 1
                return
            try:
                self.on_frame(port, frame)
            except Exception as e:  # a bad frame never stops the hub
                port.counters["bad"] += 1
                print("%s: frame from %s: %r" % (self.NAME, port.name, e), file=sys.stderr)

    def run(self, stop):
        poller = select.poll()
        by_fd = {}
        for port in self.ports:
            poller.register(port.fileno(), select.POLLIN)
            by_fd[port.fileno()] = port
        while not stop["now"]:
            deadline = self.next_deadline()
            timeout = 500 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000) + 1)
            try:
                events = poller.poll(min(timeout, 500))
            except InterruptedError:
                continue
            for fd, _ in events:
                self.drain(by_fd[fd])
            self.expire(time.monotonic())

    def report(self):
        total = dict.fromkeys(COUNTERS, 0)
        lines = []
        for port in self.ports:
            for k in COUNTERS:
                total[k] += port.counters[k]
            lines.append("hub: port %d (%s): %s" % (port.index, port.name,
                                                    " ".join("%s %d" % (k, port.counters[k]) for k in COUNTERS)))
        lines.append("hub: total: " + " ".join("%s %d" % (k, total[k]) for k in COUNTERS))
        return lines, total


def percent(text):
    value = float(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("%s is not a percentage from 0 to 100" % text)
    return value


def non_negative(text):
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("%s is negative" % text)
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ports", type=int, required=True, help="number of QEMU (UDP) ports")
    ap.add_argument("--base-port", type=int, default=40000)
    ap.add_argument("--tap", help="also create this tap device as one more port")
    ap.add_argument("--tap-addr", default="10.77.0.1/24")
    ap.add_argument("--loss", type=percent, default=0.0)
    ap.add_argument("--dup", type=percent, default=0.0)
    ap.add_argument("--reorder", type=percent, default=0.0)
    ap.add_argument("--delay", type=non_negative, default=0.0, help="ms")
    ap.add_argument("--jitter", type=non_negative, default=0.0, help="ms, uniform +-")
    ap.add_argument("--impair-udp-port", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stats-json")
    args = ap.parse_args()
    if not 1 <= args.ports <= 250:
        ap.error("--ports must be from 1 to 250")
    if not 1024 <= args.base_port <= 65535 - 2 * args.ports:
        ap.error("--base-port must leave room for 2 UDP ports per node below 65536")
    if args.jitter > args.delay:
        ap.error("--jitter must not exceed --delay (a frame cannot leave before it arrived)")
    if args.impair_udp_port is not None and not 0 < args.impair_udp_port < 65536:
        ap.error("--impair-udp-port must be from 1 to 65535")

    # Die with the harness: SIGTERM when the parent goes (then counters print).
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent or parent == 1:
        return 1

    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        ports: List[Union[UdpPort, TapPort]] = [UdpPort(i, args.base_port + 2 * i, args.base_port + 2 * i + 1)
                                                for i in range(args.ports)]
        if args.tap:
            ports.append(TapPort(args.ports, args.tap, args.tap_addr))
    except OSError as e:
        print("hub: cannot set up its ports: %s" % e, file=sys.stderr)
        return 1
    hub = Hub(args, ports)
    print("hub: ready, %d ports (base %d%s), loss %g%% dup %g%% reorder %g%% delay %g+-%g ms%s, seed %d" % (
        len(ports), args.base_port, ", tap %s %s" % (args.tap, args.tap_addr) if args.tap else "", args.loss,
        args.dup, args.reorder, args.delay, args.jitter,
        ", only UDP port %d" % args.impair_udp_port if args.impair_udp_port is not None else "", args.seed),
        flush=True)
    hub.run(stop)
    lines, total = hub.report()
    print("\n".join(lines), flush=True)
    if args.stats_json:
        with open(args.stats_json, "w") as f:
            json.dump({"total": total, "ports": [dict(p.counters, name=p.name) for p in ports]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
