#!/bin/sh
# kill_node.sh I: SIGKILLs the QEMU of node I of this cluster (a host command
# of boot/cluster.py: only processes inside the test's namespace are looked at).
set -eu
node=$1
killed=0
for p in $(ip netns pids "$FOX_NETNS"); do
  if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "fox.node=$node "; then
    kill -9 "$p" && killed=$((killed + 1))
  fi
done
echo "kill_node: killed $killed process(es) of node $node"
[ "$killed" -gt 0 ]
