"""Where a cluster's state lives, and how a crashed supervisor is cleaned up.

One directory per cluster name: $FOX_STATE_DIR/NAME if set, else
$XDG_RUNTIME_DIR/fox/NAME, else /tmp/fox-$UID/NAME. It holds
    supervisor.pid   the supervisor's pid (written once it listens)
    supervisor.sock  its control socket (JSON lines, see supervisor.py)
    supervisor.log   what it logged: boots, joins, refusals, deaths, jobs
    fox.key          the cluster's key, 32 hexadecimal digits (mode 0600)
    http.url         where the supervisor serves metrics and the live view (fox ui)
    nodeK.log        node K's console over all its boots; nodeK.pid its QEMU's pid
The directory exists exactly while the cluster does: `down` removes it.
"""
import json
import os
import signal
import socket
import time

NAME_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
NAME_CHARS = NAME_FIRST + "_.-"


def valid_name(text):
    """A cluster name: [A-Za-z0-9][A-Za-z0-9_.-]{0,31} (no regular expression: `re` costs every
    command 3 ms to import)."""
    return 1 <= len(text) <= 32 and text[0] in NAME_FIRST and all(c in NAME_CHARS for c in text)


def state_root():
    if os.environ.get("FOX_STATE_DIR"):
        return os.path.abspath(os.environ["FOX_STATE_DIR"])
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "fox")
    return "/tmp/fox-%d" % os.getuid()


def cluster_dir(name):
    return os.path.join(state_root(), name)


def stop_on_signals(sel, stop):
    """SIGTERM, SIGINT and SIGHUP call stop() and wake the selector `sel` (a pipe it watches): how
    the supervisor and a host's agent end their loops."""
    import selectors
    stop_r, stop_w = os.pipe()
    os.set_blocking(stop_w, False)
    signal.set_wakeup_fd(stop_w)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *a: stop())
    sel.register(stop_r, selectors.EVENT_READ, lambda: os.read(stop_r, 64))


def process_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def supervisor_pid(name):
    """The pid of `name`'s supervisor if it is alive (and really is one), else None."""
    pid = read_pid(os.path.join(cluster_dir(name), "supervisor.pid"))
    if pid and process_alive(pid) and b"fox.supervisor" in cmdline(pid):
        return pid
    return None


def node_processes(name):
    """Pids of QEMUs whose -name says they belong to cluster `name` and whose
    console is in its state directory (another state root may have a cluster
    of the same name), from /proc, so that a crashed supervisor's nodes are
    found even without pid files."""
    tag = ("fox:%s:node" % name).encode()
    where = ("path=%s/" % cluster_dir(name)).encode()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            args = cmdline(int(entry))
            if args and b"qemu" in args[0] and any(a.startswith(tag) for a in args) and \
                    any(where in a for a in args):
                pids.append(int(entry))
    return pids


def clean_up(name, log=print):
    """Removes everything a dead supervisor of `name` left: its QEMUs and its
    state directory. Returns True if there was anything."""
    import shutil  # imported here: fox run and status start faster
    d = cluster_dir(name)
    found = False
    pids = node_processes(name)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            found = True
        except OSError:
            pass
    deadline = time.monotonic() + 5
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    from fox import netns  # bridge mode: its dnsmasq and namespace
    if netns.clean_up(d):
        found = True
    if os.path.isdir(d):
        shutil.rmtree(d, ignore_errors=True)
        found = True
    if found:
        log("fox: cluster %s: cleaned up after a supervisor that is gone (%d QEMU processes)" % (name, len(pids)))
    return found


def list_clusters():
    root = state_root()
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [n for n in names if os.path.isdir(os.path.join(root, n)) and valid_name(n)]


class SupervisorGone(Exception):
    pass


class Connection:
    """A connection to a supervisor's control socket: JSON requests and replies, one per line."""

    def __init__(self, name, timeout=30):
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(os.path.join(cluster_dir(name), "supervisor.sock"))
        except OSError as e:
            self.sock.close()
            raise SupervisorGone(str(e))
        self.buf = b""

    def send(self, **request):
        # Blocking, up to the connection's timeout: a receive(0) before leaves
        # the socket non-blocking, and a supervisor busy with many nodes may
        # let its side fill (64 nodes' status reports at once made sendall
        # fail at once with "timed out").
        self.sock.settimeout(self.timeout)
        self.sock.sendall(json.dumps(request).encode() + b"\n")

    def receive(self, timeout=None):
        """The next message, or None at end of file."""
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, BlockingIOError):  # no whole line yet: the caller waits again
                raise
            except OSError:
                chunk = b""
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, timeout=60, **request):
        self.send(**request)
        reply = self.receive(timeout)
        if reply is None:
            raise SupervisorGone("the supervisor closed the connection")
        return reply

    def fileno(self):
        return self.sock.fileno()

    def close(self):
        self.sock.close()
