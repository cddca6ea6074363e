#!/bin/sh
# build/bin/fox (installed by make): the frontend, a Python package in boot/fox.
here=$(dirname "$(readlink -f "$0")")
root=${FOX_ROOT:-$(dirname "$(dirname "$here")")}
PYTHONPATH="$root/boot${PYTHONPATH:+:$PYTHONPATH}" exec python3 -S -m fox "$@"
