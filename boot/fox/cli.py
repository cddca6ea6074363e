"""fox: the frontend command (DESIGN.md "Frontend and jobs").

    fox cluster up [--nodes N] [--cores C] [--mem M] [--iso] [--name NAME] [--timeout T] [--http ADDRESS:PORT]
                   [--hosts H1,H2,...]   (inside a Slurm allocation: over its hosts)
    fox cluster down [--name NAME]
    fox cluster list
    fox status [--json] [--name NAME]
    fox run APP [--places N] [--nodes N] [--timeout T] [--name NAME] [-- ARGS...]
    fox run APP --hosted [--places N] [--timeout T] [-- ARGS...]   (places as processes here)
    fox kill NODE [--name NAME]
    fox add --nodes K [--name NAME]
    fox logs NODE [--follow] [--name NAME]
    fox ui [--name NAME]        the live view's address (and the metrics', for Prometheus)
    fox pxe serve --interface IF --range A,B [--image IMG] [--append ARGS] [--hosts FILE]

Exit statuses: 0 done, 1 failed (the message says why), 2 bad arguments;
`fox run` returns the job's status (124 timed out, 130 interrupted).
"""
import argparse
import re
import os
import sys
import time
from typing import Dict

from fox import job, nodes, state

BOOT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def positive(limit):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a whole number" % text)
        if not 1 <= value <= limit:
            raise argparse.ArgumentTypeError("%d is not from 1 to %d" % (value, limit))
        return value
    return parse


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text)
    if value <= 0:
        raise argparse.ArgumentTypeError("%r is not a positive number of seconds" % text)
    return value


def address_range(text):
    import ipaddress
    first, comma, last = text.partition(",")
    try:
        a, b = ipaddress.IPv4Address(first.strip()), ipaddress.IPv4Address(last.strip())
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not A,B (two IPv4 addresses)" % text)
    if not comma or a > b:
        raise argparse.ArgumentTypeError("%r is not A,B with A <= B" % text)
    return str(a), str(b)


def http_address(text):
    """ADDRESS:PORT for the supervisor's HTTP port: an IPv4 address (or [IPv6]) and 0-65535."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535 or not host:
        raise argparse.ArgumentTypeError("%r: want ADDRESS:PORT (127.0.0.1:9464; port 0: any free one)" % text)
    import ipaddress  # here: every other command starts faster
    try:
        ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)
    except ValueError:
        raise argparse.ArgumentTypeError("%r: %r is not an IP address" % (text, host))
    return text


def host_names(text):
    """H1,H2,...: host names (letters, digits, '.', '-', '_'), at most 64, none twice."""
    names = text.split(",")
    ok = all(n and len(n) <= 253 and n[0].isalnum() and all(c.isalnum() or c in ".-_" for c in n) for n in names)
    if not ok or len(names) > 64 or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError("%r: want host names separated by commas (at most 64, none twice)" % text)
    return names


def cluster_name(text):
    if not state.valid_name(text):
        raise argparse.ArgumentTypeError("%r is not a cluster name (letters, digits, '_', '.', '-'; at most 32)" % text)
    return text


def add_name(p):
    p.add_argument("--name", type=cluster_name, default="default", help="the cluster (default: default)")


def terminal_width():
    """shutil.get_terminal_size().columns without shutil, whose import (through argparse's help
    formatter, made by every add_argument) cost every command 2 ms."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns or 80


