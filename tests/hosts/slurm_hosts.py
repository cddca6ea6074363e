#!/usr/bin/env python3
"""Several "hosts" on this machine, managed by Slurm, for tests of fox across hosts (issue 44).

    with SlurmHosts(3) as hosts:            # needs root
        hosts.run(0, ["srun", "-N3", "hostname"])

Each host is a network namespace (foxhTAG-I) whose processes also get a UTS namespace with
the host's name (foxTAG-hI) and, through `ip netns exec`, the hosts file /etc/netns/NS/hosts
(every host's name and address: what Slurm's daemons and clients resolve). The hosts meet on
a bridge of their own in a namespace of their own (foxhTAG-fabric): host I is 10.78.0.I+1/24
on its eth0. Slurm from Debian's packages: one munged (a key of the test's, its socket in the
test's directory), slurmctld on host 0, a slurmd on every host, one partition `fox` holding
them all; configuration, state, logs and spool in the test's directory (SLURM_CONF names its
slurm.conf in every command run here). Processes started through Slurm (job steps) live in
their host's namespaces, as they would on that machine.

With ssh=True (and slurm=False for hosts without Slurm), every host also runs an SSH server
(Dropbear, Debian's dropbear-bin) on its address, taking root's logins with a key of the
test's: `ssh_command` is the OpenSSH client command that reaches them (FOX_SSH for `fox
cluster up --hosts`).

Cleaning up (close(), also on failure) kills every process in the namespaces, munged, and
removes the namespaces, the hosts files and the directory.

    slurm_hosts.py [--hosts N]     brings them up, runs `srun -N N hostname` on host 0,
                                   checks it printed every host's name, takes them down
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FABRIC_NET = "10.78.0"


class HostsError(Exception):
    pass


def sh(*cmd, check=True, timeout=60):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise HostsError("%s: %s" % (" ".join(cmd), (r.stderr or r.stdout).strip()))
    return r


def netns_inode(ns):
    try:
        return os.stat("/var/run/netns/%s" % ns).st_ino
    except OSError:
        return None


def processes_in(inodes):
    """Pids of the processes whose network namespace is one of `inodes`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.stat("/proc/%s/ns/net" % entry).st_ino in inodes:
                pids.append(int(entry))
        except OSError:
            pass
    return pids


