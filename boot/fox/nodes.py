"""QEMU nodes of a pool: the address plan, images and command lines.

Address plan (rootless clusters; the same as boot/cluster.py's):
    the frontend   10.77.0.1 (place 0 of every job, the nodes' gateway), MAC SWITCH_MAC
                   answered by the switch itself (switch.py)
    node K         MAC 52:54:00:77:KK:KK (K in hex, 16 bits), IPv4 10.77.(K+10 >> 8).(K+10 & 255)/16
Node ids start at 1 (0 is place 0 on the frontend) and are never reused
within a cluster.
"""
import os
import socket
import sys

BOOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BOOT)  # boot/: qemu_run, build_id (imported where used: every command starts faster)
ROOT = os.path.dirname(BOOT)
FRONTEND_IP = "10.77.0.1"
PREFIX = 16
AM_PORT = 7700
POOL_JOB = 1  # the job id idle nodes (the agent) use; jobs count up from 2
MAX_NODE_ID = 60000


_handed_out = set()


def free_udp_port(host="127.0.0.1"):
    """A UDP port for a process that binds it later (a QEMU's -netdev dgram, place 0): free now,
    and outside the kernel's ephemeral range, so that no socket bound to port 0 meanwhile (the
    switch's ports, 64 of them for a 64-node cluster) can be given it. Port 0 once asked for
    this reuse: a node's QEMU found its port taken by a switch port and never booted."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    top = max(low - 1, 2048)
    for _ in range(200):
        first = max(1024, top - 20000)
        port = first + int.from_bytes(os.urandom(2), "little") % (top - first + 1)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise OSError("no free UDP port below the ephemeral range (%d)" % low)


def build_dir():
    return os.environ.get("FOX_BUILD", os.path.join(ROOT, "build"))


POOL_IMAGE = "fox"  # build/native/fox.elf: every app (cmake/apps.cmake, fox_add_pool_image)


def node_image(app=POOL_IMAGE):
    return os.path.join(build_dir(), "native", "%s.elf" % app)


def image_apps(path):
    """The apps a pool image holds (its "FOXAPPS:a,b;" marker), or None."""
    with open(path, "rb") as f:
        data = f.read()
    import re
    m = re.search(rb"FOXAPPS:([A-Za-z0-9_,]+);", data)
    return m.group(1).decode().split(",") if m else None


def host_program(app):
    return os.path.join(build_dir(), "host", "apps", app, app)


def node_ip(k):
    n = k + 10
    return "10.77.%d.%d" % (n >> 8, n & 255)


def node_mac(k):
    return "52:54:00:77:%02x:%02x" % (k >> 8, k & 255)


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


def ip_bytes(text):
    return bytes(int(x) for x in text.split("."))


def qemu_tag(cluster, k):
    """The -name of node K's QEMU (what `ps` shows; state.node_processes finds it)."""
    return "fox:%s:node%d" % (cluster, k)


def boot_args(k, app, key, job, peers, app_args=(), fd_args=(), dhcp=False):
    """Node K's boot arguments; `fd_args` the membership's timers (qemu_run.membership_args).
    `dhcp`: the node asks for its address (a bridge's dnsmasq gives it the plan's)."""
    where = [] if dhcp else ["fox.ip=%s/%d" % (node_ip(k), PREFIX), "fox.gw=%s" % FRONTEND_IP]
    words = ["fox.app=%s" % app, "fox.node=%d" % k] + where + [
        "fox.key=%s" % key, "fox.job=%d" % job, "fox.peers=%s" % peers] + list(fd_args)
    if app_args:
        words += ["--"] + list(app_args)
    return " ".join(words)


def make_iso(image, append, out):
    """A GRUB CD (boot/make_iso.sh) booting `image` by multiboot2 with `append` in its menu entry."""
    import subprocess
    r = subprocess.run([os.path.join(ROOT, "boot", "make_iso.sh"), image, out] + append.split(),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise OSError("make_iso.sh failed: %s" % (r.stdout + r.stderr).strip())


def qemu_command(cluster, k, image, append, cores, mem, accel, console, local_port, switch_port, cdrom=None,
                 tap=None, pxe=False):
    """Node K's QEMU: console appended to `console`, its NIC a -netdev dgram to the switch, or
    with `tap` that tap (bridge mode; run it in the cluster's namespace); with `cdrom`, it boots
    that ISO (whose GRUB entry carries the boot arguments) instead of -kernel; with `pxe`, from
    its NIC's iPXE ROM (the boot arguments travel in its iPXE script: netns.py)."""
    import qemu_run
    cmd = qemu_run.qemu_command(image, append, cores, mem, accel, cdrom, False, pxe=pxe,
                                console="file,path=%s,append=on" % console)
    if tap:
        netdev = "tap,id=n0,ifname=%s,script=no,downscript=no" % tap
    else:
        netdev = ("dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=%d,"
                  "remote.type=inet,remote.host=127.0.0.1,remote.port=%d" % (local_port, switch_port))
    cmd += ["-name", qemu_tag(cluster, k), "-netdev", netdev, "-device", "virtio-net-pci,netdev=n0,mac=%s" % node_mac(k)]
    return cmd


def decode_exit(returncode):
    """A node's exit status from its QEMU's (isa-debug-exit: 2*status+1), or None
    when QEMU did not exit through the device (killed, crashed, powered off)."""
    if returncode is not None and returncode > 0 and returncode % 2 == 1:
        return (returncode - 1) // 2
    return None
