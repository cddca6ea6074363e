#!/usr/bin/env bash
# linux_guest.sh OUTDIR [PROGRAM...]
# Builds the minimal Linux guest that benchmarks compare fox nodes with:
# Debian's kernel (linux-image-amd64) and an initramfs of busybox-static, the
# kernel's virtio-net modules, and the given programs (copied to /bin; a
# dynamically linked one brings the host's libraries it needs, at their
# paths, so Debian's own binaries run too, e.g. memcached).
# Nothing is installed on the host: packages are downloaded and unpacked into
# OUTDIR/pkgs; the results are OUTDIR/vmlinuz and OUTDIR/initramfs.gz.
#
# The guest's /init, driven by the kernel command line:
#   fox.ip=A.B.C.D/NN  load virtio-net, give eth0 that address, bring it up
#                      (prints "linux-guest: eth0 A.B.C.D/NN up"; no fox.ip, no
#                      network set-up)
#   fox.run=CMD,ARG,.. run CMD ARG ... (commas become spaces), then print
#                      "linux-guest: exit N" and power off
#   fox.args64=B64     run it with FOX_ARGS set to the base64 text B64 decodes
#                      to (a fox program's hosted boot arguments, whose
#                      spaces and commas the kernel command line cannot carry)
# Boot it with console=ttyS0 (QEMU -serial stdio) to see its output.
set -euo pipefail
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: linux_guest.sh OUTDIR [PROGRAM...]" >&2
  exit 2
fi
out=$(realpath -m "$1")
shift
programs=()
for program in "$@"; do
  if [ ! -f "$program" ] || [ ! -x "$program" ]; then
    echo "linux_guest.sh: $program is not an executable file" >&2
    exit 2
  fi
  programs+=("$(realpath "$program")")
done
mkdir -p "$out/pkgs" "$out/root"
cd "$out/pkgs"
if [ ! -f "$out/vmlinuz" ]; then
  kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')
  apt-get download -qq "$kpkg" busybox-static >/dev/null 2>&1 || apt-get download "$kpkg" busybox-static
  for deb in ./*.deb; do dpkg-deb -x "$deb" "$out/pkgs/x"; done
  cp "$out"/pkgs/x/boot/vmlinuz-* "$out/vmlinuz"
fi
root="$out/root"
rm -rf "$root" && mkdir -p "$root"/{bin,proc,sys,dev,lib/modules}
cp "$out/pkgs/x/bin/busybox" "$root/bin/busybox"
for app in sh mount poweroff cat echo sleep sed tr insmod ip ls dmesg base64; do ln -sf busybox "$root/bin/$app"; done
# virtio-net and what it needs, in load order (Debian builds them as modules).
modules=$(ls -d "$out"/pkgs/x/lib/modules/*/kernel)
for m in drivers/virtio/virtio_ring.ko drivers/virtio/virtio.ko drivers/virtio/virtio_pci_modern_dev.ko \
         drivers/virtio/virtio_pci_legacy_dev.ko drivers/virtio/virtio_pci.ko net/core/failover.ko \
         drivers/net/net_failover.ko drivers/net/virtio_net.ko; do
  if [ -f "$modules/$m" ]; then
    cp "$modules/$m" "$root/lib/modules/"
    echo "$(basename "$m")" >> "$root/lib/modules/order"
  fi
done
for program in "${programs[@]}"; do
  cp "$program" "$root/bin/"
  for lib in $(ldd "$program" 2>/dev/null | grep -o '/[^ ]*' || true); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
mkdir -p "$root/etc"
echo "root:x:0:0:root:/:/bin/sh" > "$root/etc/passwd"  # for programs that look their user up (memcached -u root)
cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
ip=$(arg fox.ip)
if [ -n "$ip" ]; then
  for m in $(cat /lib/modules/order); do insmod /lib/modules/$m || echo "linux-guest: insmod $m failed"; done
  for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ -e /sys/class/net/eth0 ] && break
    sleep 0.25
  done
  ip link set lo up
  if ip addr add "$ip" dev eth0 && ip link set eth0 up; then
    echo "linux-guest: eth0 $ip up"
  else
    echo "linux-guest: no eth0 for $ip"
  fi
fi
run=$(arg fox.run | tr ',' ' ')
args64=$(arg fox.args64)
if [ -n "$args64" ]; then
  FOX_ARGS=$(echo "$args64" | base64 -d)
  export FOX_ARGS
  echo "linux-guest: FOX_ARGS=$FOX_ARGS"
fi
echo "linux-guest: running $run"
$run
echo "linux-guest: exit $?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/initramfs.gz"
echo "linux guest: $out/vmlinuz $out/initramfs.gz"