class WidthKnown:
    """A help formatter mixin: the width from terminal_width() unless given."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position,  # type: ignore[call-arg]  # a mixin
                         terminal_width() - 2 if width is None else width)


class Formatter(WidthKnown, argparse.HelpFormatter):
    pass


class RawFormatter(WidthKnown, argparse.RawDescriptionHelpFormatter):
    pass


class Parser(argparse.ArgumentParser):
    """An ArgumentParser (and its subcommands') with Formatter."""

    def __init__(self, *args, formatter_class=Formatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)  # type: ignore[misc]


COMMANDS = ("cluster", "status", "run", "kill", "add", "pxe", "logs", "ui")


def parser(command=None):
    """The command line's parser; with `command`, the top level and that command's only (every
    command builds only its own: building them all cost each command 3 ms)."""
    ap = Parser(prog="fox", description=__doc__, formatter_class=RawFormatter)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    if command in (None, "cluster"):
        cluster = sub.add_parser("cluster", help="bring a cluster up or down, list clusters")
        csub = cluster.add_subparsers(dest="action", metavar="ACTION")
        csub.required = True
        up = csub.add_parser("up", help="boot a pool of nodes and leave a supervisor running")
        up.add_argument("--nodes", type=positive(200), default=3, help="nodes to boot (default 3)")
        up.add_argument("--cores", type=positive(64), default=1, help="cores per node (default 1)")
        up.add_argument("--mem", type=positive(65536), default=128, help="MiB per node (default 128)")
        up.add_argument("--timeout", type=seconds, default=120, help="how long to wait for every node to join")
        up.add_argument("--bridge", action="store_true", help="a namespace bridge instead of the switch (root)")
        up.add_argument("--pxe", action="store_true", help="nodes boot through iPXE (implies --bridge)")
        up.add_argument("--iso", action="store_true", help="nodes boot a GRUB ISO whose menu entry carries their arguments")
        up.add_argument("--hosts", type=host_names, metavar="H1,H2,...",
                        help="spread the nodes over these hosts, reached by ssh (root on each; default: this host, "
                             "or the Slurm allocation's hosts inside one)")
        up.add_argument("--http", type=http_address, default="127.0.0.1:0", metavar="ADDRESS:PORT",
                        help="where the supervisor serves its metrics (/metrics) and live view (/) "
                             "(default 127.0.0.1 and a free port: fox ui says which)")
        add_name(up)
        down = csub.add_parser("down", help="stop a cluster's nodes, switch and supervisor; remove its state")
        add_name(down)
        csub.add_parser("list", help="the clusters that are up, with their supervisors")

    if command in (None, "status"):
        st = sub.add_parser("status", help="one row per node of a cluster")
        st.add_argument("--json", action="store_true", help="machine-readable")
        add_name(st)

    if command in (None, "run"):
        run = sub.add_parser("run", help="run a job: place 0 here, the others on the pool's nodes")
        run.add_argument("app", help="the application (apps/APP); with --hosted also a hosted program's path")
        run.add_argument("--places", type=positive(201), help="places including place 0 (default: 1 + every node)")
        run.add_argument("--nodes", type=positive(200),
                         help="with no cluster up: make one of N nodes for this job and remove it after")
        run.add_argument("--timeout", type=seconds, help="stop the job after T seconds (status 124)")
        run.add_argument("--spares", type=positive(200),
                         help="APGAS apps: the last S of the job's places are spares (PlaceManager; fox.spares)")
        run.add_argument("--kill-at", metavar="PLACE:PHASE:N[,...]",
                         help="APGAS iterative apps, fault injection: the place exits in that phase "
                              "(step|checkpoint|restore) of the executor (fox.kill_at)")
        run.add_argument("--finish", choices=("none", "place0", "optimistic"),
                         help="APGAS apps: the finish mode of every place (fox.finish; default none)")
        run.add_argument("--reboot", action="store_true",
                         help="boot every node into the job afresh (default: idle nodes' agents take it, no reboot)")
        run.add_argument("--hosted", action="store_true",
                         help="every place a Linux process on this machine (no QEMU, no cluster); --places N (2)")
        run.epilog = "The job's arguments follow --: fox run ring --nodes 3 -- laps=100"
        add_name(run)

    if command in (None, "kill"):
        kill = sub.add_parser("kill", help="kill a node (SIGKILL of its QEMU); the job is told at once")
        kill.add_argument("node", type=positive(nodes.MAX_NODE_ID), help="node id")
        add_name(kill)

    if command in (None, "add"):
        add = sub.add_parser("add", help="boot more nodes into the pool (also while a job runs)")
        add.add_argument("--nodes", type=positive(200), required=True)
        add.add_argument("--wrong-key", action="store_true", help=argparse.SUPPRESS)  # tests: a node the pool refuses
        add.add_argument("--no-wait", action="store_true", help="return without waiting for them to join")
        add.add_argument("--into-job", action="store_true",
                         help="they join the job that runs (its Dht rebalances onto them) instead of idling in the pool")
        add.add_argument("--timeout", type=seconds, default=120)
        add_name(add)

    if command in (None, "pxe"):
        pxe = sub.add_parser("pxe", help="PXE-boot real machines: DHCP, TFTP and iPXE on an interface (root)")
        psub = pxe.add_subparsers(dest="action", metavar="ACTION")
        psub.required = True
        serve = psub.add_parser("serve", help="serve until Ctrl-C",
                                description="DHCP (dnsmasq) on IF with addresses A..B, TFTP of the image and iPXE "
                                            "scripts: iPXE ROMs boot the image by multiboot with the boot arguments; "
                                            "legacy PXE ROMs first chain-load Debian's undionly.kpxe (package ipxe). "
                                            "--hosts FILE: lines 'MAC IP [BOOT ARGS...]' give machines a fixed address "
                                            "and arguments of their own (fox.node=K fox.ip=... fox.key=...).")
        serve.add_argument("--interface", required=True, help="the interface facing the machines (it needs an IPv4 address)")
        serve.add_argument("--range", required=True, type=address_range, help="A,B: the addresses DHCP hands out")
        serve.add_argument("--image", help="the multiboot image (default: build/native/fox.elf, every app)")
        serve.add_argument("--append", default="fox.app=hello", help="boot arguments of machines not in --hosts")
        serve.add_argument("--hosts", help="a file of 'MAC IP [BOOT ARGS...]' lines")
        serve.add_argument("--dir", help="where its files go (default: a temporary directory, removed after)")

    if command in (None, "logs"):
        logs = sub.add_parser("logs", help="a node's console (every boot)")
        logs.add_argument("node", type=positive(nodes.MAX_NODE_ID))
        logs.add_argument("--follow", "-f", action="store_true", help="keep printing as it grows")
        add_name(logs)
    if command in (None, "ui"):
        add_name(sub.add_parser("ui", help="where the cluster's live view and metrics are served"))
    return ap


def fail(text):
    print("fox: %s" % text, file=sys.stderr)
    return 1


def usage(text):
    print(text, file=sys.stderr)
    return 2


def connect(name):
    if state.supervisor_pid(name) is None:
        raise state.SupervisorGone("no cluster %s is up (fox cluster up --name %s)" % (name, name))
    return state.Connection(name)


def format_uptime(s):
    if s is None:
        return "-"
    s = int(s)
    return "%dh%02dm" % (s // 3600, s // 60 % 60) if s >= 3600 else "%dm%02ds" % (s // 60, s % 60)


def am_counter(report, name):
    """A transport counter of a node's status report, as the table shows it ("-": none)."""
    value = report.get("am." + name)
    return str(value) if isinstance(value, int) else "-"


def print_table(reply, out=sys.stdout):
    several = len({r.get("host") for r in reply["nodes"]}) > 1  # nodes on several hosts: a column for it
    rows = [("NODE",) + (("HOST",) if several else ()) + ("ADDRESS", "STATE", "CORES", "UPTIME", "JOB/PLACE", "APP",
                                                          "BOOTS", "FRAMES RX/TX", "AM MSGS TX/RX", "RETX",
                                                          "PEERS DEAD")]
    for r in reply["nodes"]:
        sw = r["switch"]
        am = r.get("am") or {}  # in a job: its transport's counters (place 0 asks it: QueryStatus)
        rows.append((str(r["node"]),) + ((r.get("host") or "-",) if several else ()) + (
                     r["address"], r["state"], "%d (%s)" % (r["cores"], r["roles"]),
                     format_uptime(r["uptime"]), "%d/%d" % (r["job"], r["place"]) if r["job"] else "-",
                     r["app"] or "-", str(r["boots"]), "%d/%d" % (sw["rx"], sw["tx"]),
                     "%s/%s" % (am_counter(am, "messages_sent"), am_counter(am, "messages_delivered")) if am else "-",
                     am_counter(am, "frames_retransmitted"), am_counter(am, "peers_dead")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
    if reply.get("http"):
        out.write("live view: %s  metrics: %smetrics\n" % (reply["http"], reply["http"]))
    if reply.get("job"):
        j = reply["job"]
        out.write("job %d (%s) running on place 0 and nodes %s%s\n" % (
            j["id"], j["app"], ",".join(map(str, j["nodes"])),
            ", %d queued" % reply["queued"] if reply.get("queued") else ""))
        for e in j.get("endpoints", []):
            out.write("  %s for clients on this machine: %s (through place 0; the nodes' addresses are inside "
                      "the cluster's network)\n" % (e["service"], e["address"]))
    out.flush()


def wait_joined(name, ids, timeout, progress):
    """Waits until each node of `ids` (None: all) is no longer booting; the last status reply."""
    deadline = time.monotonic() + timeout
    tty = progress and sys.stderr.isatty()
    conn = state.Connection(name)
    try:
        while True:
            reply = conn.call(op="status")
            mine = [r for r in reply["nodes"] if ids is None or r["node"] in ids]
            booting = [r for r in mine if r["state"] == "booting"]
            if tty:
                sys.stderr.write("\rfox: %d of %d nodes joined" % (len(mine) - len(booting), len(mine)))
                sys.stderr.flush()
            if not booting:
                break
            if time.monotonic() > deadline:
                if tty:
                    sys.stderr.write("\n")
                raise TimeoutError("nodes %s did not join in %g s (fox logs NODE shows their consoles)" %
                                   (",".join(str(r["node"]) for r in booting), timeout))
            time.sleep(0.1)
        if tty:
            sys.stderr.write("\n")
        return reply
    finally:
        conn.close()


def cluster_up(name, count, cores, mem, timeout, quiet=False, iso=False, bridge=False, pxe=False, http="127.0.0.1:0",
               host_list=None):
    import shutil  # imported here: fox run and status start faster
    import secrets  # imported here: fox run and status start faster
    if state.supervisor_pid(name) is not None:
        return fail("cluster %s is up already (fox cluster down --name %s first)" % (name, name))
    state.clean_up(name, log=lambda s: print(s, file=sys.stderr))
    if not os.path.exists(nodes.node_image()):
        return fail("%s does not exist: build fox first (make)" % nodes.node_image())
    if (bridge or pxe) and os.geteuid() != 0:
        return usage("fox cluster up: error: --bridge and --pxe need root (a network namespace, a bridge, taps)")
    if (bridge or pxe) and shutil.which("dnsmasq") is None:
        return fail("--bridge and --pxe need dnsmasq: make deps (or apt-get install dnsmasq-base)")
    if pxe and iso:
        return usage("fox cluster up: error: --pxe and --iso exclude each other (nodes boot one way)")
    from fox import hosts  # here: only cluster up needs it
    launcher = "ssh"  # --hosts: the others through ssh
    if host_list is None:
        launcher = "slurm"
        try:
            host_list = hosts.slurm_hosts()  # inside a Slurm allocation: its hosts
        except hosts.HostError as e:
            return fail("fox cluster up: the Slurm allocation's hosts: %s" % e)
    import socket
    if host_list is not None:
        host_list = hosts.order(host_list)
        if host_list != [socket.gethostname()]:
            if os.geteuid() != 0:
                return usage("fox cluster up: error: nodes on several hosts (%s) need root on each (a bridge, taps, "
                             "VXLAN)" % ",".join(host_list))
            if iso:
                return usage("fox cluster up: error: --iso is for nodes on this host only")
            bridge = True
    d = state.cluster_dir(name)
    os.makedirs(d, mode=0o700)
    fd = os.open(os.path.join(d, "fox.key"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (secrets.token_hex(16) + "\n").encode())
    os.close(fd)
    env = dict(os.environ, PYTHONPATH=BOOT_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(os.path.join(d, "supervisor.log"), "ab") as logf:
        import subprocess  # here, as json below: fox run and status start faster
        sup = subprocess.Popen([sys.executable, "-u", "-S", "-m", "fox.supervisor", "--name", name, "--nodes", str(count),
                                "--cores", str(cores), "--mem", str(mem), "--http", http] + (["--iso"] if iso else []) +
                               (["--hosts", ",".join(host_list), "--launcher", launcher] if host_list else []) +
                               (["--bridge"] if bridge else []) + (["--pxe"] if pxe else []), stdin=subprocess.DEVNULL, stdout=logf,
                               stderr=subprocess.STDOUT, env=env, cwd="/", start_new_session=True)
    started = time.monotonic()
    while state.supervisor_pid(name) is None:  # (with other hosts: once their agents are ready)
        if sup.poll() is not None or time.monotonic() - started > (15 if not host_list else 15 + hosts.READY_TIMEOUT_S):
            with open(os.path.join(d, "supervisor.log"), errors="replace") as f:
                text = f.read()
            if sup.poll() is None:
                sup.kill()
            state.clean_up(name, log=lambda s: None)
            return fail("the supervisor of cluster %s did not start:\n%s" % (name, text))
        time.sleep(0.02)
    try:
        reply = wait_joined(name, None, timeout, progress=not quiet)
    except TimeoutError as e:
        return fail("cluster %s: %s" % (name, e))
    except KeyboardInterrupt:  # a cluster half up is no use: take it down
        cluster_down(name, quiet=True)
        print("fox: interrupted: cluster %s is down" % name, file=sys.stderr)
        return 130
    if not quiet:
        print("cluster %s: %d nodes up in %.2f s (supervisor %d, state in %s)" % (
            name, len(reply["nodes"]), time.monotonic() - started, reply["pid"], d))
        print_table(reply)
    bad = [r for r in reply["nodes"] if r["state"] != "idle"]
    if bad:
        return fail("cluster %s: nodes %s did not join: %s" % (
            name, ",".join(str(r["node"]) for r in bad), ", ".join(r["state"] for r in bad)))
    return 0


def cluster_down(name, quiet=False):
    pid = state.supervisor_pid(name)
    if pid is None:
        if state.clean_up(name, log=lambda s: print(s, file=sys.stderr)):
            return 0
        return fail("no cluster %s is up" % name)
    try:
        conn = state.Connection(name)
        conn.call(op="down", timeout=10)
        conn.close()
    except (state.SupervisorGone, OSError, ValueError):
        pass
    deadline = time.monotonic() + 15
    while state.process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if state.process_alive(pid):
        os.kill(pid, 9)
    state.clean_up(name, log=lambda s: None)
    if not quiet:
        print("cluster %s: down" % name)
    return 0


def cluster_list():
    names = state.list_clusters()
    if not names:
        print("no clusters (state in %s)" % state.state_root())
        return 0
    for name in names:
        pid = state.supervisor_pid(name)
        if pid is None:
            print("%s: supervisor gone (fox cluster down --name %s cleans up)" % (name, name))
            continue
        try:
            conn = state.Connection(name)
            reply = conn.call(op="status", timeout=10)
            conn.close()
            counts: Dict[str, int] = {}
            for r in reply["nodes"]:
                counts[r["state"]] = counts.get(r["state"], 0) + 1
            print("%s: supervisor %d, %d nodes (%s)%s" % (name, pid, len(reply["nodes"]), ", ".join(
                "%d %s" % (v, k) for k, v in sorted(counts.items())),
                ", job %d running" % reply["job"]["id"] if reply["job"] else ""))
        except (state.SupervisorGone, OSError) as e:
            print("%s: supervisor %d not answering (%s)" % (name, pid, e))
    return 0


def status(args):
    conn = connect(args.name)
    reply = conn.call(op="status")
    conn.close()
    if args.json:
        import json
        json.dump(reply, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_table(reply)
    return 0


def ui(args):
    conn = connect(args.name)
    reply = conn.call(op="status")
    conn.close()
    if not reply.get("http"):
        return fail("cluster %s: its supervisor serves no HTTP port (an older fox: take the cluster down and up)" %
                    args.name)
    print("cluster %s: live view %s, metrics for Prometheus %smetrics" % (args.name, reply["http"], reply["http"]))
    return 0


def run(args):
    app_args = args.job_args
    kargs = ["fox.finish=%s" % args.finish] if args.finish else []
    if args.kill_at:
        if not re.fullmatch(r"[0-9]+:(step|checkpoint|restore):[0-9]+(,[0-9]+:(step|checkpoint|restore):[0-9]+)*",
                            args.kill_at):
            raise argparse.ArgumentTypeError("--kill-at %r: expected PLACE:step|checkpoint|restore:N[,...]"
                                             % args.kill_at)
        kargs.append("fox.kill_at=%s" % args.kill_at)
    if args.spares:
        if args.places and args.spares >= args.places:
            raise argparse.ArgumentTypeError("--spares %d of --places %d would leave none active (place 0 is never a "
                                             "spare)" % (args.spares, args.places))
        kargs.append("fox.spares=%d" % args.spares)
    if args.hosted:
        if args.nodes:
            raise argparse.ArgumentTypeError("--hosted runs no nodes: say how many places with --places")
        return job.run_hosted(args.app, args.places or 2, app_args, args.timeout, kargs=kargs)
    made = False
    if state.supervisor_pid(args.name) is None:
        if not args.nodes:
            return fail("no cluster %s is up: fox cluster up first, or fox run --nodes N to make one for the job"
                        % args.name)
        if args.places and args.places > args.nodes + 1:
            raise argparse.ArgumentTypeError("--places %d needs %d nodes; --nodes is %d" %
                                             (args.places, args.places - 1, args.nodes))
        status_up = cluster_up(args.name, args.nodes, 1, 128, 120, quiet=True)
        if status_up:
            return status_up
        made = True
    places = args.places or (args.nodes + 1 if args.nodes else None)
    try:
        return job.run(args.name, args.app, places, app_args, args.timeout, kargs=kargs, reboot=args.reboot)
    finally:
        if made:
            cluster_down(args.name, quiet=True)


def kill(args):
    conn = connect(args.name)
    reply = conn.call(op="kill", node=args.node)
    conn.close()
    if not reply["ok"]:
        return fail(reply["error"])
    print("node %d: killed" % args.node)
    return 0


def add(args):
    conn = connect(args.name)
    reply = conn.call(op="add", count=args.nodes, wrong_key=args.wrong_key, into_job=args.into_job)
    conn.close()
    if not reply.get("ok"):
        return fail(reply.get("error", "the supervisor refused"))
    ids = reply["nodes"]
    print("nodes %s: booting into cluster %s%s" % (",".join(map(str, ids)), args.name,
                                                    ", then into its job" if args.into_job else ""))
    if args.no_wait:
        return 0
    try:
        final = wait_joined(args.name, set(ids), args.timeout, progress=True)
    except TimeoutError as e:
        return fail(str(e))
    good = ("idle", "running") if args.into_job else ("idle",)
    bad = [r for r in final["nodes"] if r["node"] in ids and r["state"] not in good]
    for r in bad:
        print("fox: node %d: %s" % (r["node"], r["state"]), file=sys.stderr)
    return 1 if bad else 0


def pxe_serve(args):
    import shutil  # imported here: fox run and status start faster
    import signal
    import tempfile
    from fox import netns
    if os.geteuid() != 0:
        return usage("fox pxe serve: error: needs root (DHCP and TFTP ports)")
    if shutil.which("dnsmasq") is None:
        return fail("pxe serve needs dnsmasq: make deps (or apt-get install dnsmasq-base)")
    if not os.path.exists("/sys/class/net/%s" % args.interface):
        return usage("fox pxe serve: error: --interface: no interface %r here" % args.interface)
    image = args.image or nodes.node_image()
    if not os.path.isfile(image):
        return usage("fox pxe serve: error: --image: %s does not exist%s" % (
            image, "" if args.image else " (build fox first: make)"))
    hosts = []
    if args.hosts:
        try:
            hosts = netns.parse_hosts(args.hosts)
        except (OSError, ValueError) as e:
            return usage("fox pxe serve: error: --hosts: %s" % e)
    directory = args.dir or tempfile.mkdtemp(prefix="fox-pxe-")
    os.makedirs(directory, exist_ok=True)
    stopping = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *a: stopping.append(1))
    try:
        netns.serve(args.interface, args.range[0], args.range[1], image, args.append, hosts, directory,
                    lambda text: print(text, flush=True), lambda: bool(stopping))
    except netns.NetError as e:
        return fail("pxe serve: %s" % e)
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    print("fox pxe serve: stopped", flush=True)
    return 0


def logs(args):
    path = os.path.join(state.cluster_dir(args.name), "node%d.log" % args.node)
    if state.supervisor_pid(args.name) is None:
        return fail("no cluster %s is up" % args.name)
    if not os.path.exists(path):
        return fail("node %d of cluster %s has no console log" % (args.node, args.name))
    with open(path, "rb") as f:
        while True:
            data = f.read()
            if data:
                sys.stdout.write(data.decode("utf-8", "replace").replace("\r\n", "\n"))
                sys.stdout.flush()
            if not args.follow:
                return 0
            if state.supervisor_pid(args.name) is None:
                return 0
            time.sleep(0.2)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = parser(argv[0] if argv and argv[0] in COMMANDS else None)
    job_args = []
    if "--" in argv:  # what follows is the job's (fox run), never fox's own options
        i = argv.index("--")
        argv, job_args = argv[:i], argv[i + 1:]
    args = ap.parse_args(argv)
    if job_args and args.command != "run":
        ap.error("only fox run takes arguments after --")
    args.job_args = job_args
    try:
        if args.command == "cluster":
            if args.action == "up":
                return cluster_up(args.name, args.nodes, args.cores, args.mem, args.timeout, iso=args.iso,
                                  bridge=args.bridge, pxe=args.pxe, http=args.http, host_list=args.hosts)
            if args.action == "down":
                return cluster_down(args.name)
            return cluster_list()
        if args.command == "status":
            return status(args)
        if args.command == "run":
            try:
                return run(args)
            except argparse.ArgumentTypeError as e:
                ap.exit(2, "fox run: error: %s\n" % e)
        if args.command == "kill":
            return kill(args)
        if args.command == "add":
            return add(args)
        if args.command == "logs":
            return logs(args)
        if args.command == "ui":
            return ui(args)
        if args.command == "pxe":
            return pxe_serve(args)
    except state.SupervisorGone as e:
        return fail(str(e))
    except KeyboardInterrupt:
        return 130
    return 2


def exit_main():
    """main(), then the process's end without the interpreter's finalization (3 ms a command);
    build/bin/fox calls it. Every file the command wrote is closed or flushed by then."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if code is None else code)
