#!/usr/bin/env python3
"""FTQ noise benchmark (make bench B=ftq).

Runs the fixed-time-quantum loop (tests/bench/ftq_core.h) on a fox
application core and a fox kernel core (which takes 1 kHz device and timer
interrupts meanwhile), in a 2-vCPU node (no more vCPUs than host cores); in
the minimal Linux guest (boot/linux_guest.sh) started with the same QEMU
options; and as a process on the host. Prints coefficients of variation, the
app-core / Linux-guest ratio (target <= 0.5) and the interrupts the
application core took (must be 0).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot"))
import qemu_run  # noqa: E402

ROOT = qemu_run.ROOT
IMAGE = os.path.join(ROOT, "build", "native", "bench_ftq.elf")
HOST = os.path.join(ROOT, "build", "host", "tests", "bench", "ftq_host")
GUEST_PROGRAM = os.path.join(ROOT, "build", "host", "tests", "bench", "ftq_guest")
GUEST_DIR = os.path.join(ROOT, "build", "linux-guest")
QUANTUM_US, QUANTA = 1000, 2000
LINE = re.compile(r"ftq (\w+) (?:core|cpu) (\d+) quanta \d+ mean ([\d.]+) cov ([\d.]+) min (\d+) max (\d+)(?: interrupts (\d+))?")


def main():
    for path in (IMAGE, HOST):
        if not os.path.exists(path):
            sys.exit("bench ftq: %s missing; run make first" % path)
    accel = qemu_run.bench_accel("ftq", "; fox runs under TCG, whose own jitter is part of the figure")
    cmd = qemu_run.qemu_command(IMAGE, "fox.kcores=1 -- %d %d" % (QUANTUM_US, QUANTA), 2, 256, accel, None, False)
    r = qemu_run.run_qemu(cmd, 300, echo=False)
    if r["status"] != 0:
        sys.exit("bench ftq: fox run failed: %s" % (r["reason"] or r["text"][-800:]))
    fox = {m.group(1): m for m in LINE.finditer(r["text"])}
    # The Linux guest: Debian's kernel, same QEMU options, same loop on CPU 1.
    subprocess.run([os.path.join(ROOT, "boot", "linux_guest.sh"), GUEST_DIR, GUEST_PROGRAM], check=True,
                   capture_output=True)
    guest_cmd = qemu_run.qemu_command(os.path.join(GUEST_DIR, "vmlinuz"),
                                      "console=ttyS0 quiet fox.run=/bin/ftq_guest,%d,%d,1" % (QUANTUM_US, QUANTA), 2,
                                      256, accel, None, False, initrd=os.path.join(GUEST_DIR, "initramfs.gz"))
    g = qemu_run.run_qemu(guest_cmd, 600, echo=False)
    guest = LINE.search(g["text"])
    if guest is None:
        sys.exit("bench ftq: the Linux guest run failed:\n" + g["text"][-800:])
    host = subprocess.run([HOST, str(QUANTUM_US), str(QUANTA), "1"], check=True, capture_output=True, text=True).stdout
    process = LINE.search(host)
    app_cov, kernel_cov = float(fox["app"].group(4)), float(fox["kernel"].group(4))
    guest_cov, process_cov = float(guest.group(4)), float(process.group(4))
    print("ftq.app_core_cov_%s %.6f" % (accel, app_cov))
    print("ftq.kernel_core_cov_%s %.6f" % (accel, kernel_cov))
    print("ftq.linux_guest_cov_%s %.6f" % (accel, guest_cov))
    print("ftq.host_process_cov %.6f" % process_cov)
    print("ftq.app_vs_linux_guest_cov_ratio %.3f x" % (app_cov / guest_cov if guest_cov else float("inf")))
    print("ftq.app_core_interrupts %s" % fox["app"].group(7))
    print("ftq.kernel_core_interrupts %s" % fox["kernel"].group(7))


if __name__ == "__main__":
    main()
