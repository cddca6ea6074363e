"""A cluster's bridge network (`fox cluster up --bridge` / `--pxe`, root), and
the DHCP/TFTP/iPXE service that `fox pxe serve` runs on a real interface.

Bridge mode. One network namespace per cluster (its name is in the state
directory's `netns` file), holding
    br0    a Linux bridge, address 10.77.255.254/16: dnsmasq's (DHCP, TFTP)
    tapK   node K's QEMU NIC (-netdev tap), a port of br0
    sw0    the supervisor's own tap, a port of br0: the switch (switch.py)
           answers there for 10.77.0.1, the nodes' gateway and place 0
Nodes reach one another through the kernel's bridge; what they send to
10.77.0.1 reaches the switch, which checks the cluster's key and carries it
to the job's place 0 on 127.0.0.1, as in a rootless cluster. Nodes take
their address by DHCP: dnsmasq gives node K the plan's address (nodes.py)
by its MAC (the hosts file, re-read on SIGHUP as nodes are added).

PXE (--pxe, and `fox pxe serve`). dnsmasq answers a PXE ROM's DHCP with
   - iPXE (QEMU's ROM, or option 175 present): boot.ipxe, a script that
     chains to node-MAC.ipxe (MAC as 52-54-00-...), written per node and per
     boot: `kernel tftp://SERVER/IMAGE ARGS` then `boot` (multiboot);
   - a legacy PXE ROM: undionly.kpxe (Debian's ipxe package), which is iPXE
     and asks again.
A MAC without a script of its own gets default.ipxe (pxe serve: the image
with the arguments given on its command line).
"""
import ctypes
import hashlib
import os
import shutil
import signal
import subprocess
import time

SERVER_IP = "10.77.255.254"
PREFIX = 16
BRIDGE = "br0"
SWITCH_TAP = "sw0"
UNDIONLY = "/usr/lib/ipxe/undionly.kpxe"
CLONE_NEWNET = 0x40000000
# iPXE waits for IPv6 router advertisements (13 s here without one) and for
# ProxyDHCP offers (4 s) before it boots: a stateless RA on the bridge's ULA
# and iPXE's no-pxedhcp option (175.176) make it go at once.
QUICK_IPXE = ["--enable-ra", "--dhcp-range=fd77::,ra-only", "--dhcp-option=encap:175,176,1b"]


class NetError(Exception):
    pass


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetError("%s: %s" % (" ".join(cmd), (r.stderr or r.stdout).strip()))
    return r


def namespace_name(cluster, directory):
    """fox-NAME-HASH: the hash of the state directory tells apart two clusters of one name."""
    return "fox-%s-%s" % (cluster[:20], hashlib.sha1(directory.encode()).hexdigest()[:6])


def mac_path_name(mac):
    return "node-%s.ipxe" % mac.lower().replace(":", "-")


def ipxe_script(image_name, append):
    return "#!ipxe\necho fox: loading %s\nkernel tftp://${next-server}/%s %s\nboot\n" % (image_name, image_name, append)


BOOT_IPXE = "#!ipxe\nchain tftp://${next-server}/node-${net0/mac:hexhyp}.ipxe || chain tftp://${next-server}/default.ipxe\n"


def dnsmasq_command(directory, interface, dhcp_range, router=None, extra=()):
    """dnsmasq as fox runs it: DHCP (hosts file), TFTP from DIR/tftp, no DNS, its pid and log in DIR."""
    cmd = ["dnsmasq", "--conf-file=/dev/null", "--keep-in-foreground", "--port=0", "--no-resolv", "--no-hosts",
           "--user=root", "--group=root",  # it reads the state directory (0700), which is root's
           "--interface=%s" % interface, "--bind-interfaces", "--except-interface=lo",
           "--dhcp-range=%s" % dhcp_range, "--dhcp-hostsfile=%s" % os.path.join(directory, "dhcp-hosts"),
           "--dhcp-authoritative", "--dhcp-leasefile=%s" % os.path.join(directory, "dhcp.leases"),
           "--enable-tftp", "--tftp-root=%s" % os.path.join(directory, "tftp"),
           "--dhcp-match=set:ipxe,175", "--dhcp-userclass=set:ipxe,iPXE",
           "--dhcp-boot=tag:!ipxe,undionly.kpxe", "--dhcp-boot=tag:ipxe,boot.ipxe",
           "--pid-file=%s" % os.path.join(directory, "dnsmasq.pid"),
           "--log-facility=%s" % os.path.join(directory, "dnsmasq.log"), "--log-dhcp"]
    if router:
        cmd.append("--dhcp-option=option:router,%s" % router)
    return cmd + list(extra)


