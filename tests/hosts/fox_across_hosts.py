#!/usr/bin/env python3
"""fox inside a Slurm allocation of 3 hosts (tests/hosts/slurm_hosts.py: namespaces on this machine).

    fox_across_hosts.py [--fox build/bin/fox]

On host 0 `salloc -N 3 --no-shell` takes the three hosts; every fox command below runs on
host 0 with the allocation's SLURM_JOB_ID and SLURM_JOB_NODELIST, as in an `salloc` shell:
  1. fox cluster up --nodes 6: the supervisor stays on host 0 and starts an agent on hosts 1
     and 2 (srun); fox status --json puts two nodes on each host; fox status shows the HOST
     column; the agents' steps are in squeue;
  2. fox run ring: 7 places, the token passes every node (nodes on different hosts reach each
     other over the hosts' bridges joined by VXLAN);
  3. fox run pi with node 5 (host 1) killed mid-job by fox kill: the job's answer is the
     failure-free one (the same hits as a run before it without the kill);
  4. fox add --nodes 2 (nodes 7 and 8 join on hosts 0 and 1); fox run memcached --places 4
     (one node on each host): 300 keys through place 0's gateway read back; fox logs of a node
     on host 2 shows its console;
  5. fox cluster down: no QEMU and no agent left on any host; the same with --pxe (nodes on
     every host boot by iPXE from host 0's dnsmasq) and a ring over them;
  6. a second cluster, then the allocation's end (scancel): the agents end, and with them
     every QEMU on hosts 1 and 2 (the supervisor, outside the allocation, declares those
     nodes dead); fox cluster down then leaves nothing;
  7. an allocation of hosts 1 and 2 only (the frontend outside it, as on a login node): fox run
     ring --nodes 2 makes a cluster for the job there, runs it, removes it;
  8. sbatch -N 3 --wait of a script running `fox run ring --nodes 3`: the batch job passes.
Root; skipped (77) without it or without Slurm.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "frontend"))
from slurm_hosts import HostsError, SlurmHosts, processes_in, netns_inode  # noqa: E402
from frontend_test import FOX, Failure, check_ring, expect, verdict, wait_for  # noqa: E402


class Fox:
    """fox commands on host 0 in the allocation."""

    def __init__(self, hosts, fox, job, nodelist):
        self.hosts = hosts
        self.fox = fox
        self.dir = tempfile.mkdtemp(prefix="fox-hosts-state-")
        self.env = dict(os.environ, FOX_STATE_DIR=self.dir, SLURM_JOB_ID=job, SLURM_JOB_NODELIST=nodelist,
                        FOX_ACCEL="tcg")

    def __call__(self, *args, check=None, timeout=300):
        started = time.monotonic()
        r = self.hosts.run(0, [self.fox] + list(args), timeout=timeout, env=self.env)
        out = r.stdout + r.stderr
        print("$ fox %s  -> %d (%.1f s)" % (" ".join(args), r.returncode, time.monotonic() - started))
        print("".join("  | " + line + "\n" for line in out.splitlines() if "am stats" not in line), end="")
        if check is not None and r.returncode != check:
            raise Failure("fox %s exited with %d, expected %d" % (" ".join(args), r.returncode, check))
        return r.returncode, out

    def start(self, *args):
        p = self.hosts.popen(0, [self.fox] + list(args), env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        return p

    def status(self, name):
        _, out = self("status", "--json", "--name", name, check=0)
        return json.loads(out[out.index("{"):])


def qemus(hosts):
    """Pids of QEMUs (and host agents) running in the hosts' namespaces."""
    inodes = {netns_inode(ns) for ns in hosts.namespaces}
    found = []
    for pid in processes_in(inodes):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmd or "fox.host_agent" in cmd:
            found.append("%d: %s" % (pid, cmd[:100]))
    return found


