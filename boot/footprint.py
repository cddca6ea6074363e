#!/usr/bin/env python3
"""How much code a fox image runs from its first instruction to main, as QEMU's
TCG translates it.

    footprint.py IMAGE [--smp 4] [--mem 1024] [--max-blocks N] [--max-instructions N] [--top K]

Under TCG a boot's time is mostly QEMU translating each basic block the first
time any core runs it (measured here with a synthetic guest of N blocks of K
instructions each: about 3 us a block, 0.5-0.8 us more for each register
instruction in it and about 1.5 us for each load, on a 2-CPU host: code run
once costs by its instructions as much as by its blocks),
so these counts are the boot's work independent of the host's speed and load:
a change that shortens the boot path shows here even where the timings'
noise hides it. QEMU logs every block it translates (-d in_asm); the blocks
counted are those from the image's entry point up to the first block of main,
on every core (the other cores start, and translate their own start-up code,
while the boot core goes on).

Prints `blocks N`, `instructions N`, `boot_core_blocks N` (those the boot
core translated: QEMU's -d exec log names the processor that first ran each
block, which is the one that translated it; with several cores these are the
boot's critical path, where `blocks` also counts the other cores' start-up,
interleaved differently from run to run) and, with --top, the K functions with
the most blocks (llvm-nm names them). Exit code 1 when --max-blocks or
--max-instructions is given and exceeded (a guard against the boot path
growing), 2 when the image did not boot or the log has no block at its entry or
main.
"""
import argparse
import bisect
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_run  # noqa: E402


def entry_point(image):
    with open(image, "rb") as f:
        header = f.read(64)
    if header[:4] != b"\x7fELF" or header[4] != 2:
        raise ValueError("%s is not a 64-bit ELF file" % image)
    return struct.unpack_from("<Q", header, 24)[0]


def code_symbols(image):
    """(address, name) of the image's functions, sorted by address."""
    out = subprocess.run(["llvm-nm", "--defined-only", "-n", image], check=True, capture_output=True,
                         text=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            symbols.append((int(parts[0], 16), parts[2]))
    return symbols


def blocks_of(log_text):
    """The translated blocks in log order, each a list of instruction addresses."""
    blocks, current = [], None
    for line in log_text.splitlines():
        if line.startswith("IN:"):
            current = []
            blocks.append(current)
        elif current is not None and line.startswith("0x"):
            current.append(int(line.split(":", 1)[0], 16))
        elif not line.startswith(" "):
            current = None  # another kind of line (-d exec) ends the block's listing
    return [b for b in blocks if b]


# -d exec: "Trace CPU: HOST [CS_BASE/PC/FLAGS/CFLAGS] SYMBOL", for each block run
# from QEMU's execution loop (always its first run; later ones are chained).
TRACE = re.compile(r"^Trace (\d+): \S+ \[[0-9a-f]+/([0-9a-f]+)/", re.M)


def first_runner(log_text):
    """{block address: index of the processor that ran it first}."""
    runner = {}
    for m in TRACE.finditer(log_text):
        runner.setdefault(int(m.group(2), 16), int(m.group(1)))
    return runner


def count(image, smp=4, mem=1024, timeout=120):
    """(blocks, instructions, blocks per function, the boot core's blocks) from entry to main; raises
    RuntimeError when the image did not boot or the log lacks either end."""
    if not os.path.isfile(image):
        raise RuntimeError("%s: no such image (make builds it)" % image)
    symbols = code_symbols(image)
    mains = [a for a, n in symbols if n == "main"]
    if not mains:
        raise RuntimeError("%s has no main symbol" % image)
    entry, main = entry_point(image), mains[0]
    with tempfile.TemporaryDirectory(prefix="fox-footprint-") as tmp:
        log = os.path.join(tmp, "in_asm.log")
        cmd = qemu_run.qemu_command(image, "", smp, mem, "tcg", None, False) + ["-d", "in_asm,exec", "-D", log]
        r = qemu_run.run_qemu(cmd, timeout, echo=False)
        if r["status"] != 0:
            raise RuntimeError("%s did not boot: %s" % (image, r["reason"] or r["text"][-500:]))
        with open(log, errors="replace") as f:
            text = f.read()
        blocks, runner = blocks_of(text), first_runner(text)
    addresses = [a for a, _ in symbols]
    per_function = collections.Counter()
    n_blocks = n_insns = boot_core = 0
    started = reached = False
    for block in blocks:
        if block[0] == entry:
            started = True
        if not started:
            continue  # the firmware's
        if block[0] == main:
            reached = True
            break
        n_blocks += 1
        n_insns += len(block)
        boot_core += runner.get(block[0]) == 0
        i = bisect.bisect_right(addresses, block[0]) - 1
        per_function[symbols[i][1] if i >= 0 else "?"] += 1
    if not started or not reached:
        raise RuntimeError("no translated block at the %s (%#x)" % ("entry" if not started else "start of main",
                                                                      entry if not started else main))
    return n_blocks, n_insns, per_function, boot_core


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--smp", type=int, default=4)
    ap.add_argument("--mem", type=int, default=1024)
    ap.add_argument("--max-blocks", type=int)
    ap.add_argument("--max-instructions", type=int)
    ap.add_argument("--top", type=int, default=0)
    args = ap.parse_args()
    try:
        blocks, insns, per_function, boot_core = count(args.image, args.smp, args.mem)
    except (OSError, ValueError, RuntimeError, subprocess.CalledProcessError) as e:
        print("footprint: %s" % e, file=sys.stderr)
        return 2
    print("blocks %d" % blocks)
    print("instructions %d" % insns)
    print("boot_core_blocks %d" % boot_core)
    if args.top:
        names = [n for n, _ in per_function.most_common(args.top)]
        shown = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
        for name, readable in zip(names, shown):
            print("%6d  %s" % (per_function[name], readable or name))
    over = False
    for what, n, limit in (("blocks", blocks, args.max_blocks), ("instructions", insns, args.max_instructions)):
        if limit is not None and n > limit:
            print("footprint: %d %s from entry to main, more than the %d allowed" % (n, what, limit), file=sys.stderr)
            over = True
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