def prepare_tftp(directory):
    """DIR/tftp with boot.ipxe and (when Debian's ipxe is installed) undionly.kpxe."""
    tftp = os.path.join(directory, "tftp")
    os.makedirs(tftp, exist_ok=True)
    write_atomic(os.path.join(tftp, "boot.ipxe"), BOOT_IPXE)
    if os.path.exists(UNDIONLY):
        shutil.copyfile(UNDIONLY, os.path.join(tftp, "undionly.kpxe"))
    open(os.path.join(directory, "dhcp-hosts"), "a").close()
    return tftp


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def publish_image(tftp, image):
    """The image in the TFTP root (copied when it changed); returns its name there."""
    name = os.path.basename(image)
    dest = os.path.join(tftp, name)
    st = os.stat(image)
    try:
        d = os.stat(dest)
        if d.st_size == st.st_size and d.st_mtime == st.st_mtime:
            return name
    except OSError:
        pass
    shutil.copyfile(image, dest + ".tmp")
    os.utime(dest + ".tmp", (st.st_atime, st.st_mtime))
    os.rename(dest + ".tmp", dest)
    return name


def start_dnsmasq(cmd, directory, prefix=()):
    """Starts dnsmasq (dying with its parent) and waits until it serves (its log says where its
    TFTP root is, the last thing it sets up) or fails (the reason from its log)."""
    log_path = os.path.join(directory, "dnsmasq.log")
    for stale in (os.path.join(directory, "dnsmasq.pid"), log_path):
        try:
            os.unlink(stale)
        except OSError:
            pass
    err = open(os.path.join(directory, "dnsmasq.err"), "ab")
    proc = subprocess.Popen(["setpriv", "--pdeathsig", "TERM", "--"] + list(prefix) + cmd, stdin=subprocess.DEVNULL,
                            stdout=err, stderr=err, start_new_session=True)
    err.close()
    deadline = time.monotonic() + 10

    def said():
        text = ""
        for path in (log_path, os.path.join(directory, "dnsmasq.err")):
            try:
                with open(path, errors="replace") as f:
                    text += f.read()
            except OSError:
                pass
        return text
    while True:
        text = said()
        if "FAILED to start up" in text or proc.poll() is not None:
            stop_process(proc)
            lines = [line.split(": ", 1)[-1] for line in text.strip().splitlines()]
            raise NetError("dnsmasq did not start: %s" % "; ".join(lines[-3:]))
        if "TFTP root is" in text:
            return proc
        if time.monotonic() > deadline:
            stop_process(proc)
            raise NetError("dnsmasq did not start within 10 s")
        time.sleep(0.02)


def stop_process(proc):
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def local_address(peer):
    """This host's address toward `peer` (the source the kernel picks), or None."""
    words = sh("ip", "-o", "route", "get", peer).stdout.split()
    return words[words.index("src") + 1] if "src" in words else None


def vxlan_id():
    """A VXLAN network identifier for a cluster (24 bits, never 0): drawn at random, not from its
    name, since a cluster taken down leaves its VXLAN device to the kernel's asynchronous
    cleanup of its namespace, which a cluster of the same name brought up next would meet."""
    return int.from_bytes(os.urandom(3), "little") % 0xfffffe + 1


