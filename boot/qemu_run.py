#!/usr/bin/env python3
"""Boots one fox node in QEMU and reports what it did.

    qemu_run.py --image build/native/hello.elf [--append "fox.log=debug -- a b"]
                [--smp 4] [--mem 256] [--accel auto|kvm|tcg] [--timeout 60]
                [--expect-exit N] [--expect REGEX]... [--reject REGEX]...
                [--cdrom ISO] [--gdb] [--quiet] [--log FILE]

The node's console (COM1) is streamed to stdout. The node's exit status comes
back through QEMU's isa-debug-exit device: QEMU exits with 2*status+1.

Exit code: the node's status when no expectations are given; with --expect*
options, 0 when every expectation holds and 1 otherwise (the log is printed);
77 (CTest's skip code) when --accel kvm is asked for and KVM does not work on
this machine.

The accelerator: FOX_ACCEL=kvm|tcg forces one; otherwise KVM when /dev/kvm
opens and a probe boot of a fox image under KVM succeeds (cached in
build/kvm-probe), else TCG. Nested KVM on some hosts (e.g. KVM-PVM) emulates
guest instructions and fails on SSE; the probe catches that.
"""
import argparse
import os
import re
import selectors
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE_CACHE = os.path.join(ROOT, "build", "kvm-probe")
PROBE_IMAGE = os.path.join(ROOT, "build", "native", "hello.elf")
BANNER = re.compile(r"\] I fox \S+ x86_64 \|")
EXIT_LINE = re.compile(r"fox: exit status (\d+)")


def kvm_device_ok():
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
        return True
    except OSError:
        return False


def probe_key():
    qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return "%s|%s" % (os.uname().release, qemu)


def kvm_works(verbose=True):
    """True when KVM can run a fox image here (result cached per kernel+QEMU)."""
    if not kvm_device_ok():
        return False, "/dev/kvm cannot be opened"
    key = probe_key()
    try:
        with open(PROBE_CACHE) as f:
            cached_key, verdict = f.read().split("\n", 1)
        if cached_key == key:
            return verdict.startswith("ok"), verdict.strip()
    except (OSError, ValueError):
        pass
    if not os.path.exists(PROBE_IMAGE):
        return False, "probe image %s not built" % PROBE_IMAGE
    result = run_qemu(qemu_command(PROBE_IMAGE, "", 1, 64, "kvm", None, False), 30, echo=False)
    ok = result["status"] == 0 and result["exit_line"] is not None
    verdict = "ok" if ok else "broken: %s" % (result["reason"] or "probe boot did not exit cleanly")
    os.makedirs(os.path.dirname(PROBE_CACHE), exist_ok=True)
    with open(PROBE_CACHE, "w") as f:
        f.write(key + "\n" + verdict + "\n")
    return ok, verdict


def bench_accel(name, why_it_matters=""):
    """The accelerator a benchmark runs under: KVM when it works here, else TCG
    (said on a comment line, so figures are never mistaken for KVM ones)."""
    ok, why = kvm_works()
    if not ok:
        print("# %s: KVM skipped (%s)%s" % (name, why, why_it_matters))
    return "kvm" if ok else "tcg"


def choose_accel(requested):
    forced = os.environ.get("FOX_ACCEL", "")
    if requested == "auto":
        requested = forced or "auto"
    if requested == "tcg":
        return "tcg", None
    ok, why = kvm_works()
    if requested == "kvm":
        return ("kvm", None) if ok else (None, "KVM does not work here: %s" % why)
    return ("kvm" if ok else "tcg"), None


def membership_timers(accel, nodes=1):
    """(probe_ms, suspect_ms, join_ms) for emulated nodes (net/membership.h; its defaults are
    for racks). Emulated nodes share the host's cores: under TCG a node can go unscheduled for a
    second or more, a booting one takes tens of seconds to join, and the more nodes per host
    core, the longer (64 nodes on 2 cores: 3-4 s silences). So the timers grow with the
    number of nodes per host core beyond 8. The bound on every survivor seeing a death without
    the frontend's notice (detection_bound_s): three probe periods (the first prober to find it,
    its probe, a late tick) plus the suspicion (TCG: 5.2 s up to 16 nodes on 2 cores, 20.8 s for
    64; measured for 64: first 19.3 s, last 19.4 s, once death notices outlived their sender)."""
    scale = max(1.0, nodes / (8.0 * (os.cpu_count() or 1)))
    if accel == "tcg":
        return int(400 * scale), int(4000 * scale), int(120000 * scale)
    return int(200 * scale), int(2000 * scale), int(60000 * scale)


