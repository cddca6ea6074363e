#!/usr/bin/env python3
"""Boot benchmark (make bench B=boot).

Prints, for each accelerator that works here (KVM, TCG), for hello with
1 GiB (median of 11 boots; the three core counts take turns, boot by boot,
so that the host's slow and fast spells fall on all three alike):
  boot.entry_to_main_1core_<accel>    guest time from the first instruction to main (TSC), ms, 1 core
  boot.entry_to_main_4cores_<accel>   the same with 4 cores
  boot.entry_to_main_8cores_<accel>   the same with 8 cores
  boot.entry_to_main_<n>_<accel>_min  the fastest of those boots: the host's noise only ever adds
                                      time, so this is the closest to what the boot itself costs
  boot.host_steal_<n>_<accel>         the share of this machine's processor time its own host took
                                      away (/proc/stat's steal) while those boots ran (the three
                                      series together), %: when it is high the medians measure the
                                      host more than fox
  boot.qemu_to_banner_<accel>         wall time from starting QEMU to the boot banner, s (4 cores)
and
  boot.translated_blocks_1core        blocks QEMU's TCG translates from entry to main (boot/footprint.py)
  boot.translated_blocks_4cores       the same with 4 cores (every core's blocks)
  boot.translated_instructions_<n>    their instructions (1 core, 4 cores): under TCG a block
                                      costs about 3 us and each of its instructions 0.5-0.8 us more
  boot.translated_blocks_4cores_boot_core those the boot core translated: its path to main, which
                                      the other cores' blocks, interleaved differently in each run,
                                      leave out
  boot.min_memory                     the smallest -m (MiB) with which hello still runs
and, as the baseline measured in the same run (these hosts' speed varies by
a third from one minute to the next), the minimal Linux guest
(boot/linux_guest.sh: Debian's kernel) under the same QEMU options:
  boot.linux_entry_to_init_4cores_tcg its kernel's clock when it runs /init, ms (median of 5;
                                      4 cores, 1 GiB)
  boot.entry_to_main_vs_linux_ratio   fox's 4-core entry to main (two boots after each of
                                      Linux's, median) over it.
Linux's clock starts after its decompressor and early set-up, which the
figure leaves out: the ratio flatters Linux.
Under TCG the boot's time is mostly translation of code run once, so the
block and instruction counts are its work without the host's noise.
"""
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot"))
import footprint  # noqa: E402
import qemu_run  # noqa: E402

IMAGE = os.path.join(qemu_run.ROOT, "build", "native", "hello.elf")
MAIN = re.compile(r"entry to main took (\d+) us")
RUNS = 11  # a host running other VMs moves single boots by milliseconds
CORES = ((1, "1core"), (4, "4cores"), (8, "8cores"))
BANNER_CORES = 4
GUEST_DIR = os.path.join(qemu_run.ROOT, "build", "linux-guest-boot")
LINUX_RUNS = 5  # a boot takes seconds under TCG
LINUX_INIT = re.compile(r"\[\s*(\d+\.\d+)\] Run /init as init process")


def boot(accel, mem, smp):
    cmd = qemu_run.qemu_command(IMAGE, "", smp, mem, accel, None, False)
    return qemu_run.run_qemu(cmd, 60, echo=False)


def entry_to_main_ms(accel, smp):
    r = boot(accel, 1024, smp)
    m = MAIN.search(r["text"])
    if r["status"] != 0 or not m:
        sys.exit("bench boot: hello failed under %s with %d cores: %s" % (accel, smp, r["reason"] or r["text"][-500:]))
    return int(m.group(1)) / 1000.0, r["banner_at"]