class BridgeNetwork:
    """The cluster's namespace and bridge on this host. `dhcp`: the supervisor's host, whose br0
    has the server's address and dnsmasq; another host's (host_agent.py) has neither, and
    joins the first's br0 by VXLAN (add_vxlan)."""

    def __init__(self, cluster, directory, pxe=False, dhcp=True, host=""):
        self.dir = directory
        self.ns = namespace_name(cluster, directory + host)  # `host`: one name per host where names are shared
        self.pxe = pxe
        self.dhcp = dhcp
        self.dnsmasq = None
        self.tftp = None
        self.hosts = []

    def exec_prefix(self):
        return ["ip", "netns", "exec", self.ns]

    def run(self, *cmd):
        return sh(*(self.exec_prefix() + list(cmd)))

    def up(self):
        if os.geteuid() != 0:
            raise NetError("--bridge needs root (a network namespace, a bridge and taps)")
        if self.dhcp and shutil.which("dnsmasq") is None:
            raise NetError("--bridge needs dnsmasq (make deps, or apt-get install dnsmasq-base)")
        with open(os.path.join(self.dir, "netns"), "w") as f:
            f.write(self.ns + "\n")
        sh("ip", "netns", "del", self.ns, check=False)  # a stale one of a crashed supervisor
        sh("ip", "netns", "add", self.ns)
        self.run("ip", "link", "set", "lo", "up")
        self.run("ip", "link", "add", BRIDGE, "type", "bridge")
        if not self.dhcp:
            self.run("ip", "link", "set", BRIDGE, "up")
            return
        self.run("ip", "addr", "add", "%s/%d" % (SERVER_IP, PREFIX), "dev", BRIDGE)
        self.run("ip", "-6", "addr", "add", "fd77::fe/64", "dev", BRIDGE, "nodad")  # for RAs: QUICK_IPXE
        self.run("ip", "link", "set", BRIDGE, "up")
        self.tftp = prepare_tftp(self.dir)
        self.dnsmasq = start_dnsmasq(
            dnsmasq_command(self.dir, BRIDGE, "10.77.0.10,static,255.255.0.0,12h", router="10.77.0.1",
                            extra=QUICK_IPXE), self.dir,
            self.exec_prefix())

    def open_tap(self, ifname):
        """A tap inside the namespace opened by this process (the switch's port on the bridge)."""
        import hub  # boot/hub.py: TUNSETIFF
        libc = ctypes.CDLL(None, use_errno=True)
        own = os.open("/proc/self/ns/net", os.O_RDONLY)
        target = os.open("/var/run/netns/%s" % self.ns, os.O_RDONLY)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                raise NetError("setns into %s: %s" % (self.ns, os.strerror(ctypes.get_errno())))
            try:
                port = hub.TapPort(0, ifname, None)
            finally:
                if libc.setns(own, CLONE_NEWNET) != 0:  # never go on in the wrong namespace
                    os._exit(70)
        finally:
            os.close(own)
            os.close(target)
        self.run("ip", "link", "set", ifname, "master", BRIDGE)
        self.run("ip", "link", "set", ifname, "up")
        return port

    def add_vxlan(self, vni, local, peers):
        """vx0, a port of br0 carrying its frames to `peers` (the other hosts' addresses) in VXLAN
        VNI `vni` over UDP 4789 from `local`. Made in this process's namespace (where the
        encapsulated frames travel), then moved into the cluster's. MTU 1500 inside: the hosts'
        network should carry 1550-byte packets (else the kernel fragments them)."""
        if local is None or not peers:
            return
        temporary = "fxv%s" % hashlib.sha1(self.ns.encode()).hexdigest()[:10]
        sh("ip", "link", "del", temporary, check=False)
        sh("ip", "link", "add", temporary, "type", "vxlan", "id", str(vni), "dstport", "4789", "local", local)
        sh("ip", "link", "set", temporary, "netns", self.ns)
        self.run("ip", "link", "set", temporary, "name", "vx0")
        self.run("ip", "link", "set", "vx0", "mtu", "1500", "master", BRIDGE, "up")
        for peer in peers:
            self.run("bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vx0", "dst", peer)

    def has_link(self, name):
        return sh(*(self.exec_prefix() + ["ip", "link", "show", name]), check=False).returncode == 0

    def add_node(self, k, mac, ip, tap=True):
        """Node K's DHCP entry (with dnsmasq) and, with `tap`, its tap here."""
        tap = "tap%d" % k if tap else None
        if tap:
            self.run("ip", "tuntap", "add", "dev", tap, "mode", "tap")
            self.run("ip", "link", "set", tap, "master", BRIDGE)
            self.run("ip", "link", "set", tap, "up")
        if not self.dhcp:
            return tap
        self.hosts.append("%s,%s" % (mac, ip))
        write_atomic(os.path.join(self.dir, "dhcp-hosts"), "\n".join(self.hosts) + "\n")
        if self.dnsmasq is not None and self.dnsmasq.poll() is None:
            self.dnsmasq.send_signal(signal.SIGHUP)  # re-reads the hosts file
        return tap

    def set_pxe_boot(self, mac, image, append):
        """Node MAC's next PXE boot: `image` with `append`."""
        if self.tftp is None:
            raise NetError("namespace %s serves no PXE boots (not made with pxe=True)" % self.ns)
        name = publish_image(self.tftp, image)
        write_atomic(os.path.join(self.tftp, mac_path_name(mac)), ipxe_script(name, append))

    def close(self):
        stop_process(self.dnsmasq)
        self.dnsmasq = None
        sh("ip", "netns", "del", self.ns, check=False)


