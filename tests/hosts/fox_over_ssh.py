#!/usr/bin/env python3
"""fox cluster up --hosts over ssh, without Slurm (tests/hosts/slurm_hosts.py's hosts with sshd).

    fox_over_ssh.py [--fox build/bin/fox]

Three hosts (namespaces with their own hostnames on a bridge), each running an SSH server
(Dropbear) on its address with a key of the test's (FOX_SSH names it); from host 0:
  1. fox cluster up --nodes 3 --hosts h0,h1,h2: node K on host K - 1 (the agents through ssh);
  2. fox run ring: the token passes the three nodes;
  3. fox kill 2 (host 1): dead in fox status;
  4. fox cluster down: no QEMU and no agent left on any host.
Root needed; skipped (77) without it or without dropbear and ssh (make deps installs
dropbear-bin, binaries only: no SSH server is left running, and openssh-client).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "frontend"))
from slurm_hosts import HostsError, SlurmHosts  # noqa: E402
from frontend_test import FOX, Failure, check_ring, verdict, wait_for  # noqa: E402
from fox_across_hosts import qemus  # noqa: E402


def scenario(hosts, fox_path):
    state = tempfile.mkdtemp(prefix="fox-ssh-state-")
    env = dict(os.environ, FOX_STATE_DIR=state, FOX_ACCEL="tcg", FOX_SSH=hosts.ssh_command)

    def fox(*args, check=0):
        r = hosts.run(0, [fox_path] + list(args), timeout=300, env=env)
        out = r.stdout + r.stderr
        print("$ fox %s  -> %d" % (" ".join(args), r.returncode))
        if "--json" not in args:
            print("".join("  | " + line + "\n" for line in out.splitlines() if "am stats" not in line), end="")
        if check is not None and r.returncode != check:
            raise Failure("fox %s exited with %d, expected %d" % (" ".join(args), r.returncode, check))
        return out

    try:
        fox("cluster", "up", "--nodes", "3", "--name", "ssh", "--hosts", ",".join(hosts.names))
        out = fox("status", "--json", "--name", "ssh")
        where = {r["node"]: r["host"] for r in json.loads(out[out.index("{"):])["nodes"]}
        if where != {k: hosts.names[k - 1] for k in (1, 2, 3)}:
            raise Failure("nodes on hosts %s, wanted node K on host K - 1" % where)
        print("ok: node K on host K - 1, the agents reached by ssh")
        check_ring(fox("run", "ring", "--name", "ssh", "--", "laps=20"), 4)
        print("ok: the ring over 3 nodes on 3 hosts")
        fox("kill", "2", "--name", "ssh")

        def dead():
            out = fox("status", "--json", "--name", "ssh")
            return {r["node"]: r["state"] for r in json.loads(out[out.index("{"):])["nodes"]}[2] == "dead"
        wait_for(dead, 30, "node 2 (host 1) dead")
        print("ok: fox kill of a node on host 1")
        fox("cluster", "down", "--name", "ssh")
        wait_for(lambda: not qemus(hosts), 20, "no QEMU or agent left on any host")
        print("ok: nothing left on any host")
    finally:
        fox("cluster", "down", "--name", "ssh", check=None)
        shutil.rmtree(state, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fox", default=FOX)
    args = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/usr/sbin/dropbear") or not shutil.which("ssh"):
        print("fox_over_ssh: SKIP: needs root, dropbear and ssh (make deps: dropbear-bin, openssh-client)")
        return 77
    hosts = SlurmHosts(3, slurm=False, ssh=True)

    def body():
        with hosts:
            scenario(hosts, os.path.abspath(args.fox))
    return verdict("fox_over_ssh", body, hosts.leftovers, errors=(HostsError,))


if __name__ == "__main__":
    sys.exit(main())
