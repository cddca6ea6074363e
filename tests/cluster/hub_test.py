#!/usr/bin/env python3
"""Self-test of boot/hub.py without QEMU: fake nodes are UDP sockets on the
loopback (no tap, no root needed). Checks learning, flooding, bad frames,
each impairment, the UDP-port filter, the counters printed on SIGTERM and the
exit when the parent dies. Exit 0 when all hold.
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

HUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot", "hub.py")
BCAST = b"\xff" * 6
failures = []


def mac(i):
    return bytes([0x52, 0x54, 0, 0x77, 0, i])


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAILED", what))
    if not cond:
        failures.append(what)


class Hub:
    def __init__(self, ports, *extra):
        self.base = random.randrange(20000, 60000, 2)
        fd, self.stats = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        self.proc = subprocess.Popen([sys.executable, HUB, "--ports", str(ports), "--base-port", str(self.base),
                                      "--stats-json", self.stats] + list(extra), stdout=subprocess.PIPE, text=True)
        self.ready = self.proc.stdout.readline()
        self.socks = []
        for i in range(ports):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            # Room for a whole burst (300 small frames take ~256 KiB of the
            # default buffer): a loaded machine may not read them as they come.
            try:  # past net.core.rmem_max when root; else as much as it allows
                s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE (Linux)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind(("127.0.0.1", self.base + 2 * i + 1))
            s.settimeout(0.3)
            self.socks.append(s)

    def send(self, i, frame):
        self.socks[i].sendto(frame, ("127.0.0.1", self.base + 2 * i))

    def drain(self, i):
        got = []
        try:
            while True:
                got.append(self.socks[i].recv(70000))
        except socket.timeout:
            return got

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        out = self.proc.communicate(timeout=10)[0]
        with open(self.stats) as f:
            stats = json.load(f)
        os.unlink(self.stats)
        for s in self.socks:
            s.close()
        return self.proc.returncode, out, stats


def frame(dst, src, n, ethertype=b"\x88\xb5"):
    return dst + src + ethertype + n.to_bytes(4, "big") + b"\0" * 42


def udp_frame(dst, src, sport, dport):
    ip = bytes([0x45, 0, 0, 36, 0, 0, 0, 0, 64, 17, 0, 0, 10, 77, 0, 10, 10, 77, 0, 11])
    return dst + src + b"\x08\x00" + ip + sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + b"\0\x10\0\0" + b"x" * 8


def test_switching():
    h = Hub(3)
    check(h.ready.startswith("hub: ready"), "hub starts: %r" % h.ready.strip())
    h.send(0, frame(BCAST, mac(0), 1))
    check(len(h.drain(1)) == 1 and len(h.drain(2)) == 1 and not h.drain(0), "broadcast floods to the other ports")
    h.send(1, frame(mac(0), mac(1), 2))
    check(len(h.drain(0)) == 1 and not h.drain(2), "a learned MAC gets unicast only")
    h.send(0, frame(mac(1), mac(0), 3))
    check(len(h.drain(1)) == 1 and not h.drain(2), "and back")
    h.send(2, b"tiny")
    h.send(2, b"")
    h.send(0, frame(mac(9), mac(0), 4))
    check(len(h.drain(1)) == 1 and len(h.drain(2)) == 1, "an unknown destination floods; bad frames change nothing")
    rng = random.Random(1)
    for k in range(300):  # garbage of every length, broadcast and unicast alike
        h.send(k % 3, bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 13, 14, 15, 60, 1500, 9000]))))
    for k in range(3):
        h.drain(k)
    h.send(0, frame(BCAST, mac(0), 5))
    check(h.proc.poll() is None and len(h.drain(1)) == 1, "300 random frames later the hub still switches")
    rc, out, stats = h.stop()
    check(rc == 0 and "hub: total: rx 307" in out, "SIGTERM: exit 0 and counters printed")
    check(stats["total"]["bad"] >= 2 and stats["total"]["dropped"] == 0, "bad frames counted: %s" % stats["total"])


def burst(h, n, make=None):
    for k in range(n):
        h.send(0, make(k) if make else frame(mac(1), mac(0), k))
        if k % 50 == 0:
            time.sleep(0.01)
    return h.drain(1)


def test_impairments():
    h = Hub(2, "--loss", "100")
    h.send(1, frame(BCAST, mac(1), 0))
    check(len(burst(h, 50)) == 0, "loss 100% drops everything")
    _, _, stats = h.stop()
    check(stats["ports"][1]["dropped"] == 50, "and counts it")

    h = Hub(2, "--dup", "100")
    h.send(1, frame(BCAST, mac(1), 0))
    h.drain(0)
    check(len(burst(h, 50)) == 100, "dup 100% sends every frame twice")
    h.stop()

    h = Hub(2, "--reorder", "30", "--seed", "5")
    h.send(1, frame(BCAST, mac(1), 0))
    frames = burst(h, 300)
    deadline = time.monotonic() + 5  # a loaded machine may hold the last ones back a while
    while len(frames) < 300 and time.monotonic() < deadline:
        frames += h.drain(1)
    got = [int.from_bytes(f[14:18], "big") for f in frames]
    _, _, stats = h.stop()
    inversions = sum(1 for a, b in zip(got, got[1:]) if b < a)
    check(sorted(got) == list(range(300)) and inversions > 20 and stats["ports"][1]["reordered"] > 20,
          "reorder: all 300 arrive (%d did), %d out of order, %d counted"
          % (len(got), inversions, stats["ports"][1]["reordered"]))

    h = Hub(2, "--delay", "50")
    h.send(1, frame(BCAST, mac(1), 0))
    t0 = time.monotonic()
    h.send(0, frame(mac(1), mac(0), 1))
    h.socks[1].settimeout(2)
    h.socks[1].recv(2000)
    dt = time.monotonic() - t0
    h.stop()
    check(0.045 <= dt < 1.0, "delay 50 ms: arrived after %.1f ms" % (dt * 1000))

    h = Hub(2, "--loss", "100", "--impair-udp-port", "7000")
    h.send(1, frame(BCAST, mac(1), 0))
    got = burst(h, 40, lambda k: udp_frame(mac(1), mac(0), 5000, 7000 if k % 2 else 6000))
    check(len(got) == 20 and all(f[36:38] == (6000).to_bytes(2, "big") for f in got),
          "--impair-udp-port: only UDP to/from that port is impaired")
    h.stop()


def test_parent_death():
    # A middle process starts the hub and dies: the hub must go too.
    base = random.randrange(20000, 60000, 2)
    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, %r, '--ports', '1', '--base-port', "
            "'%d']); print(p.pid, flush=True); time.sleep(1.0)" % (HUB, base))
    middle = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(middle.stdout.readline())
    middle.wait()
    gone = False
    for _ in range(50):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().split(") ")[1].startswith("Z"):
                    gone = True
                    break
        except OSError:
            gone = True
            break
        time.sleep(0.1)
    check(gone, "the hub exits when its parent dies")
    if not gone:
        os.kill(pid, signal.SIGKILL)


def test_bad_arguments():
    for args, what in ((["--ports", "0"], "--ports"), (["--ports", "1", "--loss", "150"], "percentage"),
                       (["--ports", "1", "--delay", "1", "--jitter", "2"], "--jitter")):
        r = subprocess.run([sys.executable, HUB] + args, capture_output=True, text=True)
        check(r.returncode == 2 and what in r.stderr, "bad arguments %s refused: %s" % (args, r.stderr.strip()[-80:]))


if __name__ == "__main__":
    test_switching()
    test_impairments()
    test_parent_death()
    test_bad_arguments()
    print("hub_test: %d failures" % len(failures))
    sys.exit(1 if failures else 0)
