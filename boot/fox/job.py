"""`fox run`'s side of a job: asks the supervisor for nodes, runs place 0 as a
Linux process of the app's hosted build, streams every place's output with
a place prefix, relays death notices to place 0, and returns the job's exit
status.

Place 0 is started with
    FOX_ARGS       fox.node=0 fox.job=J fox.key=K fox.amport=P
                   fox.peers=0@127.0.0.1:P,K1@127.0.0.1:B1,...  (Bi: node Ki's bridge port on the switch)
    FOX_NOTICE_FD  the read end of a pipe: "dead K" lines (net/am_notices_hosted.cc)
and the job's arguments as its argv. The job's status is place 0's; when
place 0 succeeds, the first failing node's (a node that died counts as
failed only through what place 0 makes of it).
"""
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time

from fox import nodes, state
import build_id  # noqa: E402 (boot/, on the path through fox.nodes)

# A place 0 line that tells where clients on this machine reach the job
# (e.g. the memcached app's gateway): `fox status` shows it while the job runs.
ENDPOINT = re.compile(r"^fox: endpoint (\S+) (\S+)")

NODE_GRACE_S = 15  # how long nodes may run on after place 0 exited



class Tail:
    """Node output: new whole lines of its console log from `offset` on."""

    def __init__(self, place, path, offset):
        self.prefix = "place%d| " % place
        self.path = path
        self.offset = offset
        self.partial = b""

    def poll(self, out, final=False):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        if final and self.partial:
            lines.append(self.partial)
            self.partial = b""
        for line in lines:
            out.write(self.prefix + line.decode("utf-8", "replace").rstrip("\r") + "\n")
        if lines:
            out.flush()