class SlurmHosts:
    def __init__(self, count, tag=None, slurm=True, ssh=False):
        if count < 1 or count > 200:
            raise HostsError("1 to 200 hosts")
        self.count = count
        self.slurm = slurm
        self.ssh = ssh
        self.tag = tag or str(os.getpid())
        self.dir = None
        self.munged = None
        self.daemons = []
        self.namespaces = ["foxh%s-%d" % (self.tag, i) for i in range(count)]
        self.fabric = "foxh%s-fabric" % self.tag
        self.names = ["fox%s-h%d" % (self.tag, i) for i in range(count)]

    def address(self, i):
        return "%s.%d" % (FABRIC_NET, i + 1)

    # ---- up ----
    def __enter__(self):
        try:
            self.up()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def up(self):
        if os.geteuid() != 0:
            raise HostsError("hosts in namespaces need root")
        tools = (("slurmctld", "slurmd", "srun", "munged") if self.slurm else ()) + \
            (("dropbear", "ssh", "ssh-keygen") if self.ssh else ())
        for tool in tools:
            if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
                raise HostsError("%s is not installed (make deps: slurmctld slurmd slurm-client munge "
                                 "dropbear-bin openssh-client)" % tool)
        self.dir = tempfile.mkdtemp(prefix="fox-hosts-")
        os.chmod(self.dir, 0o711)  # munged: its socket's directory must be searchable by all
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.network()
        if self.slurm:
            self.start_munge()
            self.write_config()
            self.start_slurm()
        if self.ssh:
            self.start_sshd()

    def network(self):
        sh("ip", "netns", "add", self.fabric)
        sh("ip", "-n", self.fabric, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.fabric, "link", "set", "br0", "up")
        hosts = "127.0.0.1 localhost\n" + "".join("%s %s\n" % (self.address(i), self.names[i])
                                                  for i in range(self.count))
        for i, ns in enumerate(self.namespaces):
            sh("ip", "netns", "add", ns)
            os.makedirs("/etc/netns/%s" % ns, exist_ok=True)
            with open("/etc/netns/%s/hosts" % ns, "w") as f:
                f.write(hosts)
            sh("ip", "-n", self.fabric, "link", "add", "h%d" % i, "type", "veth", "peer", "name", "eth0",
               "netns", ns)
            # 9000 bytes, as a cluster's fabric often has: VXLAN's 1550-byte packets pass whole
            sh("ip", "-n", self.fabric, "link", "set", "h%d" % i, "mtu", "9000", "master", "br0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "addr", "add", "%s/24" % self.address(i), "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "mtu", "9000", "up")

    def start_munge(self):
        key = os.path.join(self.dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.munge_socket = os.path.join(self.dir, "munge.sock")
        log = open(os.path.join(self.dir, "munged.out"), "w")
        self.munged = subprocess.Popen(
            ["/usr/sbin/munged", "--foreground", "--force", "--socket", self.munge_socket, "--key-file", key,
             "--pid-file", os.path.join(self.dir, "munged.pid"), "--log-file", os.path.join(self.dir, "munged.log"),
             "--seed-file", os.path.join(self.dir, "munged.seed")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.wait(lambda: os.path.exists(self.munge_socket), 10, "munged's socket", self.munged)

    def write_config(self):
        d = self.dir
        names = "fox%s-h[0-%d]" % (self.tag, self.count - 1)
        addresses = ",".join(self.address(i) for i in range(self.count))
        conf = """ClusterName=fox{tag}
SlurmctldHost={h0}({a0})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge}
CredType=cred/munge
StateSaveLocation={d}/ctld
SlurmdSpoolDir={d}/slurmd-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
PlugStackConfig={d}/plugstack.conf
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName={names} NodeAddr={addresses} CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=fox Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""".format(tag=self.tag, h0=self.names[0], a0=self.address(0), munge=self.munge_socket, d=d, names=names,
           addresses=addresses, cpus=os.cpu_count() or 1)
        os.makedirs(os.path.join(d, "ctld"))
        for name in self.names:
            os.makedirs(os.path.join(d, "slurmd-%s" % name))
        open(os.path.join(d, "plugstack.conf"), "w").close()
        with open(os.path.join(d, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")
        with open(self.conf, "w") as f:
            f.write(conf)

    def prefix(self, i, cgroup=False):
        """What runs a command on host i: its namespaces and hostname, SLURM_CONF set. `ip netns
        exec` gives it a fresh /sys without the cgroup hierarchies; with `cgroup` (slurmd, whose
        cgroup plugin must start even though it confines nothing here: proctrack/linuxproc,
        task/none) the freezer's v1 hierarchy is mounted again in its mount namespace."""
        mount = ("mount -t tmpfs cgroup_root /sys/fs/cgroup && mkdir /sys/fs/cgroup/freezer && "
                 "mount -t cgroup -o freezer freezer /sys/fs/cgroup/freezer && " if cgroup else "")
        return ["ip", "netns", "exec", self.namespaces[i], "unshare", "--uts", "--",
                "sh", "-c", mount + 'hostname "$0" && c="$1" && shift && exec env SLURM_CONF="$c" "$@"',
                self.names[i], self.conf]

    def start_slurm(self):
        self.daemon(0, ["/usr/sbin/slurmctld", "-D", "-i", "-f", self.conf], "slurmctld")
        for i in range(self.count):
            self.daemon(i, ["/usr/sbin/slurmd", "-D", "-f", self.conf, "-N", self.names[i]], "slurmd-%d" % i)
        self.wait(lambda: self.idle_nodes() == self.count, 60, "every slurmd registered (sinfo: idle)")

    def start_sshd(self):
        """Dropbear (Debian's dropbear-bin: binaries, no service) on every host's address, taking root's
        logins with the test's key. Root's home, where Dropbear reads authorized_keys, is the test's
        directory: /etc/passwd is replaced by a copy saying so, in the daemons' mount namespaces
        only (ip netns exec gives each its own)."""
        d = self.dir
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(d, "client"))
        sh("dropbearkey", "-t", "ed25519", "-f", os.path.join(d, "host"))
        home = os.path.join(d, "root")
        os.makedirs(os.path.join(home, ".ssh"), mode=0o700)
        os.chmod(home, 0o700)
        shutil.copyfile(os.path.join(d, "client.pub"), os.path.join(home, ".ssh", "authorized_keys"))
        os.chmod(os.path.join(home, ".ssh", "authorized_keys"), 0o600)
        with open("/etc/passwd") as f:
            lines = f.read().splitlines()
        with open(os.path.join(d, "passwd"), "w") as f:
            for line in lines:
                fields = line.split(":")
                if fields[0] == "root" and len(fields) == 7:
                    fields[5] = home
                f.write(":".join(fields) + "\n")
        os.chmod(os.path.join(d, "passwd"), 0o644)
        for i in range(self.count):
            self.daemon(i, ["sh", "-c", 'mount --bind "$0" /etc/passwd && exec "$@"', os.path.join(d, "passwd"),
                            "/usr/sbin/dropbear", "-F", "-E", "-s", "-g", "-r", os.path.join(d, "host"),
                            "-p", "%s:22" % self.address(i), "-P", os.path.join(d, "dropbear-%d.pid" % i)],
                        "dropbear-%d" % i)
        self.ssh_command = "ssh -i %s/client -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null " \
                           "-o BatchMode=yes -o LogLevel=ERROR" % d
        self.wait(lambda: all(self.run(0, self.ssh_command.split() + [n, "true"], timeout=30).returncode == 0
                              for n in self.names), 30, "an SSH server on every host")

    def daemon(self, i, cmd, name):
        out = open(os.path.join(self.dir, name + ".out"), "w")
        p = subprocess.Popen(self.prefix(i, cgroup=True) + cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        out.close()
        p.what = name
        self.daemons.append(p)
        return p

    def idle_nodes(self):
        r = subprocess.run(self.prefix(0) + ["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True,
                           timeout=30)
        return sum(1 for line in r.stdout.splitlines() if line.split()[-1:] == ["idle"])

    def wait(self, predicate, timeout, what, proc=None):
        deadline = time.monotonic() + timeout
        while not predicate():
            for p in ([proc] if proc else []) + self.daemons:
                if p.poll() is not None:
                    raise HostsError("%s exited with %d while waiting for %s:\n%s" % (
                        getattr(p, "what", p.args[0]), p.returncode, what, self.logs()))
            if time.monotonic() > deadline:
                raise HostsError("timed out (%d s) waiting for %s:\n%s" % (timeout, what, self.logs()))
            time.sleep(0.2)

    def logs(self, lines=8):
        out = []
        for name in sorted(os.listdir(self.dir)) if self.dir else []:
            if name.endswith((".log", ".out")):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    tail = f.read().strip().splitlines()[-lines:]
                out += ["  %s| %s" % (name, line) for line in tail]
        return "\n".join(out)

    # ---- use ----
    def run(self, i, cmd, timeout=120, env=None, **kwargs):
        """A command on host i (subprocess.run: output captured as text)."""
        return subprocess.run(self.prefix(i) + list(cmd), capture_output=True, text=True, timeout=timeout,
                              env=env, **kwargs)

    def popen(self, i, cmd, **kwargs):
        return subprocess.Popen(self.prefix(i) + list(cmd), **kwargs)

    # ---- down ----
    def close(self):
        inodes = {n for n in (netns_inode(ns) for ns in self.namespaces + [self.fabric]) if n is not None}
        for p in self.daemons:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 10
        while any(p.poll() is None for p in self.daemons) and time.monotonic() < deadline:
            time.sleep(0.1)
        for _ in range(3):  # what is left in the hosts (job steps, their children): killed
            pids = processes_in(inodes)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.2)
        for p in self.daemons:
            if p.poll() is None:
                p.kill()
            p.wait()
        if self.munged is not None and self.munged.poll() is None:
            self.munged.terminate()
            try:
                self.munged.wait(5)
            except subprocess.TimeoutExpired:
                self.munged.kill()
                self.munged.wait()
        for ns in self.namespaces + [self.fabric]:
            if netns_inode(ns) is not None:
                sh("ip", "netns", "del", ns, check=False)
            shutil.rmtree("/etc/netns/%s" % ns, ignore_errors=True)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def leftovers(self):
        left = ["namespace %s" % ns for ns in self.namespaces + [self.fabric] if netns_inode(ns) is not None]
        left += ["/etc/netns/%s" % ns for ns in self.namespaces if os.path.exists("/etc/netns/%s" % ns)]
        return left


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("slurm_hosts: SKIP: needs root (network namespaces)")
        return 77
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "frontend"))
    from frontend_test import check, verdict
    hosts = SlurmHosts(args.hosts)

    def body():
        with hosts:
            r = hosts.run(0, ["srun", "-N", str(args.hosts), "hostname"])
            print("$ srun -N %d hostname  -> %d\n%s%s" % (args.hosts, r.returncode, r.stdout, r.stderr), end="")
            check(r.returncode == 0 and sorted(r.stdout.split()) == sorted(hosts.names),
                  "srun -N %d hostname printed every host's name %s" % (args.hosts, hosts.names))
    return verdict("slurm_hosts", body, hosts.leftovers, errors=(HostsError, ))


if __name__ == "__main__":
    sys.exit(main())
