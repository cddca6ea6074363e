"""The cluster's switch: boot/hub.py's learning switch (no impairment) with
ports added while it runs, plus what a rootless cluster needs of the frontend:

Place-0 bridge. Place 0 of a job is a Linux process speaking AM over a real
UDP socket on 127.0.0.1; nodes speak AM in Ethernet/IPv4/UDP frames and know
place 0 as 10.77.0.1 (fox.peers=0@10.77.0.1). For each node K the switch
binds one UDP socket on 127.0.0.1 (the node's *bridge port*), and place 0 is
told node K lives there (fox.peers=K@127.0.0.1:<bridge port>):
  - a datagram place 0 sends to node K's bridge port becomes a frame
    SWITCH_MAC -> node K's MAC, 10.77.0.1:7700 -> node K's IP:7700;
  - a frame from node K to 10.77.0.1 (UDP, any port) leaves node K's bridge
    port as a datagram to the place-0 address the supervisor set for node K
    (route), or is dropped (counted) when node K has no job.
  - ARP requests for 10.77.0.1 are answered with SWITCH_MAC.

Agents. An idle node's agent speaks the pool protocol (apps/agent/agent.cc)
with 10.77.0.1: its announcements carry a nonce, kept here per node; a job
is sent to it (send_job) in frames of job 1 sealed with the key, and its
answers (taken, refused) go to the supervisor (on_agent), as does the status
of a job it took when the job's app ends (exit: answered here, exit_seen, to
the port it came from). Its frames are checked with the key every time.

Key check. Until a node has sent one AM frame whose MAC checks with the
cluster's key, its AM frames are checked: the first good one marks it joined
(on_join), a bad one is dropped and the node refused (on_refuse, at most
once per 10 s per node, with its address). Checked in Python, so only until
the node is known good: a node keeps its key for its whole boot.
"""
import argparse
import os
import socket
import struct
import sys
import time
from typing import Union

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hub  # noqa: E402

from fox import nodes, siphash  # noqa: E402

SWITCH_MAC = nodes.mac_bytes("52:54:00:77:ff:fe")
# The pool protocol with the nodes' agents (apps/agent/agent.cc).
AGENT_EBB = 0x41474E54
ANNOUNCE, JOB, TAKEN, REFUSED, EXIT, EXIT_SEEN = 1, 2, 3, 4, 5, 6
JOB_PART_BYTES = 1408 - 12
POOL_JOB_LE = struct.pack("<Q", nodes.POOL_JOB)  # the job id field of the agents' frames
FRONTEND_IP = nodes.ip_bytes(nodes.FRONTEND_IP)
ETH_IPV4, ETH_ARP = b"\x08\x00", b"\x08\x06"
BROADCAST = b"\xff" * 6