def run(name, app, places, app_args, timeout, out=sys.stdout):
    program = nodes.host_program(app)
    if not os.access(program, os.X_OK):
        print("fox run: no hosted program for %s (%s): build it with make" % (app, program), file=sys.stderr)
        return 1
    place0_port = nodes.free_udp_port("0.0.0.0")
    conn = state.Connection(name)
    conn.send(op="job", app=app, places=places, args=list(app_args), place0_port=place0_port,
              build_id=build_id.read(program))
    interrupted = {"now": False}

    def on_sigint(signum, frame):
        interrupted["now"] = True

    old = {s: signal.signal(s, on_sigint) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(conn, program, app, app_args, place0_port, timeout, interrupted, out)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        conn.close()


def _run(conn, program, app, app_args, place0_port, timeout, interrupted, out):
    started = time.monotonic()
    while True:
        try:
            msg = conn.receive(0.2)
        except socket.timeout:
            if interrupted["now"]:
                print("fox run: interrupted before the job started", file=sys.stderr)
                return 130
            continue
        if msg is None or msg.get("event") == "down":
            print("fox run: the cluster went down", file=sys.stderr)
            return 1
        if msg.get("event") == "queued":
            print("fox run: waiting for job %d to finish" % msg["behind"], file=sys.stderr)
            continue
        if msg.get("event") == "error":
            print("fox run: %s" % msg["error"], file=sys.stderr)
            return 1
        if msg.get("event") == "start":
            break
    job, key, job_nodes = msg["job"], msg["key"], msg["nodes"]
    peers = ",".join(["0@127.0.0.1:%d" % place0_port] +
                     ["%d@127.0.0.1:%d" % (n["node"], n["bridge_port"]) for n in job_nodes])
    fox_args = "fox.node=0 fox.job=%d fox.key=%s fox.amport=%d fox.peers=%s" % (job, key, place0_port, peers)
    fox_args = " ".join([fox_args] + msg.get("fd_args", []))  # the nodes' membership timers
    notice_r, notice_w = os.pipe()
    env = dict(os.environ, FOX_ARGS=fox_args, FOX_NOTICE_FD=str(notice_r))
    # Line-buffered stdout (coreutils' stdbuf), so that place 0's lines interleave with its log in order.
    line_buffered = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
    # setpriv: place 0 dies with this command even if it is SIGKILLed (PR_SET_PDEATHSIG).
    place0 = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--"] + line_buffered + [program] + list(app_args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=env, pass_fds=(notice_r,), start_new_session=True)
    os.close(notice_r)
    tails = [Tail(n["place"], n["console"], n["offset"]) for n in job_nodes]
    running = {n["node"] for n in job_nodes}
    statuses = {}
    dead = set()
    sel = selectors.DefaultSelector()
    sel.register(place0.stdout, selectors.EVENT_READ, "place0")
    sel.register(conn, selectors.EVENT_READ, "conn")
    place0_buf = b""
    place0_eof = False
    place0_status = None
    place0_done_at = None
    status_override = None
    try:
        while True:
            for key_, _ in sel.select(0.05):
                if key_.data == "place0":
                    chunk = os.read(place0.stdout.fileno(), 65536)
                    if not chunk:
                        sel.unregister(place0.stdout)
                        place0_eof = True
                        if place0_buf:
                            out.write("place0| " + place0_buf.decode("utf-8", "replace") + "\n")
                        continue
                    place0_buf += chunk
                    *lines, place0_buf = place0_buf.split(b"\n")
                    for line in lines:
                        text = line.decode("utf-8", "replace")
                        out.write("place0| " + text + "\n")
                        endpoint = ENDPOINT.match(text)
                        if endpoint:  # fox status shows it while the job runs
                            conn.send(op="endpoint", service=endpoint.group(1), address=endpoint.group(2))
                    out.flush()
                else:
                    try:
                        msg = conn.receive(0)
                    except (socket.timeout, BlockingIOError):
                        continue
                    if msg is None or msg.get("event") == "down":
                        print("fox run: the cluster went down during the job", file=sys.stderr)
                        status_override = 1
                        interrupted["now"] = True
                        sel.unregister(conn)
                        continue
                    while True:
                        if msg.get("event") == "exit":
                            running.discard(msg["node"])
                            statuses[msg["node"]] = msg["status"]
                        elif msg.get("event") == "dead":
                            running.discard(msg["node"])
                            dead.add(msg["node"])
                            print("fox run: node %d died: telling the job" % msg["node"], file=sys.stderr)
                            try:
                                os.write(notice_w, b"dead %d\n" % msg["node"])
                            except OSError:
                                pass
                        if b"\n" not in conn.buf:
                            break
                        msg = conn.receive(0)
            for t in tails:
                t.poll(out)
            if place0_status is None and place0.poll() is not None:
                place0_status = place0.returncode
                place0_done_at = time.monotonic()
            if interrupted["now"]:
                break
            if timeout and time.monotonic() - started > timeout:
                print("fox run: the job did not finish in %g s: stopping it" % timeout, file=sys.stderr)
                status_override = 124
                break
            if place0_status is not None and place0_eof and not running:
                break
            if place0_done_at is not None and time.monotonic() - place0_done_at > NODE_GRACE_S:
                print("fox run: nodes %s still running %d s after place 0 exited: stopping them" %
                      (",".join(map(str, sorted(running))), NODE_GRACE_S), file=sys.stderr)
                break
    finally:
        if place0.poll() is None:
            os.killpg(place0.pid, signal.SIGKILL)
            place0.wait()
        os.close(notice_w)
        try:
            conn.send(op="end")
        except OSError:
            pass
        for t in tails:
            t.poll(out, final=True)
        out.flush()
    if interrupted["now"] and status_override is None:
        print("fox run: interrupted: job %d stopped, its nodes return to the pool" % job, file=sys.stderr)
        return 130
    if status_override is not None:
        return status_override
    status = place0.returncode
    if status < 0:
        status = 128 - status
    if status == 0:
        for k in sorted(statuses):
            if statuses[k]:
                return statuses[k]
    return status