def linux_beside_fox(smp):
    """(Linux's median ms to /init, fox's median ms to main) over LINUX_RUNS
    boots of the Linux guest, each followed by two of hello, all under TCG
    with SMP cores and 1 GiB. Linux's time is its clock when it starts /init,
    read back from its kernel log (dmesg is the guest's program: `quiet`
    keeps the console short, not the log)."""
    r = subprocess.run([os.path.join(qemu_run.ROOT, "boot", "linux_guest.sh"), GUEST_DIR], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit("bench boot: boot/linux_guest.sh failed:\n" + r.stdout + r.stderr)
    cmd = qemu_run.qemu_command(os.path.join(GUEST_DIR, "vmlinuz"), "console=ttyS0 quiet panic=-1 fox.run=dmesg", smp,
                                1024, "tcg", None, False, initrd=os.path.join(GUEST_DIR, "initramfs.gz"))
    linux, fox = [], []
    for _ in range(LINUX_RUNS):
        g = qemu_run.run_qemu(cmd, 300, echo=False)
        m = LINUX_INIT.search(g["text"])
        if m is None:
            sys.exit("bench boot: the Linux guest did not report starting /init:\n" + g["text"][-800:])
        linux.append(float(m.group(1)) * 1000.0)
        fox += [entry_to_main_ms("tcg", smp)[0] for _ in range(2)]
    return statistics.median(linux), statistics.median(fox)


def cpu_times():
    """This machine's processor time so far (/proc/stat), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal
    return [int(x) for x in fields[1:9]] if fields and fields[0] == "cpu" and len(fields) >= 9 else None


def steal_percent(before, after):
    """The share of processor time stolen by the host between two cpu_times(), %; None if unknown."""
    if before is None or after is None:
        return None
    total = sum(after) - sum(before)
    return 100.0 * (after[7] - before[7]) / total if total > 0 else None


def main():
    if not os.path.exists(IMAGE):
        sys.exit("bench boot: %s missing; run make first" % IMAGE)
    kvm_ok, why = qemu_run.kvm_works()
    for accel in ("kvm", "tcg"):
        if accel == "kvm" and not kvm_ok:
            print("# boot: KVM skipped: %s" % why)
            continue
        guests, banners = {smp: [] for smp, _ in CORES}, {smp: [] for smp, _ in CORES}
        before = cpu_times()
        for _ in range(RUNS):
            for smp, _ in CORES:
                ms, at = entry_to_main_ms(accel, smp)
                guests[smp].append(ms)
                banners[smp].append(at)
        steal = steal_percent(before, cpu_times())
        for smp, name in CORES:
            guest, banner = guests[smp], banners[smp]
            print("boot.entry_to_main_%s_%s %.2f ms" % (name, accel, statistics.median(guest)), flush=True)
            print("boot.entry_to_main_%s_%s_min %.2f ms" % (name, accel, min(guest)), flush=True)
            if steal is not None:
                print("boot.host_steal_%s_%s %.0f %%" % (name, accel, steal), flush=True)
            if accel == "tcg":  # the names: under TCG, where every host can run it
                print("boot.entry_to_main_%s %.2f ms" % (name, statistics.median(guest)), flush=True)
            if smp == BANNER_CORES:
                print("boot.qemu_to_banner_%s %.3f s" % (accel, statistics.median(banner)), flush=True)
    for smp, name in ((1, "1core"), (4, "4cores")):
        blocks, insns, _, boot_core = footprint.count(IMAGE, smp, 1024)
        print("boot.translated_blocks_%s %d blocks" % (name, blocks), flush=True)
        print("boot.translated_instructions_%s %d instructions" % (name, insns), flush=True)
        if smp == 4:
            print("boot.translated_blocks_%s_boot_core %d blocks" % (name, boot_core), flush=True)
    accel = "kvm" if kvm_ok else "tcg"
    linux, fox = linux_beside_fox(4)
    print("boot.linux_entry_to_init_4cores_tcg %.1f ms" % linux, flush=True)
    print("boot.entry_to_main_vs_linux_ratio %.4f x" % (fox / linux), flush=True)
    lo, hi = 2, 64  # hello fails at lo (QEMU's minimum is larger), runs at hi
    if boot(accel, hi, 1)["status"] != 0:
        sys.exit("bench boot: hello does not run in %d MiB" % hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if boot(accel, mid, 1)["status"] == 0:
            hi = mid
        else:
            lo = mid
    print("boot.min_memory %d MiB" % hi)


if __name__ == "__main__":
    main()
