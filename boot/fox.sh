#!/bin/sh
# build/bin/fox (installed by make): the frontend, a Python package in boot/fox.
# It needs only Python's standard library: the system's interpreter when there
# is one (a version manager's `python3` shim costs 50 ms a command), else the
# first python3 on PATH. No dirname processes: every command starts here, and
# readlink (a process) only when the checkout is not where $0 says it is (a
# link to this file, or a linked folder on the way).
case $0 in /*) self=$0 ;; *) self=$PWD/$0 ;; esac
here=${self%/*}
root=${FOX_ROOT:-${here%/*/*}}
if [ ! -f "$root/boot/fox/cli.py" ]; then
  self=$(readlink -f "$0")
  here=${self%/*}
  root=${FOX_ROOT:-${here%/*/*}}
fi
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3
# -c, not -m fox: runpy and importlib.util cost every command 4 ms.
PYTHONPATH="$root/boot${PYTHONPATH:+:$PYTHONPATH}" exec "$python" -S -c 'from fox.cli import exit_main; exit_main()' "$@"
