"""`fox run`'s side of a job: asks the supervisor for nodes, runs place 0 as a
Linux process of the app's hosted build, streams every place's output with
a place prefix, relays death notices to place 0, and returns the job's exit
status.

Place 0 is started with
    FOX_ARGS       fox.node=0 fox.job=J fox.key=K fox.amport=P
                   fox.peers=0@127.0.0.1:P,K1@127.0.0.1:B1,...  (Bi: node Ki's bridge port on the switch)
    FOX_NOTICE_FD  the read end of a pipe: "dead K" lines (net/frontend_link_hosted.cc), and a
                   "status" line every STATUS_PERIOD_S
    FOX_CONTROL_FD the write end of a pipe: place 0's "add N" requests for more places
                   (frontend::RequestNodes, PlaceManager::addPlaces): fox run asks the supervisor
                   (op grow), which boots idle or new pool nodes into the job; and its
                   "status K..." answers, each node's report, which fox run relays to the
                   supervisor (op node_status) for fox status
and the job's arguments as its argv. The job's status is place 0's; when
place 0 succeeds, the first failing node's (a node that died counts as
failed only through what place 0 makes of it).
"""
import os
import selectors
import signal
import socket
import sys
import time
from typing import Optional, Tuple

from fox import nodes, state
import build_id  # noqa: E402 (boot/, on the path through fox.nodes)

# A place 0 line that tells where clients on this machine reach the job
# (e.g. the memcached app's gateway): `fox status` shows it while the job runs.
ENDPOINT = "fox: endpoint "  # then a service and its address

NODE_GRACE_S = 15  # how long nodes may run on after place 0 exited
# A node's agent tells the job's end as soon as the app returns, before the
# node prints what it prints on its way out (its exit handlers, then this
# line) and powers off: fox run reads its console that much longer.
EXIT_LINE = b"fox: exit status "
LAST_LINES_S = 3
STATUS_PERIOD_S = 2  # how often place 0 is asked for its nodes' status reports (fox status)


class Process:
    """A place: `argv` started by os.posix_spawn in a session of its own, stdin /dev/null, stdout
    and stderr one pipe (`stdout`), the descriptors `pass_fds` inherited; poll, wait, returncode,
    pid as subprocess.Popen's (whose import cost every fox run 3 ms)."""

    def __init__(self, argv, env, pass_fds=()):
        r, w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            for fd in pass_fds:
                os.set_inheritable(fd, True)
            self.pid = os.posix_spawn(argv[0], argv, env, setsid=True, file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, w, 1), (os.POSIX_SPAWN_DUP2, w, 2)])
        except BaseException:
            os.close(r)
            raise
        finally:
            for fd in pass_fds:
                os.set_inheritable(fd, False)
            os.close(null)
            os.close(w)
        self.stdout = os.fdopen(r, "rb", buffering=0)
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self):
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class Lines:
    """A place process's output (its stdout and stderr on one pipe), written line by line with the
    place's prefix. `on_line(text)` sees each line too."""

    def __init__(self, place, stream, on_line=None):
        self.prefix = "place%d| " % place
        self.stream = stream
        self.on_line = on_line
        self.buf = b""

    def read(self, out):
        """Reads what is there; False at the end of the output."""
        chunk = os.read(self.stream.fileno(), 65536)
        if not chunk:
            if self.buf:
                out.write(self.prefix + self.buf.decode("utf-8", "replace") + "\n")
                self.buf = b""
            out.flush()
            return False
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace")
            out.write(self.prefix + text + "\n")
            if self.on_line:
                self.on_line(text)
        out.flush()
        return True


def place_env(**variables):
    """A place's environment: ours, VARIABLES, and FOX_PARENT_PID, which makes the hosted runtime
    (kernel/linux/start.cc) line-buffer the place's stdout, so that its lines interleave with its
    log in order, and kill it with this command even if that is SIGKILLed."""
    return dict(os.environ, FOX_PARENT_PID=str(os.getpid()), **variables)


