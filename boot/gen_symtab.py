#!/usr/bin/env python3
"""Builds the symbol table a fox image carries for its panic backtraces.

gen_symtab.py PASS1.elf OUT.bin OUT.S   table of PASS1's functions, demangled
gen_symtab.py --check PASS1.elf FINAL.elf   fail if any function moved, or if
                                            FINAL has an undefined weak symbol

Format (little endian, read by kernel/x86_64/symbols.cc): magic 'FXSY',
u32 count, count x {u64 addr, u32 size, u32 name offset}, then NUL-terminated
names.
"""
import struct
import subprocess
import sys

MAX_NAME = 200


def functions(elf):
    out = subprocess.run(["llvm-nm", "--defined-only", "--print-size", "-n", "-C", elf],
                         check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4:
            addr, size, kind, name = parts
        else:
            parts = line.split(" ", 2)
            if len(parts) != 3:
                continue
            addr, kind, name = parts
            size = "0"
        if kind not in ("T", "t", "W", "w"):
            continue
        a = int(addr, 16)
        # Keep one name per address; prefer global names.
        if a not in syms or kind in ("T", "W"):
            syms[a] = (int(size, 16), name[:MAX_NAME])
    return syms


def undefined_weak(elf):
    """Weak references nothing defined: in a static image each is address 0,
    and a call through one jumps there (libgcc's unwinder calls pthread_once
    that way: every throw crashed in an image without pthread_once)."""
    out = subprocess.run(["llvm-nm", "--undefined-only", elf], check=True, capture_output=True, text=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.split()[:1] in (["w"], ["v"])]


def main():
    if sys.argv[1] == "--check":
        before, after = functions(sys.argv[2]), functions(sys.argv[3])
        moved = [n for a, (s, n) in before.items() if a not in after]
        if moved:
            sys.exit("gen_symtab: functions moved between link passes: %s" % ", ".join(moved[:5]))
        weak = undefined_weak(sys.argv[3])
        if weak:
            sys.exit("gen_symtab: %s has undefined weak symbols (address 0 at run time): %s; "
                     "reference them strongly (kernel/x86_64/runtime.cc)" % (sys.argv[3], ", ".join(weak)))
        return
    elf, out_bin, out_s = sys.argv[1:4]
    syms = sorted(functions(elf).items())
    names = bytearray()
    entries = bytearray()
    for addr, (size, name) in syms:
        entries += struct.pack("<QII", addr, min(size, 0xFFFFFFFF), len(names))
        names += name.encode("utf-8", "replace") + b"\0"
    with open(out_bin, "wb") as f:
        f.write(struct.pack("<II", 0x59535846, len(syms)) + entries + names)
    with open(out_s, "w") as f:
        f.write('  .section .fox_symtab, "a"\n  .incbin "%s"\n' % out_bin)


if __name__ == "__main__":
    main()