def detection_bound_s(accel, nodes=1):
    probe, suspect, _ = membership_timers(accel, nodes)
    return (3 * probe + suspect) / 1000.0


def membership_args(accel, nodes=1):
    """membership_timers as boot arguments."""
    probe, suspect, join = membership_timers(accel, nodes)
    return ["fox.probe_ms=%d" % probe, "fox.suspect_ms=%d" % suspect, "fox.join_ms=%d" % join]


# --net: QEMU's restricted user network through a virtio-net device with
# one of these interfaces.
NIC_INTERFACES = {
    "modern": "",  # transitional: modern (virtio 1.0) capabilities and MSI-X
    "legacy": ",disable-modern=on",  # legacy only (virtio 0.9.5, I/O port BAR0), MSI-X
    "intx": ",vectors=0",  # modern without MSI-X: INTx through the IOAPIC
    "legacy-intx": ",disable-modern=on,vectors=0",  # legacy without MSI-X
}
NIC_VARIANTS = {("user-" + k if k != "modern" else "user"): v for k, v in NIC_INTERFACES.items()}


def ram_size(mem):
    """-m's size (MiB unless it has a suffix) as a memory backend's size= (bytes unless it has one)."""
    mem = str(mem)
    return mem + "M" if mem.isdigit() else mem


def qemu_command(image, append, smp, mem, accel, cdrom, gdb, debug_exit=True, net=None, initrd=None, console=None,
                 pxe=False):
    """QEMU's command for a guest: a fox image (or a Linux kernel with its `initrd`) with `append`,
    an ISO (`cdrom`), or with `pxe` its NIC's iPXE ROM (the caller adds the NIC; image and append
    travel in the iPXE script). The serial console is standard input and output, or with
    `console` a QEMU character device, backend first ("file,path=P,append=on",
    "stdio,signal=off,logfile=P")."""
    # Guest RAM in a memfd: host pages of 4 KiB, faulted in as the guest
    # touches them. QEMU's default anonymous RAM asks for transparent huge
    # pages, and a host that must compact memory to find one stalls the
    # guest's first touch of each 2 MiB for milliseconds: measured here, a
    # quarter of boots took 20-40 ms to main instead of 11 (make bench B=boot).
    cmd = ["qemu-system-x86_64", "-machine", "pc,memory-backend=ram", "-m", str(mem),
           "-object", "memory-backend-memfd,id=ram,size=" + ram_size(mem), "-smp", str(smp),
           "-display", "none", "-monitor", "none"]
    if console:
        backend, _, options = console.partition(",")
        cmd += ["-chardev", "%s,id=con0%s" % (backend, "," + options if options else ""), "-serial", "chardev:con0"]
    else:
        cmd += ["-serial", "stdio"]
    cmd += ["-no-reboot", "-nodefaults"]
    if debug_exit:
        cmd += ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", "host"]
    else:
        cmd += ["-accel", "tcg", "-cpu", "max"]
    if net:
        # QEMU's own user-mode network, restricted: the guest reaches only
        # QEMU's virtual gateway (10.0.2.2), never the host's network.
        cmd += ["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0" + NIC_VARIANTS[net]]
    if cdrom:
        cmd += ["-cdrom", cdrom, "-boot", "d"]
    elif pxe:
        cmd += ["-boot", "n"]
    else:
        cmd += ["-kernel", image, "-append", append]
        if initrd:
            cmd += ["-initrd", initrd]
    if gdb:
        cmd += ["-s", "-S"]
    return cmd