def scenario(hosts, fox_path):
    r = hosts.run(0, ["salloc", "-N", "3", "--no-shell", "--job-name", "fox-test"], timeout=60)
    m = re.search(r"Granted job allocation (\d+)", r.stdout + r.stderr)
    if not m:
        raise Failure("salloc: %s" % (r.stdout + r.stderr))
    job = m.group(1)
    nodelist = hosts.run(0, ["squeue", "-h", "-j", job, "-o", "%N"]).stdout.strip()
    print("allocation %s on %s" % (job, nodelist))
    fox = Fox(hosts, fox_path, job, nodelist)
    name = "across"
    try:
        fox("cluster", "up", "--nodes", "6", "--name", name, check=0)
        st = fox.status(name)
        where = {r["node"]: r["host"] for r in st["nodes"]}
        want = {k: hosts.names[(k - 1) % 3] for k in range(1, 7)}
        if where != want or any(r["state"] != "idle" for r in st["nodes"]):
            raise Failure("nodes and hosts %s, wanted %s, all idle" % (where, want))
        print("ok: 6 nodes idle, two on each host: %s" % where)
        _, out = fox("status", "--name", name, check=0)
        expect(out, r"^NODE\s+HOST\s+ADDRESS", "fox status's HOST column")
        steps = hosts.run(0, ["squeue", "-h", "-s", "-j", job, "-o", "%j %N"]).stdout
        if sorted(line.split()[1] for line in steps.splitlines() if line.startswith("fox-host-agent")) != \
                sorted(hosts.names[1:]):
            raise Failure("the agents' steps are not on hosts 1 and 2: %r" % steps)
        print("ok: the agents run as steps of the allocation on hosts 1 and 2")

        _, out = fox("run", "ring", "--name", name, "--timeout", "300", "--", "laps=20", check=0)
        check_ring(out, 7)
        print("ok: the ring over 6 nodes on 3 hosts")

        pi = ["run", "pi", "--name", name, "--timeout", "300", "--", "samples=3000000000", "chunks=300", "seed=7"]
        _, clean = fox(*pi, check=0)
        answer = re.search(r"from (\d+) hits of 3000000000 samples", clean)
        if not answer:
            raise Failure("pi printed no answer")
        run = fox.start(*pi)
        lines = []
        for line in run.stdout:
            lines.append(line.rstrip("\n"))
            if re.search(r"pi: \d+ of 300 chunks counted", line):
                break
        fox("kill", "5", "--name", name, check=0)
        rest, _ = run.communicate(timeout=300)
        out = "\n".join(lines) + "\n" + rest
        print("".join("  | " + line + "\n" for line in out.splitlines() if "pi:" in line or "died" in line), end="")
        if run.returncode != 0:
            raise Failure("pi with node 5 killed exited %d" % run.returncode)
        expect(out, r"pi: [0-9.]+ from %s hits of 3000000000 samples \(.*after the death of place 5\)" % answer.group(1),
               "pi's failure-free answer after a death")
        print("ok: pi survived node 5's death on host 1 with the failure-free answer (%s hits)" % answer.group(1))

        fox("add", "--nodes", "2", "--name", name, check=0)  # nodes 7 and 8, on hosts 0 and 1
        rows = {r["node"]: r for r in fox.status(name)["nodes"]}
        if [(rows[k]["host"], rows[k]["state"]) for k in (7, 8)] != [(hosts.names[0], "idle"), (hosts.names[1], "idle")]:
            raise Failure("fox add: nodes 7 and 8 are not idle on hosts 0 and 1: %s" % [rows[k] for k in (7, 8)])
        print("ok: fox add --nodes 2: node 7 on host 0 and node 8 on host 1 joined the pool")
        run = fox.start("run", "memcached", "--name", name, "--places", "4")
        try:
            lines = []
            port = None
            for line in run.stdout:
                lines.append(line.rstrip("\n"))
                m = re.search(r"at 127\.0\.0\.1:(\d+)", line)
                port = port or (int(m.group(1)) if m else None)
                if port and sum("serving on" in x for x in lines) == 3:
                    break
            served = {int(m.group(1)) for m in re.finditer(r"memcached: node (\d+) serving", "\n".join(lines))}
            if not port or {(k - 1) % 3 for k in served} != {0, 1, 2}:
                raise Failure("memcached's nodes %s are not one on each host" % sorted(served))
            keys = hosts.run(0, ["/usr/bin/python3", "-c", KEYS, str(port)], timeout=120)
            print(keys.stdout + keys.stderr, end="")
            if keys.returncode != 0:
                raise Failure("keys through the gateway failed")
            print("ok: memcached on nodes %s (one on each host) stored and read back 300 keys" % sorted(served))
        finally:
            run.terminate()
            run.communicate(timeout=60)
        _, out = fox("logs", "3", "--name", name, check=0)
        expect(out, r"fox: pool image", "node 3's console (host 2) through fox logs")

        fox("cluster", "down", "--name", name, check=0)
        wait_for(lambda: not qemus(hosts), 20, "no QEMU or agent left on any host")
        print("ok: fox cluster down left no QEMU and no agent on any host")

        # PXE across hosts: the nodes on hosts 1 and 2 boot by iPXE from host 0's dnsmasq, over VXLAN.
        fox("cluster", "up", "--nodes", "3", "--pxe", "--name", "pxe", check=0)
        _, out = fox("run", "ring", "--name", "pxe", "--timeout", "300", "--", "laps=10", check=0)
        check_ring(out, 4)
        fox("cluster", "down", "--name", "pxe", check=0)
        wait_for(lambda: not qemus(hosts), 20, "no QEMU or agent left on any host")
        print("ok: --pxe: nodes on every host booted by iPXE from host 0, the ring over them")

        fox("cluster", "up", "--nodes", "3", "--name", "again", check=0)
        hosts.run(0, ["scancel", job])
        job = None
        wait_for(lambda: not [q for q in qemus(hosts) if "fox:again:node2" in q or "fox:again:node3" in q
                              or "host_agent" in q], 60, "the allocation's end to stop hosts 1 and 2's QEMUs")
        wait_for(lambda: {r["node"]: r["state"] for r in fox.status("again")["nodes"]}.get(2) == "dead", 30,
                 "node 2 (host 1) dead once its host's agent is gone")
        print("ok: the allocation's end stopped the agents and their QEMUs; the supervisor saw the nodes die")
        fox("cluster", "down", "--name", "again", check=0)
        wait_for(lambda: not qemus(hosts), 20, "nothing left on any host")

        # The frontend outside the allocation (as on a login node): every node on another host.
        r = hosts.run(0, ["salloc", "-N", "2", "-w", ",".join(hosts.names[1:]), "--no-shell"], timeout=60)
        job = re.search(r"Granted job allocation (\d+)", r.stdout + r.stderr).group(1)
        fox.env.update(SLURM_JOB_ID=job, SLURM_JOB_NODELIST=",".join(hosts.names[1:]))
        _, out = fox("run", "ring", "--nodes", "2", "--name", "outside", "--timeout", "300", "--", "laps=20",
                     check=0)
        check_ring(out, 3)
        wait_for(lambda: not qemus(hosts), 20, "nothing left on any host")
        print("ok: with the frontend on a host outside the allocation, a cluster made for the job on hosts 1 and 2")
        hosts.run(0, ["scancel", job])
        job = None

        # A batch job: sbatch runs the script on the allocation's first host, where fox run makes a
        # cluster over the allocation's hosts for the job and removes it after.
        script, output = os.path.join(fox.dir, "job.sh"), os.path.join(fox.dir, "job.out")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexec %s run ring --nodes 3 --timeout 300 -- laps=20\n" % fox_path)
        os.chmod(script, 0o755)
        env = {k: v for k, v in fox.env.items() if not k.startswith("SLURM_JOB")}
        r = hosts.run(0, ["sbatch", "-N", "3", "--wait", "--output", output, script], env=env, timeout=600)
        with open(output, errors="replace") as f:
            out = f.read()
        print("$ sbatch -N 3 --wait job.sh  -> %d: %s" % (r.returncode, (r.stdout + r.stderr).strip()))
        print("".join("  | " + line + "\n" for line in out.splitlines() if "ring:" in line), end="")
        if r.returncode != 0:
            raise Failure("the batch job failed")
        check_ring(out, 4)
        wait_for(lambda: not qemus(hosts), 20, "nothing left on any host")
        print("ok: sbatch: fox run ring over a cluster made for the batch job")
    finally:
        for n in (name, "pxe", "again", "outside"):
            fox("cluster", "down", "--name", n)
        if job:
            hosts.run(0, ["scancel", job])
        import shutil
        shutil.rmtree(fox.dir, ignore_errors=True)


KEYS = r"""
import sys
from pymemcache.client.base import Client
c = Client(("127.0.0.1", int(sys.argv[1])), connect_timeout=10, timeout=60)
failed = c.set_many({"h:%d" % i: b"value %d" % i for i in range(300)}, noreply=False)
assert not failed, failed[:3]
got = c.get_many(["h:%d" % i for i in range(300)])
bad = [i for i in range(300) if got.get("h:%d" % i) != b"value %d" % i]
print("300 keys set through the gateway, %d missing or wrong" % len(bad))
assert not bad, bad[:5]
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fox", default=FOX)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("fox_across_hosts: SKIP: needs root (network namespaces, bridges, VXLAN)")
        return 77
    hosts = SlurmHosts(3)

    def body():
        with hosts:
            scenario(hosts, os.path.abspath(args.fox))
    return verdict("fox_across_hosts", body, hosts.leftovers, errors=(HostsError,))


if __name__ == "__main__":
    sys.exit(main())
