#!/usr/bin/env bash
# fetch_lwip.sh DEST: unpacks lwIP 2.1.3 from Debian's source package into
# DEST (DEST/src/core/tcp.c etc.). No third-party source is committed
# (DESIGN.md "Toolchain and runtime decisions"); the build calls this.
#
# Idempotent: does nothing when DEST already holds the unpacked tree (the
# marker DEST/.fox-lwip-version names the Debian version it came from).
# Needs: apt with a deb-src entry for bookworm main (written here when
# missing, as /etc/apt/sources.list.d/fox-src.sources), dpkg-source (Debian
# package dpkg-dev), root or sudo for the apt steps only.
set -euo pipefail

VERSION="2.1.3+dfsg1-2"  # Debian bookworm's lwip; the port is written for 2.1.3
dest="${1:?usage: fetch_lwip.sh DEST}"
marker="$dest/.fox-lwip-version"

if [[ -f "$marker" && "$(cat "$marker")" == "$VERSION" && -f "$dest/src/core/tcp.c" ]]; then
  exit 0
fi

sudo=""
apt_source=(apt-get source -qq --only-source)
if [[ "$(id -u)" != 0 ]]; then
  sudo="sudo"
else
  # As root, apt would hand the download to its _apt user, who cannot write
  # into our private temporary directory (and then warns): download as root.
  apt_source+=(-o APT::Sandbox::User=root)
fi

if ! command -v dpkg-source >/dev/null; then
  echo "fetch_lwip: installing dpkg-dev (dpkg-source)" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev >&2
fi

# A deb-src entry: apt-get source needs the Sources index.
src_list=/etc/apt/sources.list.d/fox-src.sources
have_src() {
  grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}
if ! have_src; then
  echo "fetch_lwip: adding a deb-src entry ($src_list)" >&2
  $sudo tee "$src_list" >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# The Sources index may be missing or stale (a fresh machine, or a deb-src
# entry added after the last update): one update, then retry.
if ! "${apt_source[@]}" "lwip=$VERSION" >/dev/null 2>&1; then
  echo "fetch_lwip: apt-get update (for the Sources index)" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  # apt-get source runs as the calling user (it writes here, no root needed).
  "${apt_source[@]}" "lwip=$VERSION" >/dev/null
fi
tree="$(find . -maxdepth 1 -mindepth 1 -type d -name 'lwip-*' | head -n 1)"
if [[ -z "$tree" || ! -f "$tree/src/core/tcp.c" ]]; then
  echo "fetch_lwip: apt-get source lwip=$VERSION produced no lwIP tree" >&2
  exit 1
fi

# Replace DEST atomically enough for a build: unpack beside it, then move.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" "$dest"
mv "$tree" "$dest.tmp"
echo "$VERSION" >"$dest.tmp/.fox-lwip-version"
mv "$dest.tmp" "$dest"
echo "fetch_lwip: lwIP $VERSION in $dest" >&2