def run_qemu(cmd, timeout, echo=True, log=None):
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None  # both PIPE
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    out, err = bytearray(), bytearray()
    banner_at = None
    reason = None
    open_streams = 2
    while open_streams:
        left = start + timeout - time.monotonic()
        if left <= 0:
            reason = "timed out after %.0f s" % timeout
            break
        ready = sel.select(min(left, 0.5))
        for key, _ in ready:
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            if key.fileobj is proc.stdout:
                seen = len(out)
                out += chunk
                if echo:
                    sys.stdout.buffer.write(chunk.replace(b"\r\n", b"\n"))
                    sys.stdout.flush()
                # The new bytes and the line they end (the banner is one line).
                if banner_at is None and BANNER.search(out[out.rfind(b"\n", 0, seen) + 1:].decode("utf-8", "replace")):
                    banner_at = time.monotonic() - start
            else:
                err += chunk
                if b"KVM internal error" in err or b"emulation failure" in err:
                    reason = "KVM internal error (the hypervisor could not run the guest)"
                    open_streams = 0
                    break
        if ready and open_streams:
            # Let the output gather: the serial port writes a byte at a time,
            # and a reader woken for each one took a host processor from the
            # guest's (on a 2-processor host, as long again as QEMU's own work
            # for each byte).
            time.sleep(0.002)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    rc = proc.wait()
    elapsed = time.monotonic() - start
    text = out.decode("utf-8", "replace").replace("\r\n", "\n")
    m = None
    for m in EXIT_LINE.finditer(text):
        pass
    exit_line = int(m.group(1)) if m else None
    status = None
    if reason is None:
        if rc > 0 and rc % 2 == 1 and exit_line is not None:
            status = (rc - 1) // 2
        elif rc == 0 and exit_line is not None:  # powered off through ACPI
            status = exit_line
        else:
            reason = "QEMU exited with %d and the node reported no exit status" % rc
    if log:
        with open(log, "w") as f:
            f.write(text)
    return {"status": status, "text": text, "stderr": err.decode("utf-8", "replace"), "reason": reason,
            "elapsed": elapsed, "banner_at": banner_at, "exit_line": exit_line}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image")
    ap.add_argument("--cdrom")
    ap.add_argument("--append", default="")
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--accel", default="auto", choices=["auto", "kvm", "tcg"])
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--expect-exit", type=int)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--reject", action="append", default=[])
    ap.add_argument("--gdb", action="store_true")
    ap.add_argument("--net", choices=sorted(NIC_VARIANTS),
                    help="attach a virtio-net NIC to QEMU's restricted user network (-legacy: legacy interface "
                         "only; -intx: no MSI-X)")
    ap.add_argument("--no-debug-exit", action="store_true",
                    help="no isa-debug-exit device: the node must power off through ACPI")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--log")
    args = ap.parse_args()
    if not args.image and not args.cdrom:
        ap.error("give --image or --cdrom")
    for path in (args.image, args.cdrom):
        if path and not os.path.exists(path):
            print("qemu_run: %s does not exist (run make first)" % path, file=sys.stderr)
            return 2
    accel, why = choose_accel(args.accel)
    if accel is None:
        print("qemu_run: SKIP: %s" % why)
        return 77
    cmd = qemu_command(args.image, args.append, args.smp, args.mem, accel, args.cdrom, args.gdb,
                       not args.no_debug_exit, args.net)
    testing = args.expect_exit is not None or args.expect or args.reject
    r = run_qemu(cmd, args.timeout if not args.gdb else 10 ** 9, echo=not (args.quiet or testing), log=args.log)
    failures = []
    if r["reason"]:
        failures.append(r["reason"])
    if args.expect_exit is not None and r["status"] != args.expect_exit:
        failures.append("exit status %s, expected %d" % (r["status"], args.expect_exit))
    for pattern in args.expect:
        if not re.search(pattern, r["text"], re.M):
            failures.append("console lacks /%s/" % pattern)
    for pattern in args.reject:
        if re.search(pattern, r["text"], re.M):
            failures.append("console has /%s/" % pattern)
    summary = "qemu_run: accel %s, status %s, %.2f s" % (accel, r["status"], r["elapsed"])
    if r["banner_at"] is not None:
        summary += ", banner after %.3f s" % r["banner_at"]
    if testing:
        if failures:
            print(" ".join(cmd))
            print(r["text"])
            if r["stderr"].strip():
                print("--- QEMU stderr ---\n" + r["stderr"])
            print(summary)
            print("FAILED: " + "; ".join(failures))
            return 1
        print(summary + ": ok")
        return 0
    print(summary, file=sys.stderr)
    if r["reason"]:
        print("qemu_run: " + r["reason"], file=sys.stderr)
        if r["stderr"].strip():
            print(r["stderr"], file=sys.stderr)
        return 1
    return r["status"]


if __name__ == "__main__":
    sys.exit(main())