class ControlPipe:
    """Place 0's lines (net/frontend_link_hosted.cc): "add N" (frontend::RequestNodes) and "status N<TAB>KEY
    VALUE<TAB>..." (a node's status report, asked for by a "status" notice: ebb/messenger.cc)."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = b""
        self.reports = {}  # node -> {key: value}, the latest

    def read(self):
        """The counts asked for since the last call (reports go to self.reports); None at end of
        file (place 0 exited)."""
        try:
            chunk = os.read(self.fd, 8192)
        except BlockingIOError:
            return []
        if not chunk:
            return None
        self.buf += chunk
        counts = []
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            text = line.decode("ascii", "replace")
            words = text.split()
            fields = text.split("\t")
            head = fields[0].split()
            if len(words) == 2 and words[0] == "add" and words[1].isdigit() and 1 <= int(words[1]) <= 64:
                counts.append(int(words[1]))
            elif len(head) == 2 and head[0] == "status" and head[1].isdigit():
                report = {}
                for field in fields[1:200]:
                    key, _, value = field.partition(" ")
                    if key and len(key) <= 64:
                        report[key] = int(value) if value.isdigit() else value[:64]
                self.reports[int(head[1])] = report
            else:
                print("fox run: ignoring a bad request from place 0: %r" % line[:80], file=sys.stderr)
        return counts


class Tail:
    """Node output: new whole lines of its console log from `offset` on; `ended` once its last line
    (the kernel's "fox: exit status N") has come."""

    def __init__(self, node, place, path, offset):
        self.node = node
        self.prefix = "place%d| " % place
        self.path = path
        self.offset = offset
        self.partial = b""
        self.ended = False

    def poll(self, out, final=False):
        if self.ended:
            return  # what follows is the node's next boot (a pool node's agent)
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
            if EXIT_LINE in line:
                self.ended = True
                break
        if lines:
            out.flush()


def hosted_program(app):
    """(the app's name, its hosted program) for APP, an app of apps/ or a program's path; the program
    is None (said why) if it is not built."""
    program = app if os.sep in app else nodes.host_program(app)
    name = os.path.basename(app)
    if not os.access(program, os.X_OK):
        print("fox run: no hosted program for %s (%s): build it with make" % (name, program), file=sys.stderr)
        return name, None
    return name, program


def run(name, app, places, app_args, timeout, out=sys.stdout, kargs=(), reboot=False):
    """A job on the pool; `kargs`: boot arguments (fox.KEY=VALUE) for every place. APP: an app
    of apps/, or the path of a hosted program whose app the pool image bundles (e.g. a test's)."""
    app, program = hosted_program(app)
    if program is None:
        return 1
    place0_port = nodes.free_udp_port("0.0.0.0")
    conn = state.Connection(name)
    conn.send(op="job", app=app, places=places, args=list(app_args), place0_port=place0_port, reboot=bool(reboot),
              build_id=build_id.read(program), kargs=list(kargs))
    interrupted = {"now": False}

    def on_sigint(signum, frame):
        interrupted["now"] = True

    old = {s: signal.signal(s, on_sigint) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(conn, program, app, app_args, place0_port, timeout, interrupted, out, kargs)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        conn.close()


def _run(conn, program, app, app_args, place0_port, timeout, interrupted, out, kargs):
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
    fox_args = " ".join([fox_args] + msg.get("fd_args", []) + list(kargs))  # the nodes' membership timers
    notice_r, notice_w = os.pipe()
    control_r, control_w = os.pipe()  # place 0's requests for more nodes (frontend::RequestNodes)
    os.set_blocking(control_r, False)
    env = place_env(FOX_ARGS=fox_args, FOX_NOTICE_FD=str(notice_r), FOX_CONTROL_FD=str(control_w))
    place0 = Process([program] + list(app_args), env, pass_fds=(notice_r, control_w))
    os.close(notice_r)
    os.close(control_w)
    control = ControlPipe(control_r)
    tails = [Tail(n["node"], n["place"], n["console"], n["offset"]) for n in job_nodes]
    running = {n["node"] for n in job_nodes}
    statuses = {}
    dead = set()
    sel = selectors.DefaultSelector()
    sel.register(place0.stdout, selectors.EVENT_READ, "place0")
    sel.register(conn, selectors.EVENT_READ, "conn")
    sel.register(control_r, selectors.EVENT_READ, "control")
    place0_exit = os.pidfd_open(place0.pid)  # its exit wakes the loop (its output's end may come first)
    sel.register(place0_exit, selectors.EVENT_READ, "place0_exit")

    def endpoint_line(text):
        words = text.split() if text.startswith(ENDPOINT) else ()
        if len(words) >= 4:  # fox status shows it while the job runs
            conn.send(op="endpoint", service=words[2], address=words[3])

    place0_lines = Lines(0, place0.stdout, endpoint_line)
    status_asked_at = time.monotonic() - STATUS_PERIOD_S + 0.5  # the first time half a second in
    place0_eof = False
    place0_status = None
    place0_done_at = None
    status_override = None
    try:
        while True:
            for key_, _ in sel.select(0.05):
                if key_.data == "place0":
                    if not place0_lines.read(out):
                        sel.unregister(place0.stdout)
                        place0_eof = True
                elif key_.data == "place0_exit":
                    sel.unregister(place0_exit)
                elif key_.data == "control":
                    counts = control.read()
                    if counts is None:
                        sel.unregister(control_r)
                    for count in counts or ():
                        print("fox run: place 0 asked for %d more nodes" % count, file=sys.stderr)
                        conn.send(op="grow", count=count)
                    for node, report in control.reports.items():  # fox status shows them
                        conn.send(op="node_status", node=node, report=report)
                    control.reports.clear()
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
                        elif msg.get("event") == "grown":
                            for n in msg["nodes"]:
                                tails.append(Tail(n["node"], n["place"], n["console"], n["offset"]))
                                running.add(n["node"])
                            print("fox run: nodes %s joined the job" % ",".join(str(n["node"]) for n in msg["nodes"]),
                                  file=sys.stderr)
                        elif msg.get("event") == "error":
                            print("fox run: %s" % msg["error"], file=sys.stderr)
                        elif msg.get("event") == "dead":
                            running.discard(msg["node"])
                            dead.add(msg["node"])
                            tell_dead(notice_w, msg["node"], "node %d died" % msg["node"])
                        if b"\n" not in conn.buf:
                            break
                        msg = conn.receive(0)
            for t in tails:
                t.poll(out)
            if place0_status is None and time.monotonic() - status_asked_at >= STATUS_PERIOD_S:
                status_asked_at = time.monotonic()
                ask_status(notice_w)
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
        os.close(control_r)
        os.close(place0_exit)
        # The nodes whose end was told read to their last line, before the
        # job's end lets the supervisor take them back (bounded: a report
        # before a hang, or a console that lost it, must not hold fox run).
        until = time.monotonic() + LAST_LINES_S
        while not interrupted["now"] and any(t.node in statuses and not t.ended for t in tails) and \
                time.monotonic() < until:
            time.sleep(0.02)
            for t in tails:
                t.poll(out)
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
    status = exit_status(place0.returncode)
    if status == 0:
        for k in sorted(statuses):
            if statuses[k]:
                return statuses[k]
    return status


def run_hosted(app, places, app_args, timeout, out=sys.stdout, kargs=()):
    """`fox run --hosted`: every place a Linux process of the app's hosted build (or of the hosted
    program at the path APP, e.g. an APGAS program built elsewhere) on this machine,
    joined on 127.0.0.1 (no QEMU, no cluster, no root): for development, tests and comparisons
    with peers that run as processes. Place 0 is told of the others' deaths as in a cluster job
    (a place that exits with a status other than 0 while place 0 runs counts as dead: killed by
    a signal, a panic, fox.kill_at's exit, an error); the job's status is
    place 0's, else the first failing place's; 124 after --timeout, 130 on Ctrl-C."""
    import secrets
    import qemu_run  # boot/: the membership timers for nodes sharing this host's cores
    app, program = hosted_program(app)
    if program is None:
        return 1
    ports = [nodes.free_udp_port() for _ in range(places)]
    key = secrets.token_hex(16)
    job = secrets.randbelow(2 ** 31) + 1
    peers = ",".join("%d@127.0.0.1:%d" % (i, port) for i, port in enumerate(ports))
    fd_args = " ".join(qemu_run.membership_args("hosted", places))
    notice_r: Optional[int]  # None once place 0 has its end (closed here)
    control_w: Optional[int]
    notice_r, notice_w = os.pipe()
    control_r, control_w = os.pipe()  # place 0's requests (frontend::RequestNodes): "add N" lines
    os.set_blocking(control_r, False)
    interrupted = {"now": False}

    def on_sigint(signum, frame):
        interrupted["now"] = True

    old = {sig: signal.signal(sig, on_sigint) for sig in (signal.SIGINT, signal.SIGTERM)}
    procs, outputs = [], []
    sel = selectors.DefaultSelector()
    status_override = None
    open_outputs = set()
    ended = {}  # place -> status, in the order they ended

    def start_place(i, peers):
        env = place_env(FOX_ARGS="fox.node=%d fox.job=%d fox.key=%s fox.amport=%d fox.peers=%s %s %s" %
                   (i, job, key, ports[i], peers, fd_args, " ".join(kargs)))
        pass_fds: Tuple[int, ...] = ()
        if i == 0:
            assert notice_r is not None and control_w is not None  # place 0 starts before they are closed
            env["FOX_NOTICE_FD"] = str(notice_r)
            env["FOX_CONTROL_FD"] = str(control_w)
            pass_fds = (notice_r, control_w)
        p = Process([program] + list(app_args), env, pass_fds=pass_fds)
        procs.append(p)
        outputs.append(Lines(i, p.stdout))
        open_outputs.add(i)
        sel.register(p.stdout, selectors.EVENT_READ, i)

    def add_places(count):
        """Place 0 asked for more places (PlaceManager::addPlaces): fresh ids, every live place
        and the new ones in their fox.peers (the others let them join as they speak)."""
        first = len(procs)
        ports.extend(nodes.free_udp_port() for _ in range(count))
        live = [i for i in range(first + count) if i not in ended]
        new_peers = ",".join("%d@127.0.0.1:%d" % (i, ports[i]) for i in live)
        for i in range(first, first + count):
            start_place(i, new_peers)
        print("fox run: place 0 asked for %d more places: started %s" %
              (count, " ".join("%d:%d" % (i, procs[i].pid) for i in range(first, first + count))), file=sys.stderr)

    control = ControlPipe(control_r)
    try:
        for i in range(places):
            start_place(i, peers)
        os.close(notice_r)
        notice_r = None
        os.close(control_w)
        control_w = None
        sel.register(control_r, selectors.EVENT_READ, "control")
        print("fox run: %d hosted places of %s on 127.0.0.1 (job %d): pids %s" %
              (places, app, job, " ".join("%d:%d" % (i, p.pid) for i, p in enumerate(procs))), file=sys.stderr)
        started = time.monotonic()
        place0_done_at = None
        while True:
            for key_, _ in sel.select(0.05):
                i = key_.data
                if i == "control":
                    counts = control.read()
                    if counts is None:
                        sel.unregister(control_r)
                    for count in counts or ():
                        if len(procs) + count <= 201:
                            add_places(count)
                        else:
                            print("fox run: place 0 asked for %d more places: more than 200" % count, file=sys.stderr)
                    continue
                if not outputs[i].read(out):
                    sel.unregister(procs[i].stdout)
                    open_outputs.discard(i)
            for i, p in enumerate(procs):
                if i in ended or p.poll() is None:
                    continue
                ended[i] = p.returncode
                if i == 0:
                    place0_done_at = time.monotonic()
                elif place0_done_at is None and p.returncode != 0:
                    tell_dead(notice_w, i, "place %d died (%s)" % (i, describe(p.returncode)))
            if interrupted["now"]:
                print("fox run: interrupted: stopping the places", file=sys.stderr)
                status_override = 130
                break
            if timeout and time.monotonic() - started > timeout:
                print("fox run: the job did not finish in %g s: stopping it" % timeout, file=sys.stderr)
                status_override = 124
                break
            if len(ended) == len(procs) and not open_outputs:
                break
            if place0_done_at is not None and time.monotonic() - place0_done_at > NODE_GRACE_S:
                print("fox run: places %s still running %d s after place 0 exited: stopping them" %
                      (",".join(str(i) for i in range(len(procs)) if i not in ended), NODE_GRACE_S), file=sys.stderr)
                break
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()
        for i, lines in enumerate(outputs):
            if i in open_outputs:
                while lines.read(out):
                    pass
        if notice_r is not None:
            os.close(notice_r)
        if control_w is not None:
            os.close(control_w)
        os.close(control_r)
        os.close(notice_w)
        for sig, h in old.items():
            signal.signal(sig, h)
    if status_override is not None:
        return status_override
    status = exit_status(procs[0].returncode)
    if status == 0:
        for i in ended:
            if i != 0 and ended[i] != 0:
                return exit_status(ended[i])
    return status


def ask_status(notice_w):
    """Asks place 0 for its nodes' status reports (a "status" notice; it answers on FOX_CONTROL_FD)."""
    try:
        os.write(notice_w, b"status\n")
    except OSError:
        pass  # place 0 is gone


def tell_dead(notice_w, node, why):
    """Says so, and tells place 0 through its FOX_NOTICE_FD pipe (net/frontend_link_hosted.cc), which
    tells the job (am::NotifyDead). Place 0 gone: nothing to tell."""
    print("fox run: %s: telling the job" % why, file=sys.stderr)
    try:
        os.write(notice_w, b"dead %d\n" % node)
    except OSError:
        pass


def exit_status(returncode):
    return 128 - returncode if returncode < 0 else returncode


def describe(returncode):
    if returncode < 0:
        try:
            return "killed by %s" % signal.Signals(-returncode).name
        except ValueError:
            return "killed by signal %d" % -returncode
    return "status %d" % returncode