def ip_checksum(header):
    total = sum(struct.unpack("!%dH" % (len(header) // 2), header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class PlaceZeroSide:
    """What the switch keeps of node K for place 0: its bridge port on 127.0.0.1, the route to the
    job's place 0, whether its key checked, counters. `out`: the port its frames leave by."""

    def init_side(self, k, out):
        self.k = k
        self.out = out
        self.mac = nodes.mac_bytes(nodes.node_mac(k))
        self.ip = nodes.ip_bytes(nodes.node_ip(k))
        self.bridge = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.bridge.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.bridge.bind(("127.0.0.1", 0))
        self.bridge.setblocking(False)
        self.bridge_port = self.bridge.getsockname()[1]
        self.route = None  # place 0's (host, port) for this node's current job
        self.nonce = None  # the node's agent's boot nonce (its announcements), while it runs the agent
        self.verified = False
        self.refused_at = 0.0
        self.ip_id = 0
        self.to_place0 = self.from_place0 = self.no_route = self.refused = 0


class NodePort(hub.UdpPort, PlaceZeroSide):
    """The switch's port for node K: its QEMU's -netdev dgram, and its bridge port for place 0."""

    def __init__(self, index, k, qemu_port):
        super().__init__(index, 0, qemu_port)  # listen on a port the kernel picks
        self.name = "node %d" % k
        self.listen_port = self.sock.getsockname()[1]
        self.init_side(k, self)

    def close(self):
        self.sock.close()
        self.bridge.close()


class BridgedNode(PlaceZeroSide):
    """Node K of a bridge-mode cluster (netns.py): its NIC is a tap on the Linux bridge, whose
    frames for 10.77.0.1 reach the switch through the switch's own tap (`out`)."""

    def __init__(self, k, tap):
        self.name = "node %d" % k
        self.counters = dict.fromkeys(hub.COUNTERS, 0)
        self.init_side(k, tap)

    def close(self):
        self.bridge.close()


class Switch(hub.Hub):
    NAME = "switch"

    def __init__(self, key, on_join, on_refuse, on_agent=None):
        args = argparse.Namespace(loss=0, dup=0, reorder=0, delay=0, jitter=0, impair_udp_port=None, seed=1)
        super().__init__(args, [])
        self.key = siphash.parse_key(key)
        self.on_join = on_join
        self.on_refuse = on_refuse
        self.on_agent = on_agent  # (k, handler, data) for a node's agent's kTaken, kRefused and kExit
        self.deaf_to_exits = False  # tests: kExit dropped unanswered
        self.by_k = {}
        self.by_ip = {}  # IPv4 address (bytes) -> the node's port: the plan, for proxy ARP
        self.by_mac = {}  # bridge mode: a node's MAC -> its BridgedNode
        self.tap = None  # bridge mode: the switch's tap on the cluster's bridge

    def attach_tap(self, port):
        """Bridge mode: the switch's only port is its tap on the Linux bridge, which switches the
        nodes' frames to one another; the switch sees those for 10.77.0.1 and broadcasts."""
        port.index = len(self.ports)
        self.ports.append(port)
        self.tap = port

    def add_node(self, k, qemu_port=None):
        port: Union[BridgedNode, NodePort]
        if self.tap is not None:
            port = BridgedNode(k, self.tap)
            self.by_mac[port.mac] = port
        else:
            port = NodePort(len(self.ports), k, qemu_port)
            self.ports.append(port)
            self.by_ip[port.ip] = port
        self.by_k[k] = port
        return port

    def reset_node(self, k):
        """Node K reboots: forget its MAC's port and that its key was good."""
        port = self.by_k[k]
        port.verified = False
        port.nonce = None
        self.macs.pop(port.mac, None)

    def drain_bridge(self, port):
        for _ in range(64):
            try:
                data, sender = port.bridge.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if port.route is None or sender != port.route:
                port.no_route += 1  # not this node's place 0 (a stale job's): dropped
                continue
            self.to_node(port, data)

    def to_node(self, port, payload, dport=nodes.AM_PORT):
        """`payload` from 10.77.0.1:7700 to node `port`'s UDP port `dport`."""
        port.from_place0 += 1
        if port.out is not port:  # bridge mode: the tap counts it too
            port.counters["tx"] += 1
        self.transmit(port.out, self.udp_frame(port, payload, dport))

    def send_job(self, k, text):
        """Node k's agent takes the job whose boot arguments are `text`, in as many parts as it needs.
        False when the node has announced no nonce (it is not running the agent)."""
        port = self.by_k[k]
        if port.nonce is None:
            return False
        data = text.encode()
        parts = [data[i:i + JOB_PART_BYTES] for i in range(0, len(data), JOB_PART_BYTES)] or [b""]
        for i, part in enumerate(parts):
            body = port.nonce + struct.pack("<HH", i, len(parts)) + part
            self.to_node(port, self.agent_record(k, JOB, body))
        return True

    def agent_record(self, k, handler, body):
        """A frame of the pool protocol to node k's agent: one record, sealed with the key."""
        return siphash.seal_frame(self.key, nodes.POOL_JOB, 0, k, [(AGENT_EBB, handler, body)])

    def agent_frame(self, node, payload, frame, udp_at):
        """A frame of node's agent (to 10.77.0.1; its UDP header at `udp_at` of `frame`): its
        announcements (the nonce), answers to a job and a job's end. True if it was one
        (authenticated: the key is checked on every one)."""
        if payload[8:16] != POOL_JOB_LE:  # a job's frame (every one to place 0 comes here: cheap first)
            return False
        parsed = siphash.frame_records(payload)
        if parsed is None or not any(r[0] == AGENT_EBB for r in parsed[2]):
            return False
        if parsed[1] != node.k or not siphash.frame_mac_ok(self.key, payload):
            return True  # not from this node's agent, or not with the key: dropped (the key check refuses)
        for ebb, handler, data in parsed[2]:
            if ebb != AGENT_EBB or len(data) < 8:
                continue
            if handler == ANNOUNCE:
                node.nonce = bytes(data[:8])
            elif handler == EXIT and self.deaf_to_exits:
                continue
            elif handler in (TAKEN, REFUSED, EXIT) and node.nonce == bytes(data[:8]) and self.on_agent is not None:
                if handler == EXIT:  # answered to the port it came from
                    self.to_node(node, self.agent_record(node.k, EXIT_SEEN, node.nonce),
                                 struct.unpack_from("!H", frame, udp_at)[0])
                self.on_agent(node.k, handler, bytes(data[8:]))
        return True

    def udp_frame(self, port, payload, dport):
        port.ip_id = (port.ip_id + 1) & 0xFFFF
        udp = struct.pack("!HHHH", nodes.AM_PORT, dport, 8 + len(payload), 0)
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(payload), port.ip_id, 0x4000, 64, 17, 0,
                                   FRONTEND_IP, port.ip))
        struct.pack_into("!H", ip, 10, ip_checksum(bytes(ip)))
        return port.mac + SWITCH_MAC + ETH_IPV4 + bytes(ip) + udp + payload

    def on_frame(self, src, frame):
        node = src
        if src is self.tap:  # bridge mode: which node sent it, by its MAC
            node = self.by_mac.get(bytes(frame[6:12]))
            src.counters["rx"] += 1
        if len(frame) >= 42 and frame[12:14] == ETH_ARP:
            arp = frame[14:42]
            target = arp[24:28]
            # Who has 10.77.0.1 (us), or a node of the plan? Answered here (proxy ARP), not flooded:
            # 64 booting nodes asking for one another were 250k flooded frames. Announcements
            # (gratuitous: sender == target) are flooded as usual. On a bridge, nodes answer for
            # themselves.
            owner = self.by_ip.get(target)
            if arp[6:8] == b"\x00\x01" and arp[14:18] != target and (target == FRONTEND_IP or owner is not None):
                if src is not self.tap:
                    src.counters["rx"] += 1
                mac = SWITCH_MAC if target == FRONTEND_IP or owner is None else owner.mac
                reply = (arp[8:14] + mac + ETH_ARP + b"\x00\x01\x08\x00\x06\x04\x00\x02" + mac +
                         target + arp[8:14] + arp[14:18])
                self.transmit(src, reply)
                return
        if node is None:  # bridge mode, not a node of this cluster (or not for us): the bridge's business
            return
        if len(frame) >= 42 and frame[12:14] == ETH_IPV4 and frame[23] == 17:
            ihl = (frame[14] & 15) * 4
            payload = frame[14 + ihl + 8:14 + struct.unpack_from("!H", frame, 16)[0]]
            if not node.verified:
                ok = siphash.frame_mac_ok(self.key, payload)
                if ok is False:
                    node.counters["rx"] += 1
                    node.refused += 1
                    now = time.monotonic()
                    if now - node.refused_at >= 10:
                        node.refused_at = now
                        self.on_refuse(node.k, "%d.%d.%d.%d" % tuple(frame[26:30]),
                                       ":".join("%02x" % b for b in frame[6:12]))
                    return
                if ok:
                    node.verified = True
                    self.on_join(node.k)
            if frame[30:34] == FRONTEND_IP:
                node.counters["rx"] += 1
                if self.agent_frame(node, payload, frame, 14 + ihl):
                    node.to_place0 += 1
                    return
                if node.route is None:
                    node.no_route += 1
                else:
                    node.to_place0 += 1
                    try:
                        node.bridge.sendto(payload, node.route)
                    except OSError:
                        node.counters["send_errors"] += 1
                return
        if src is self.tap:  # nodes' traffic among themselves (broadcasts): the bridge switches it
            return
        if frame[0:6] == SWITCH_MAC:  # other traffic for the frontend: nothing listens
            src.counters["rx"] += 1
            src.counters["dropped"] += 1
            return
        super().on_frame(src, frame)

    def counters(self, k):
        p = self.by_k[k]
        return dict(p.counters, to_place0=p.to_place0, from_place0=p.from_place0, no_route=p.no_route,
                    refused=p.refused)

    def close(self):
        for p in self.by_k.values():
            p.close()
        if self.tap is not None:
            os.close(self.tap.fd)
