#!/usr/bin/env bash
# make_iso.sh IMAGE.elf OUT.iso [BOOT ARGS...]: a GRUB (BIOS) CD image that
# boots IMAGE through multiboot2 with no menu delay.
set -euo pipefail
image=$1 out=$2
shift 2
args="$*"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/boot/grub"
cp "$image" "$dir/boot/fox.elf"
cat > "$dir/boot/grub/grub.cfg" <<CFG
set timeout=0
set default=0
serial --unit=0 --speed=115200
terminal_output serial
menuentry "fox" {
  multiboot2 /boot/fox.elf $args
  boot
}
CFG
grub-mkrescue -o "$out" "$dir" >/dev/null 2>&1 || { grub-mkrescue -o "$out" "$dir"; exit 1; }
echo "iso: $out"
