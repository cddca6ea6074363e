#!/usr/bin/env bash
# linux_guest.sh OUTDIR [PROGRAM...]
# Builds the minimal Linux guest that benchmarks compare fox nodes with:
# Debian's kernel (linux-image-amd64) and an initramfs of busybox-static plus
# the given static programs (copied to /bin). The guest's /init runs the
# command line's `fox.run=...` (commas become spaces), prints
# "linux-guest: exit N", and powers off. Nothing is installed on the host:
# packages are downloaded and unpacked into OUTDIR/pkgs.
set -euo pipefail
out=$(realpath -m "$1")
shift
mkdir -p "$out/pkgs" "$out/root"
cd "$out/pkgs"
if [ ! -f "$out/vmlinuz" ]; then
  kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')
  apt-get download -qq "$kpkg" busybox-static >/dev/null 2>&1 || apt-get download "$kpkg" busybox-static
  for deb in ./*.deb; do dpkg-deb -x "$deb" "$out/pkgs/x"; done
  cp "$out"/pkgs/x/boot/vmlinuz-* "$out/vmlinuz"
fi
root="$out/root"
rm -rf "$root" && mkdir -p "$root"/{bin,proc,sys,dev}
cp "$out/pkgs/x/bin/busybox" "$root/bin/busybox"
for app in sh mount poweroff cat echo sleep; do ln -sf busybox "$root/bin/$app"; done
for program in "$@"; do cp "$program" "$root/bin/"; done
cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
run=$(sed -n 's/.*fox\.run=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
echo "linux-guest: running $run"
$run
echo "linux-guest: exit $?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/initramfs.gz"
echo "linux guest: $out/vmlinuz $out/initramfs.gz"
