#!/usr/bin/env python3
"""Stock-client conformance of the memcached protocol layer (tests/memcached).

Usage:
  conformance.py memccapable MC_SERVER      every memccapable test (text and
                                            binary) passes
  conformance.py pymemcache MC_SERVER CHECK the pymemcache conversation CHECK
                                            (pymemcache_check.py) passes
  conformance.py reference MC_SERVER CHECK  the same two against memcached
                                            itself, and the same raw exchanges
                                            answered alike by both (differential.py);
                                            exit 77 (skipped) when memcached is
                                            not installed
  conformance.py remote HOST PORT CHECK [CORES]
                                            memccapable and CHECK against a
                                            server that runs already (a fox
                                            node: the memcached app); with
                                            CORES, cores_check.py too (its
                                            connections served on CORES cores)

Each server (mc_server on a port it picks, memcached on a free one) listens on
127.0.0.1 only and is killed however the test ends: on return, on an
exception, on SIGTERM or SIGINT (CTest's timeout), and by the kernel if this
script dies first (PR_SET_PDEATHSIG).
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def die_with_parent():
    """In the child before exec: SIGKILL when this script's process exits."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Server:
    """A server process on 127.0.0.1, killed on exit from the `with`."""

    host = "127.0.0.1"

    def __init__(self, argv, port=None):
        self.argv, self.port, self.process = argv, port, None

    def __enter__(self):
        self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
        if self.port is None:  # mc_server prints the port it bound
            words = self.process.stdout.readline().split()
            if len(words) != 3 or words[:2] != ["listening", "on"]:
                raise RuntimeError(f"{self.argv[0]} did not start")
            self.port = int(words[2])
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.argv[0]} is not accepting on port {self.port}")
                time.sleep(0.05)
        print(f"{os.path.basename(self.argv[0])} on 127.0.0.1:{self.port}", flush=True)
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        return False

    def check_alive(self):
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.argv[0]} exited with {self.process.returncode}")


class Remote:
    """A server this script did not start (HOST:PORT)."""

    def __init__(self, host, port):
        self.host, self.port = host, port

    def check_alive(self):
        socket.create_connection((self.host, self.port), timeout=5).close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_memccapable():
    # Debian names it memccapable (libmemcached-tools); upstream memcapable.
    return shutil.which("memccapable") or shutil.which("memcapable")


def python_with_pymemcache():
    for python in (sys.executable, "/usr/bin/python3"):
        if python and os.path.exists(python):
            if subprocess.run([python, "-c", "import pymemcache"], capture_output=True).returncode == 0:
                return python
    return None


def run_memccapable(server):
    tool = find_memccapable()
    if tool is None:
        raise RuntimeError("memccapable not found (Debian package libmemcached-tools; `make deps`)")
    run = subprocess.run([tool, "-v", "-t", "5", "-h", server.host, "-p", str(server.port)],
                         capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    print(out, flush=True)
    failed = out.count("[FAIL]")
    passed = out.count("[pass]")
    server.check_alive()
    if run.returncode != 0 or failed or passed == 0 or "All tests passed" not in out:
        raise RuntimeError(f"memccapable: exit {run.returncode}, {passed} passed, {failed} failed")
    print(f"memccapable: {passed} passed, 0 failed", flush=True)


def run_pymemcache(server, check, more=()):
    """Runs CHECK PORT HOST [MORE...]."""
    python = python_with_pymemcache()
    if python is None:
        raise RuntimeError("pymemcache not found (Debian package python3-pymemcache; `make deps`)")
    run = subprocess.run([python, check, str(server.port), server.host, *more], capture_output=True, text=True,
                         timeout=120)
    print(run.stdout + run.stderr, flush=True)
    server.check_alive()
    if run.returncode != 0:
        raise RuntimeError(f"pymemcache check: exit {run.returncode}")


def main(argv):
    if len(argv) < 3 or argv[1] not in ("memccapable", "pymemcache", "reference", "remote"):
        print(__doc__)
        return 2
    mode, mc_server = argv[1], argv[2]
    if mode == "remote":
        if len(argv) not in (5, 6):
            print(__doc__)
            return 2
        server = Remote(argv[2], int(argv[3]))
        run_memccapable(server)
        run_pymemcache(server, argv[4])
        if len(argv) == 6:
            run_pymemcache(server, os.path.join(HERE, "cores_check.py"), [argv[5]])
        return 0
    if mode == "memccapable":
        with Server([mc_server, "0"]) as server:
            run_memccapable(server)
    elif mode == "pymemcache":
        with Server([mc_server, "0"]) as server:
            run_pymemcache(server, argv[3])
    else:
        memcached = shutil.which("memcached") or ("/usr/bin/memcached" if os.path.exists("/usr/bin/memcached") else None)
        if memcached is None:
            print("SKIP: memcached is not installed (Debian package memcached; `make deps`)")
            return SKIP
        import differential
        def reference():
            port = free_port()
            argv = [memcached, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "1", "-m", "64"]
            return Server(argv + (["-u", "root"] if os.geteuid() == 0 else []), port)

        with reference() as real:
            run_memccapable(real)
            run_pymemcache(real, argv[3])
        # Fresh servers for the comparison: both start empty.
        with reference() as real, Server([mc_server, "0"]) as fox:
            differential.compare(("127.0.0.1", real.port), ("127.0.0.1", fox.port))
            real.check_alive()
            fox.check_alive()
    print(f"memcached conformance ({mode}): ok")
    return 0


def on_signal(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the `with`s: servers killed


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sys.path.insert(0, HERE)
    try:
        sys.exit(main(sys.argv))
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        print(f"FAIL: {e}")
        sys.exit(1)
