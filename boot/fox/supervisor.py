"""The supervisor: what `fox cluster up` leaves running for a cluster.

    python3 -m fox.supervisor --name NAME --nodes N [--cores C] [--mem M] [--accel A] [--http ADDRESS:PORT]
                              [--hosts H0,H1,...]

One process, one thread: a selector loop over the control socket, the
switch's sockets and a pidfd per QEMU. It owns the nodes (QEMU processes, as
its children, each dying with it: PR_SET_PDEATHSIG), the switch (switch.py)
and the queue of jobs. Its state directory is described in state.py.

Pool semantics: an idle node runs the agent (apps/agent) with the cluster's
key; the switch marks it joined when its first authenticated frame passes.
A job is handed to the agents of the idle nodes it gets (the pool protocol,
apps/agent/agent.cc): each runs the job's app next in the same boot, with
the job's boot arguments (fox.job, fox.peers naming place 0 at 10.77.0.1 and
the job's nodes), no reboot; a node whose agent refuses or does not answer
within HAND_TIMEOUT_S, or any node of a `fox run --reboot` job, is rebooted
into the job. A node whose job part ends (its QEMU exits with a status) is
rebooted into the agent, back to the pool. A node that dies (killed, or its
QEMU gone without a status) stays dead; new nodes get new ids.

Hosts (--hosts, hosts.py): node K runs on host (K - 1) mod H; on the hosts
other than this one through their agents (host_agent.py, started by srun or
ssh: --launcher), whose QEMUs it sees as RemoteQemu objects; the cluster's
bridge here is joined to theirs by VXLAN (bridge mode, root). A host whose
agent is gone takes its nodes with it: they are dead, and a node booted
there later is dead at once.

HTTP port (web.py; --http, by default 127.0.0.1 and a free port, written to
http.url in the state directory): /metrics in Prometheus' text format
(metrics.py: nodes by state, jobs, deaths, the switch's counters and, for the
nodes of the running job, their status reports: transport, membership, Dht,
APGAS runtime), / the live view (ui.html) and /api/status its data: the
status request's answer plus the events (boots, joins, deaths, exits, jobs,
and the recoveries the job's nodes report: peers seen dead, Dht copies
rebuilt, finishes adopted) numbered after `since`.

Control protocol: a Unix stream socket (supervisor.sock), one JSON object
per line each way. Requests ({"op": ...}) and their replies:
    status                      {"ok": true, "name", "nodes": [row...], "job": {...}|null, "pid", "host", "http",
                                 "counters"}
    endpoint service address    (the running job's `fox run`) a place 0 line "fox: endpoint SERVICE ADDRESS":
                                shown by status as where clients on this machine reach the job
    node_status node report     (the running job's `fox run`) a node's status report, asked of place 0
                                (Messenger::QueryStatus): status shows its AM counters
    add   count, wrong_key      {"ok": true, "nodes": [ids]}    (wrong_key: for tests)
    kill  node                  {"ok": true} | {"ok": false, "error"}
    down                        {"ok": true}, then everything stops and the directory goes
    job   app, places, args, place0_port, kargs, build_id, reboot
        the connection becomes the job's: {"event": "queued"} while another job
        runs, then {"event": "start", "job", "key", "nodes": [{"node", "place",
        "ip", "bridge_port", "console", "offset"}]} or {"event": "error", "error"},
        then {"event": "exit", "node", "status"} as nodes finish and
        {"event": "dead", "node"} as nodes die. The client sends {"op": "end"}
        (or closes the connection: Ctrl-C, crash) and the job's nodes return
        to the pool; {"event": "ended"} acknowledges.
"""
import argparse
import collections
import json
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Deque, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fox import hosts, metrics, netns, nodes, state, switch, web  # noqa: E402
import build_id  # noqa: E402
import qemu_run  # noqa: E402


EVENTS_KEPT = 500
UI_PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ui.html")


def log(fmt, *args):
    now = time.time()
    sys.stdout.write(time.strftime("%H:%M:%S", time.localtime(now)) + ".%03d " % (now * 1000 % 1000) + (fmt % args if args else fmt) + "\n")
    sys.stdout.flush()



class Node:
    def __init__(self, k):
        self.k = k
        self.state = "booting"
        self.proc = None
        self.pidfd = None
        self.booted_at = None
        self.born_at = time.time()
        self.job = None
        self.place = None
        self.app = "agent"
        self.wrong_key = False
        self.qemu_port = nodes.free_udp_port()
        self.port = None
        self.tap = None  # bridge mode: its tap in the cluster's namespace
        self.handing = None  # a job its agent is being given: {"job", "text", "image", "since", "sent"}
        self.told_exit = None  # the job whose end its agent reported (fox run was told then)
        self.boots = 0
        self.last_status = None
        self.report = None  # its latest status report in a job ({key: value}), and when it came
        self.report_at = None
        self.host = None  # the host its QEMU runs on (hosts.py)