def clean_up(directory, log=print):
    """What a dead supervisor's bridge network left: dnsmasq and the namespace (with its bridge and
    taps). Returns True if there was anything."""
    found = False
    try:
        with open(os.path.join(directory, "dnsmasq.pid")) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            args = f.read()
        if b"dnsmasq" in args and directory.encode() in args:  # ours, not a reused pid
            os.kill(pid, signal.SIGKILL)
            found = True
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(directory, "netns")) as f:
            ns = f.read().strip()
    except OSError:
        ns = None
    if ns and os.path.exists("/var/run/netns/%s" % ns):
        sh("ip", "netns", "del", ns, check=False)
        found = True
    return found


# ---- fox pxe serve ----

def interface_ipv4(interface):
    """(address, prefix length) of `interface`'s first IPv4 address, or None."""
    r = sh("ip", "-o", "-4", "addr", "show", "dev", interface, check=False)
    for line in r.stdout.splitlines():
        words = line.split()
        if "inet" in words:
            addr, _, plen = words[words.index("inet") + 1].partition("/")
            return addr, int(plen or 32)
    return None


def parse_hosts(path):
    """`MAC IP [ARGS...]` lines (# comments): (mac, ip, args). Raises ValueError with the line."""
    import ipaddress
    import re
    out = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 2 or not re.fullmatch(r"([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}", words[0]):
                raise ValueError("%s:%d: expected 'MAC IP [BOOT ARGS...]', got %r" % (path, number, line.strip()))
            try:
                ipaddress.IPv4Address(words[1])
            except ValueError:
                raise ValueError("%s:%d: %r is not an IPv4 address" % (path, number, words[1]))
            out.append((words[0].lower(), words[1], " ".join(words[2:])))
    return out


def serve(interface, first, last, image, append, hosts, directory, out, stop):
    """DHCP (first..last, and the hosts' fixed addresses), TFTP and iPXE scripts on `interface`,
    until stop() is true. The caller checked the arguments; raises NetError when the service fails."""
    import ipaddress
    have = interface_ipv4(interface)
    if have is None:
        raise NetError("interface %s has no IPv4 address (dnsmasq answers from it)" % interface)
    net = ipaddress.IPv4Network("%s/%d" % have, strict=False)
    for a in (first, last):
        if ipaddress.IPv4Address(a) not in net:
            raise NetError("%s is not in %s's network %s" % (a, interface, net))
    tftp = prepare_tftp(directory)
    name = publish_image(tftp, image)
    write_atomic(os.path.join(tftp, "default.ipxe"), ipxe_script(name, append))
    lines = []
    for mac, ip, args in hosts:
        lines.append("%s,%s" % (mac, ip))
        write_atomic(os.path.join(tftp, mac_path_name(mac)), ipxe_script(name, args or append))
    write_atomic(os.path.join(directory, "dhcp-hosts"), "".join(line + "\n" for line in lines))
    # No router advertisements here (a real network's router sends its own): only no-pxedhcp.
    cmd = dnsmasq_command(directory, interface, "%s,%s,%s,12h" % (first, last, net.netmask), extra=QUICK_IPXE[2:])
    proc = start_dnsmasq(cmd, directory)
    out("fox pxe serve: DHCP %s-%s and TFTP on %s (%s), iPXE booting %s %s; legacy PXE ROMs chain-load "
        "undionly.kpxe%s; %d fixed hosts; Ctrl-C stops" % (
            first, last, interface, have[0], name, append,
            "" if os.path.exists(os.path.join(tftp, "undionly.kpxe")) else " (missing: apt-get install ipxe)",
            len(hosts)))
    log_path = os.path.join(directory, "dnsmasq.log")
    shown = 0
    try:
        while not stop():
            if proc.poll() is not None:
                raise NetError("dnsmasq exited with %d (log: %s)" % (proc.returncode, log_path))
            try:
                with open(log_path, "rb") as f:
                    f.seek(shown)
                    for raw in f:
                        if not raw.endswith(b"\n"):
                            break
                        shown += len(raw)
                        line = raw.decode(errors="replace")
                        if "DHCPACK(" in line or ": sent /" in line or "failed" in line or "error" in line:
                            out("fox pxe serve: %s" % line.split(": ", 1)[-1].strip())
            except OSError:
                pass
            time.sleep(0.2)
    finally:
        stop_process(proc)