class Job:
    def __init__(self, conn, request, job_id):
        self.conn = conn
        self.request = request
        self.id = job_id
        self.nodes = []
        self.started = False
        self.started_at = None
        self.endpoints = []  # [{"service", "address"}]: what place 0 said clients here reach (fox: endpoint)
        self.grow = 0  # nodes place 0 asked for (op grow) not started yet
        self.fd_args = []


class Supervisor:
    def __init__(self, args):
        self.args = args
        self.name = args.name
        self.dir = state.cluster_dir(args.name)
        with open(os.path.join(self.dir, "fox.key")) as f:
            self.key = f.read().strip()
        self.accel, _ = qemu_run.choose_accel(args.accel)
        self.sel = selectors.DefaultSelector()
        self.switch = switch.Switch(self.key, self.on_join, self.on_refuse, self.on_agent)
        self.net: Optional[netns.BridgeNetwork] = None  # bridge mode: the cluster's namespace, bridge and dnsmasq (netns.py)
        self.image_facts = None  # ((path, size, mtime, inode), apps, build id) of the node image last checked
        # FOX_HAND_TIMEOUT_S (tests: 0 makes every node take the reboot path after its agent was asked)
        self.hand_timeout_s = float(os.environ.get("FOX_HAND_TIMEOUT_S", self.HAND_TIMEOUT_S))
        # FOX_TEST_DEAF_TO_EXITS=1 (tests): agents' reports of a job's end are dropped unanswered, as
        # if lost; QEMU's exit tells the status
        if os.environ.get("FOX_TEST_DEAF_TO_EXITS") == "1":
            self.switch.deaf_to_exits = True
        self.nodes = {}
        self.host = socket.gethostname()
        # Where nodes run (hosts.py): this host alone, or --hosts (the first this one if it is one)
        self.hosts = args.hosts.split(",") if args.hosts else [self.host]
        self.agents = {}  # host -> hosts.HostAgent, for every host but this one
        self.http = None  # the HTTP port (web.py): metrics, the live view and its API
        self.events: Deque[dict] = collections.deque(maxlen=EVENTS_KEPT)  # what happened, for the live view
        self.next_event = 1
        self.counters = {"deaths": 0, "boots": 0, "jobs_started": 0, "jobs_ended": 0}
        self.next_id = 1
        self.next_job = nodes.POOL_JOB + 1
        self.job = None
        self.queue = []
        self.conns = {}
        self.stopping = False

    # ---- nodes ----
    def add_nodes(self, count, wrong_key=False):
        ids = []
        for _ in range(count):
            k = self.next_id
            if k > nodes.MAX_NODE_ID:
                raise ValueError("no node ids left in this cluster")
            self.next_id += 1
            n = Node(k)
            n.wrong_key = wrong_key
            n.host = self.hosts[(k - 1) % len(self.hosts)]
            n.port = self.switch.add_node(k, n.qemu_port)
            if self.net is not None:  # a tap here for a node here; dnsmasq knows every node
                n.tap = self.net.add_node(k, nodes.node_mac(k), nodes.node_ip(k), tap=n.host == self.host)
            else:
                self.sel.register(n.port.sock, selectors.EVENT_READ, lambda p=n.port: self.switch.drain(p))
            self.sel.register(n.port.bridge, selectors.EVENT_READ, lambda p=n.port: self.switch.drain_bridge(p))
            self.nodes[k] = n
            self.boot_agent(n)
            ids.append(k)
        return ids

    def boot(self, n, image, append, state_name):
        self.switch.reset_node(n.k)
        if self.args.pxe:  # the arguments travel in the node's iPXE script (this host serves every host's)
            assert self.net is not None  # PXE is a bridge mode
            self.net.set_pxe_boot(nodes.node_mac(n.k), image, append)
        if n.host != self.host:
            n.proc = self.agents[n.host].boot(n.k, n.boots + 1, image, append, self.args.cores, self.args.mem,
                                              self.accel, self.args.pxe)
            self.booted(n, state_name)
            if n.proc.poll() is not None:  # its host's agent is gone
                self.on_qemu_exit(n, n.proc)
            return
        console = os.path.join(self.dir, "node%d.log" % n.k)
        iso = None
        if self.args.iso:  # the boot arguments travel in the ISO's GRUB menu entry
            iso = os.path.join(self.dir, "node%d.iso" % n.k)
            nodes.make_iso(image, append, iso)
        cmd = nodes.qemu_command(self.name, n.k, image, append, self.args.cores, self.args.mem, self.accel,
                                 console, n.qemu_port, getattr(n.port, "listen_port", None), cdrom=iso,
                                 tap=n.tap, pxe=self.args.pxe)
        cmd += ["-pidfile", os.path.join(self.dir, "node%d.pid" % n.k)]
        if self.net is not None:
            cmd = self.net.exec_prefix() + cmd
        with open(os.path.join(self.dir, "node%d.qemu.log" % n.k), "ab") as err:
            n.proc = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--"] + cmd, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        n.pidfd = os.pidfd_open(n.proc.pid)
        self.sel.register(n.pidfd, selectors.EVENT_READ, lambda node=n, proc=n.proc: self.on_qemu_exit(node, proc))
        self.booted(n, state_name)

    def booted(self, n, state_name):
        n.booted_at = time.time()
        n.state = state_name
        n.boots += 1
        self.counters["boots"] += 1

    def boot_agent(self, n):
        key = self.key if not n.wrong_key else "%032x" % (int(self.key, 16) ^ 1)
        append = nodes.boot_args(n.k, "agent", key, nodes.POOL_JOB, "0@%s" % nodes.FRONTEND_IP, dhcp=self.dhcp)
        n.job = n.place = None
        n.report = n.report_at = None
        n.app = "agent"
        n.port.route = None
        self.boot(n, nodes.node_image(), append, "booting")
        self.event("boot", n.k, "node %d: booting into the pool (agent) at %s", n.k, nodes.node_ip(n.k))

    def stop_qemu(self, n):
        """Kills node n's QEMU and waits for it; its exit is not reported."""
        proc, n.proc = n.proc, None
        if proc is None:
            return
        if n.pidfd is not None:
            self.sel.unregister(n.pidfd)
            os.close(n.pidfd)
            n.pidfd = None
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def on_qemu_exit(self, n, proc):
        if proc is not n.proc:
            return
        rc = proc.wait()
        if n.pidfd is not None:
            self.sel.unregister(n.pidfd)
            os.close(n.pidfd)
            n.pidfd = None
        n.proc = None
        status = nodes.decode_exit(rc)
        n.last_status = status
        job = self.job if self.job is not None and n.k in self.job.nodes else None
        if status is None:
            self.declare_dead(n, "its QEMU exited with %d and no exit status" % rc)
            return
        self.event("exit", n.k, "node %d: %s exited with status %d", n.k, n.app, status)
        if n.app == "agent" and not self.stopping:  # an agent never ends by itself: no reboot loop
            self.declare_dead(n, "the agent exited with status %d (fox logs %d)" % (status, n.k))
            return
        if job is not None and n.told_exit != job.id:
            self.tell(job.conn, event="exit", node=n.k, status=status)
        if self.stopping:
            return
        if job is not None:
            # Back to the pool when the job ends (end_job), not now: a QEMU's boot (some 100 ms
            # of a host processor) beside the job's other nodes still running slowed them
            # and fox run: an empty job on 4 nodes ended 5-20 ms later.
            return
        self.boot_agent(n)  # back to the pool

    def declare_dead(self, n, why):
        n.state = "dead"
        n.port.route = None
        self.counters["deaths"] += 1
        self.event("dead", n.k, "node %d: dead: %s", n.k, why)
        if self.job is not None and n.k in self.job.nodes and self.job.started and n.told_exit != self.job.id:
            self.tell(self.job.conn, event="dead", node=n.k)
        self.maybe_start_job()

    def kill(self, k):
        n = self.nodes.get(k)
        if n is None:
            return {"ok": False, "error": "no node %d in cluster %s" % (k, self.name)}
        if n.state == "dead":
            return {"ok": False, "error": "node %d is dead already" % k}
        if n.proc is not None and n.proc.poll() is None:
            n.proc.send_signal(signal.SIGKILL)
        self.stop_qemu(n)
        self.declare_dead(n, "killed (fox kill)")
        return {"ok": True}

    def on_join(self, k):
        n = self.nodes[k]
        if n.state == "booting":
            n.state = "idle"
            self.event("joined", k, "node %d: joined the pool (%.2f s after its boot)", k, time.time() - n.booted_at)
            self.maybe_start_job()

    def on_refuse(self, k, address, mac):
        n = self.nodes[k]
        if n.state != "dead":
            n.state = "refused"
        self.event("refused", k, "switch: refusing node %d at %s (MAC %s): its frames fail the cluster's key (fox.key)",
                   k, address, mac)

    def rows(self):
        now = time.time()
        out = []
        for n in sorted(self.nodes.values(), key=lambda n: n.k):
            out.append({"node": n.k, "host": n.host, "address": nodes.node_ip(n.k), "state": n.state,
                        "cores": self.args.cores,
                        "roles": "%d kernel, %d app" % (1, self.args.cores - 1) if self.args.cores > 1 else "1 kernel",
                        "uptime": round(now - n.booted_at, 1) if n.proc is not None else None,
                        "job": n.job, "place": n.place, "app": n.app if n.proc is not None else None,
                        "boots": n.boots, "switch": self.switch.counters(n.k), "pid": n.proc.pid if n.proc else None,
                        "am": n.report if n.job is not None else None,
                        "am_age": round(now - n.report_at, 1) if n.report_at and n.job is not None else None})
        return out

    def snapshot(self):
        """The status request's answer: the cluster, a row per node, the job, the counts."""
        job = self.job
        return {"ok": True, "name": self.name, "pid": os.getpid(), "host": self.host, "nodes": self.rows(),
                "accel": self.accel, "network": self.network(), "netns": self.net.ns if self.net else None,
                "boot": self.boot_method(), "http": self.http.url() if self.http else None,
                "job": {"id": job.id, "app": job.request["app"], "nodes": job.nodes, "endpoints": job.endpoints,
                        "seconds": round(time.time() - job.started_at, 1) if job.started_at else None}
                if job else None, "queued": len(self.queue), "counters": dict(self.counters)}

    # Report counters whose growth is a recovery the live view shows as it happens.
    RECOVERIES = (("am.peers_dead", "saw %d more peers die"), ("dht.rebuilt", "rebuilt %d Dht copies"),
                  ("dht.rebuild_failures", "failed to rebuild %d Dht copies"),
                  ("apgas.adopted", "adopted %d finishes of dead places"))

    def recoveries(self, n, old, new):
        for key, text in self.RECOVERIES:
            before, now = old.get(key), new.get(key)
            if isinstance(before, int) and isinstance(now, int) and now > before:
                self.event("recovery", n.k, "node %d (job %s): " + text, n.k, n.job, now - before)

    def event(self, kind, node, fmt, *args):
        """Logs a line and keeps it for the live view (events since a number: /api/status?since=N)."""
        log(fmt, *args)
        self.events.append({"seq": self.next_event, "time": round(time.time(), 3), "kind": kind, "node": node,
                            "text": fmt % args if args else fmt})
        self.next_event += 1

    def route(self, path, query):
        """The HTTP port's pages (web.py): /metrics for Prometheus, / the live view, /api/status its data."""
        if path == "/metrics":
            return 200, metrics.CONTENT_TYPE, metrics.exposition(self.snapshot()).encode()
        if path == "/api/status":
            try:
                since = int(query.get("since", "0"))
            except ValueError:
                return 400, "text/plain", b"since: a number\n"
            snap = self.snapshot()
            snap["events"] = [e for e in self.events if e["seq"] > since]
            snap["now"] = round(time.time(), 3)
            return 200, "application/json", json.dumps(snap).encode()
        if path in ("/", "/index.html"):
            with open(UI_PAGE, "rb") as f:
                return 200, "text/html; charset=utf-8", f.read()
        return 404, "text/plain", b"no such page: / (the live view), /metrics, /api/status\n"

    # ---- jobs ----
    JOB_KARG = re.compile(r"fox\.[a-z_]+=[!-~]{1,200}")
    FRONTEND_KARGS = ("fox.app", "fox.node", "fox.ip", "fox.gw", "fox.key", "fox.job", "fox.peers")

    def job_request(self, conn, request):
        kargs = request.get("kargs", [])
        bad = [k for k in kargs if not isinstance(k, str) or not self.JOB_KARG.fullmatch(k)
               or k.split("=")[0] in self.FRONTEND_KARGS] if isinstance(kargs, list) else [kargs]
        if bad:
            self.tell(conn, event="error", error="bad boot arguments for the job's places: %r" % bad[:4])
            return
        job = Job(conn, request, None)
        self.queue.append(job)
        if self.job is not None:
            self.tell(conn, event="queued", behind=self.job.id)
        self.maybe_start_job()

    def maybe_start_job(self):
        if self.job is not None:
            self.maybe_grow()
        if self.job is not None or not self.queue or self.stopping:
            return
        job = self.queue[0]
        r = job.request
        live = [n for n in self.nodes.values() if n.state not in ("dead", "refused")]
        idle = sorted((n for n in live if n.state == "idle"), key=lambda n: n.k)
        want = r.get("places")
        want_nodes = (want - 1) if want else len(live)
        if want_nodes > len(live) or want_nodes < 0:
            self.queue.pop(0)
            self.tell(job.conn, event="error", error="the job wants %d places (place 0 and %d nodes) and cluster "
                      "%s has %d live nodes" % (want_nodes + 1, want_nodes, self.name, len(live)))
            self.maybe_start_job()
            return
        if len(idle) < want_nodes:
            return  # nodes still booting: started when enough have joined
        image = nodes.node_image()
        problem = self.check_image(image, r["app"], r.get("build_id"))
        if problem:
            self.queue.pop(0)
            log("job refused: %s", problem)
            self.tell(job.conn, event="error", error=problem)
            self.maybe_start_job()
            return
        self.queue.pop(0)
        job.id = self.next_job
        self.next_job += 1
        job.nodes = [n.k for n in idle[:want_nodes]]
        self.job = job
        fd_args = qemu_run.membership_args(self.accel, len(live) * self.args.cores)
        peers = ",".join(["0@%s" % nodes.FRONTEND_IP] + ["%d@%s" % (k, nodes.node_ip(k)) for k in job.nodes])
        out = []
        for k in job.nodes:  # every agent to reboot at once: their QEMUs exit in parallel
            if self.nodes[k].proc is not None and not self.can_hand(self.nodes[k], r):
                self.nodes[k].proc.kill()
        job.fd_args = list(fd_args)
        for k in job.nodes:
            out.append(self.boot_into_job(job, self.nodes[k], peers, image))
        job.started = True
        job.started_at = time.time()
        self.counters["jobs_started"] += 1
        self.event("job", None, "job %d: %s on place 0 and nodes %s", job.id, r["app"],
                   ",".join(map(str, job.nodes)) or "(none)")
        self.tell(job.conn, event="start", job=job.id, key=self.key, nodes=out, fd_args=fd_args)

    # Boot arguments applied at boot (registered with boot_time, fox/cmdline.h; fox.node, fox.ip,
    # fox.gw and fox.key are the node's own): a job that sets one reboots its nodes.
    BOOT_TIME_KARGS = ("fox.stack", "fox.kcores", "fox.idle")
    HAND_RESEND_S = 0.05
    HAND_TIMEOUT_S = 1.5

    def boot_into_job(self, job, n, peers, image, extra_kargs=()):
        """Starts node n as a place of `job` (the place's id is the node's: fox.node): its agent
        takes the job (no reboot) when it can, else the node is rebooted into it; what fox run
        needs to follow it."""
        r = job.request
        console = os.path.join(self.dir, "node%d.log" % n.k)
        offset = os.path.getsize(console) if os.path.exists(console) else 0
        append = nodes.boot_args(n.k, r["app"], self.key, job.id, peers, r.get("args", []),
                                 job.fd_args + r.get("kargs", []) + list(extra_kargs), dhcp=self.dhcp)
        warm = self.can_hand(n, r, extra_kargs)
        n.job, n.place, n.app = job.id, n.k, r["app"]
        n.port.route = ("127.0.0.1", int(r["place0_port"]))
        if warm and self.switch.send_job(n.k, append):
            n.state = "running"
            now = time.monotonic()
            n.handing = {"job": job.id, "text": append, "image": image, "since": now, "sent": now}
        else:
            self.stop_qemu(n)
            self.boot(n, image, append, "running")
        return {"node": n.k, "place": n.k, "ip": nodes.node_ip(n.k), "bridge_port": n.port.bridge_port,
                "console": console, "offset": offset}

    def can_hand(self, n, request, extra_kargs=()):
        """Whether node n's agent can take the job `request` asks for without a reboot."""
        kargs = list(request.get("kargs", [])) + list(extra_kargs)
        return not request.get("reboot") and n.state == "idle" and n.app == "agent" and n.proc is not None and \
            n.proc.poll() is None and n.port.nonce is not None and \
            not any(k.split("=")[0] in self.BOOT_TIME_KARGS for k in kargs)

    def on_agent(self, k, handler, data):
        """Node k's agent answered the job it was given: taken (it runs it, no reboot), or refused;
        or the app of the job it took ended (its status before its QEMU exits: told at once)."""
        n = self.nodes.get(k)
        if n is None:
            return
        if handler == switch.EXIT:
            job = self.job
            if len(data) >= 4 and job is not None and n.k in job.nodes and n.state == "running" and \
                    n.job == job.id and n.told_exit != job.id:
                n.told_exit = job.id
                status = struct.unpack_from("<i", data)[0]
                log("node %d: %s ended with status %d (its agent said)", k, n.app, status)
                self.tell(job.conn, event="exit", node=k, status=status)
            return
        if n.handing is None:
            return
        hand, n.handing = n.handing, None
        if handler == switch.TAKEN:
            log("node %d: took job %d without a reboot (%.3f s)", k, hand["job"], time.monotonic() - hand["since"])
            return
        log("node %d: refused job %d without a reboot (%s): rebooting it into the job", k, hand["job"],
            data.decode(errors="replace"))
        self.reboot_into(n, hand)

    def reboot_into(self, n, hand):
        self.stop_qemu(n)
        route = n.port.route
        self.boot(n, hand["image"], hand["text"], "running")
        n.port.route = route

    def hand_on(self):
        """Jobs being handed to agents: sent again while unanswered; rebooted into after a while.
        Returns the seconds until the next look (None: nothing pending)."""
        now = time.monotonic()
        soonest: Optional[float] = None
        for n in self.nodes.values():
            hand = n.handing
            if hand is None:
                continue
            if n.state != "running" or n.job != hand["job"]:
                n.handing = None
                continue
            if now - hand["since"] >= self.hand_timeout_s:
                n.handing = None
                log("node %d: its agent did not answer job %d in %.1f s: rebooting it into the job", n.k,
                    hand["job"], self.hand_timeout_s)
                self.reboot_into(n, hand)
                continue
            if now - hand["sent"] >= self.HAND_RESEND_S:
                hand["sent"] = now
                self.switch.send_job(n.k, hand["text"])
            due: float = hand["sent"] + self.HAND_RESEND_S - now
            soonest = due if soonest is None else min(soonest, due)
        return soonest

    def idle_for(self, job):
        """Idle nodes that may join `job`: never one of its places that ended (a place's id is
        never reused, even by the same node back in the pool)."""
        return sorted((n for n in self.nodes.values() if n.state == "idle" and n.k not in job.nodes),
                      key=lambda n: n.k)

    def maybe_grow(self):
        """Idle nodes join the running job that asked for more (fresh ids: pool ids never repeat);
        they reach the others by speaking (the transport adds them)."""
        job = self.job
        if job is None or not job.started or job.grow <= 0:
            return
        idle = self.idle_for(job)[:job.grow]
        if not idle:
            return
        live = [k for k in job.nodes if self.nodes[k].state != "dead"] + [n.k for n in idle]
        peers = ",".join(["0@%s" % nodes.FRONTEND_IP] + ["%d@%s" % (k, nodes.node_ip(k)) for k in live])
        out = []
        for n in idle:
            job.nodes.append(n.k)
            out.append(self.boot_into_job(job, n, peers, nodes.node_image(), ["fox.joining=1"]))
        job.grow -= len(idle)
        log("job %d: nodes %s join it (place 0 asked)", job.id, ",".join(str(n.k) for n in idle))
        self.tell(job.conn, event="grown", nodes=out)

    def check_image(self, image, app, place0_build_id):
        """Why a job of `app` whose place 0 carries `place0_build_id` cannot run on `image`, or None."""
        try:
            st = os.stat(image)
            stamp = (image, st.st_size, st.st_mtime_ns, st.st_ino)
            if self.image_facts is None or self.image_facts[0] != stamp:  # read again only when it changed
                self.image_facts = (stamp, nodes.image_apps(image), build_id.read(image))
            _, apps, image_id = self.image_facts
        except OSError as e:
            return "cannot read the node image %s: %s (make builds it)" % (image, e.strerror)
        if apps is None or image_id is None:
            return "%s is not a pool image (no app list or build id): rebuild with make" % image
        if app not in apps:
            return "the node image %s holds no app %s (it holds %s)" % (image, app, ", ".join(apps))
        if place0_build_id != image_id:
            return ("place 0's program (build id %s) and the node image %s (build id %s) were built from "
                    "different sources: run make" % (place0_build_id or "none", image, image_id))
        return None

    def end_job(self, job, why):
        if job in self.queue:
            self.queue.remove(job)
            return
        if self.job is not job:
            return
        for k in job.nodes:
            n = self.nodes[k]
            if n.state == "running" and n.job == job.id and n.proc is not None:
                n.proc.kill()
        for k in job.nodes:
            n = self.nodes[k]
            n.port.route = None
            if n.state == "running" and n.job == job.id:
                self.stop_qemu(n)
                if not self.stopping:
                    self.boot_agent(n)
        self.counters["jobs_ended"] += 1
        self.event("job", None, "job %d: ended (%s), %.2f s", job.id, why, time.time() - job.started_at)
        self.job = None
        self.maybe_start_job()

    # ---- the control socket ----
    def tell(self, conn, **message):
        try:
            conn.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            pass

    def on_accept(self, server):
        conn, _ = server.accept()
        conn.setblocking(True)
        conn.settimeout(5)
        self.conns[conn] = b""
        self.sel.register(conn, selectors.EVENT_READ, lambda c=conn: self.on_readable(c))

    def close_conn(self, conn):
        self.sel.unregister(conn)
        del self.conns[conn]
        for job in list(self.queue) + ([self.job] if self.job else []):
            if job.conn is conn:
                self.end_job(job, "its client went away")
        conn.close()

    def on_readable(self, conn):
        try:
            chunk = conn.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.close_conn(conn)
            return
        buf = self.conns[conn] + chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            self.conns[conn] = buf
            try:
                request = json.loads(line)
                reply = self.handle(conn, request)
            except (ValueError, KeyError, TypeError) as e:
                reply = {"ok": False, "error": "bad request: %s" % e}
            if reply is not None:
                self.tell(conn, **reply)
            if conn not in self.conns:
                return
        self.conns[conn] = buf

    def handle(self, conn, request):
        op = request["op"]
        if op == "status":
            return self.snapshot()
        if op == "add":
            count = int(request["count"])
            if request.get("into_job"):  # fox add --into-job: they join the running job once in the pool
                if self.job is None or not self.job.started:
                    return {"ok": False, "error": "no job runs on cluster %s" % self.name}
                self.job.grow += count
            added = self.add_nodes(count, bool(request.get("wrong_key")))
            if request.get("into_job") and self.job is not None:
                log("job %d: nodes %s will join it (fox add --into-job)", self.job.id, ",".join(map(str, added)))
            return {"ok": True, "nodes": added}
        if op == "kill":
            return self.kill(int(request["node"]))
        if op == "down":
            self.stopping = True
            return {"ok": True}
        if op == "job":
            self.job_request(conn, request)
            return None
        if op == "grow":  # from the job's `fox run`: place 0 asks for more nodes (PlaceManager::addPlaces)
            count = request.get("count")
            if self.job is None or self.job.conn is not conn or not isinstance(count, int) or not 1 <= count <= 64:
                return {"event": "error", "error": "bad grow request"}
            self.job.grow += count
            idle = len(self.idle_for(self.job))
            if idle < self.job.grow:
                try:
                    added = self.add_nodes(self.job.grow - idle)
                    log("job %d: place 0 asked for %d more nodes: booting nodes %s into the pool for it", self.job.id,
                        count, ",".join(map(str, added)))
                except ValueError as e:
                    return {"event": "error", "error": str(e)}
            self.maybe_grow()
            return None
        if op == "endpoint":  # from the job's `fox run`: a line place 0 printed
            if self.job and self.job.conn is conn and len(self.job.endpoints) < 16:
                self.job.endpoints.append({"service": str(request.get("service", ""))[:64],
                                           "address": str(request.get("address", ""))[:64]})
            return None
        if op == "node_status":  # from the job's `fox run`: a node's report, through place 0
            n = self.nodes.get(request.get("node"))
            report = request.get("report")
            if self.job and self.job.conn is conn and n is not None and n.job == self.job.id and \
                    isinstance(report, dict) and len(report) <= 200:
                self.recoveries(n, n.report or {}, report)
                n.report, n.report_at = report, time.time()
            return None
        if op == "end":
            for job in list(self.queue) + ([self.job] if self.job else []):
                if job.conn is conn:
                    self.end_job(job, "its client ended it")
            return {"event": "ended"}
        return {"ok": False, "error": "unknown op %r" % op}

    # ---- life ----
    def run(self):
        sock_path = os.path.join(self.dir, "supervisor.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(sock_path)
        os.chmod(sock_path, 0o600)
        server.listen(16)
        self.sel.register(server, selectors.EVENT_READ, lambda: self.on_accept(server))
        state.stop_on_signals(self.sel, lambda: setattr(self, "stopping", True))
        if self.args.bridge:
            self.bridge_up()
        try:
            host, _, port = self.args.http.rpartition(":")
            self.http = web.Server(self.sel, host.strip("[]") or "127.0.0.1", int(port), self.route)
        except (OSError, ValueError) as e:
            log("supervisor %d: cluster %s: cannot serve HTTP on %s: %s", os.getpid(), self.name, self.args.http, e)
            sys.exit(1)  # `fox cluster up` shows this log, then removes the state directory
        with open(os.path.join(self.dir, "http.url"), "w") as f:
            f.write(self.http.url() + "\n")
        self.start_agents()
        log("supervisor %d: cluster %s, %d nodes of %d cores and %d MiB, accel %s, booting %s, network %s, state in %s, "
            "metrics and live view at %s", os.getpid(), self.name, self.args.nodes, self.args.cores, self.args.mem,
            self.accel, self.boot_method(), self.network(), self.dir, self.http.url())
        self.add_nodes(self.args.nodes)
        with open(os.path.join(self.dir, "supervisor.pid.tmp"), "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(os.path.join(self.dir, "supervisor.pid.tmp"), os.path.join(self.dir, "supervisor.pid"))
        try:
            while not self.stopping:
                pending = self.hand_on()
                self.http.sweep()
                for key, _ in self.sel.select(1.0 if pending is None else max(0.005, min(1.0, pending))):
                    key.data()
                    if self.stopping:
                        break
        finally:
            self.shut_down(server)

    @property
    def dhcp(self):
        return self.net is not None

    def boot_method(self):
        return "by iPXE" if self.args.pxe else "GRUB ISOs" if self.args.iso else "by -kernel"

    def network(self):
        if self.net is None:
            return "the switch on 127.0.0.1 (rootless)"
        return "bridge in namespace %s (DHCP and TFTP at %s, the switch at %s)" % (
            self.net.ns, netns.SERVER_IP, nodes.FRONTEND_IP)

    def bridge_up(self):
        """Bridge mode: the namespace, bridge and dnsmasq; the switch's port is its tap there."""
        self.net = netns.BridgeNetwork(self.name, self.dir, pxe=self.args.pxe)
        try:
            self.net.up()
            tap = self.net.open_tap(netns.SWITCH_TAP)
        except (netns.NetError, OSError) as e:
            self.net.close()
            log("supervisor %d: cluster %s: cannot set up the bridge: %s", os.getpid(), self.name, e)
            sys.exit(1)  # `fox cluster up` shows this log, then removes the state directory
        self.switch.attach_tap(tap)
        self.sel.register(tap.fd, selectors.EVENT_READ, lambda: self.switch.drain(tap))

    def start_agents(self):
        """An agent on every other host (hosts.py), each ready, and this host's bridge joined to theirs."""
        others = [h for h in self.hosts if h != self.host]
        if not others:
            return
        assert self.net is not None  # several hosts imply bridge mode (boot_method)
        try:
            addresses = [hosts.address(h) for h in others]
            local = netns.local_address(addresses[0])  # this host's, whether it runs nodes or not
            vni = netns.vxlan_id()
            for h in others:
                self.agents[h] = hosts.HostAgent(
                    h, hosts.LAUNCHERS[self.args.launcher], self.name, vni, [local] + addresses,
                    os.path.join(self.dir, "host-%s" % h), self.sel, lambda q: self.on_qemu_exit(self.nodes[q.k], q),
                    self.on_console, log)
            ready = [self.agents[h].wait_ready() for h in others]
            self.net.add_vxlan(vni, local, [r["address"] for r in ready if r["address"] != local])
        except (hosts.HostError, netns.NetError, OSError) as e:
            log("supervisor %d: cluster %s: cannot reach its hosts: %s", os.getpid(), self.name, e)
            for agent in self.agents.values():
                agent.close()
            self.net.close()
            sys.exit(1)  # `fox cluster up` shows this log, then removes the state directory
        for r in ready:
            log("host %s (%s): its agent is ready, nodes there in its namespace %s", r["host"], r["address"],
                r["netns"])
        log("hosts: %s (VXLAN %d from %s); node K on host (K - 1) mod %d", ", ".join(self.hosts), vni, local,
            len(self.hosts))

    def on_console(self, k, data):
        """What node k's console gained on its host: appended to its log here (fox logs, fox run)."""
        with open(os.path.join(self.dir, "node%d.log" % k), "ab") as f:
            f.write(data)

    def shut_down(self, server):
        self.stopping = True
        log("supervisor: cluster %s going down", self.name)
        for conn in list(self.conns):
            self.tell(conn, event="down")
        for n in self.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.proc.kill()
        for n in self.nodes.values():
            if n.proc is not None:
                n.proc.wait()
        for agent in self.agents.values():
            agent.close()
        self.switch.close()
        if self.net is not None:
            self.net.close()
        if self.http is not None:
            self.http.stop()
        server.close()
        for conn in list(self.conns):
            conn.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--mem", type=int, default=128)
    ap.add_argument("--accel", default="auto")
    ap.add_argument("--iso", action="store_true", help="nodes boot a GRUB ISO made per boot (boot/make_iso.sh)")
    ap.add_argument("--bridge", action="store_true", help="a namespace with a bridge, taps and dnsmasq (root)")
    ap.add_argument("--pxe", action="store_true", help="nodes boot by iPXE (implies --bridge)")
    ap.add_argument("--hosts", help="the hosts nodes run on, comma-separated, this one first if it is one "
                    "(fox cluster up inside a Slurm allocation: its hosts); the others through agents (srun)")
    ap.add_argument("--launcher", choices=("slurm", "ssh"), default="slurm",
                    help="how agents start on the other hosts: srun in the allocation, or ssh")
    ap.add_argument("--http", default="127.0.0.1:0",
                    help="ADDRESS:PORT of the metrics and the live view (default 127.0.0.1, any free port)")
    args = ap.parse_args()
    args.bridge = args.bridge or args.pxe or bool(args.hosts and args.hosts.split(",") != [socket.gethostname()])
    Supervisor(args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
