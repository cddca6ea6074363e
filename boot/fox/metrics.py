"""The cluster's metrics in Prometheus' text exposition format (version 0.0.4).

    text = metrics.exposition(snapshot)

`snapshot` is what the supervisor's status request answers (supervisor.py:
`Supervisor.snapshot`): the cluster's facts, a row per node (with its latest
status report while it is in a job: the transport's and membership's
counters, the Dht's, the APGAS runtime's; ebb/messenger.cc LocalStatus) and
the supervisor's own counts. A pure function, so that it is tested without a
cluster (tests/frontend/metrics_format.py).

Names: every family starts with fox_; counters end in _total. Labels: node
(the node's id, which is also its place id in a job), host (where its QEMU
runs), fox_job (not `job`, which Prometheus gives the scrape target). A
report's keys are a node's to choose: a key this module does not know is
left out, a value that is not a whole number too.
"""
from typing import Dict


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Report keys whose values go up and down; every other known key counts.
GAUGES = {"dht.epoch", "dht.items", "dht.live", "dht.bytes", "apgas.dead_places"}
# Report key prefixes and the families they become (prefix, family stem, help).
PREFIXES = (
    ("am.fd.", "fox_membership_", "SWIM membership (failure detection) on the node: "),
    ("am.dropped.", None, None),  # fox_am_dropped_total{reason}
    ("am.", "fox_am_", "the node's active-message transport: "),
    ("nic.", "fox_nic_", "the node's NIC: "),
    ("large.", "fox_large_messages_", "large messages (Messenger) on the node: "),
    ("dht.", "fox_dht_", "the node's Dht shard: "),
    ("apgas.", "fox_apgas_", "the APGAS runtime at the node's place: "),
)
CORE_COUNTERS = {"events": "events run", "sleeps": "times it slept", "wakeup_ipis": "wake-up IPIs it got"}
SWITCH_COUNTERS = {"rx": "frames from the node", "tx": "frames to the node", "dropped": "its frames dropped",
                   "to_place0": "its frames to place 0", "from_place0": "place 0's frames to it",
                   "no_route": "its frames to place 0 with no job to route them to",
                   "refused": "its frames refused (wrong key)", "send_errors": "frames that could not be sent"}


def escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def valid_name(text):
    return bool(text) and all(c.isascii() and (c.isalnum() or c == "_") for c in text) and not text[0].isdigit()


class Families:
    """Samples grouped by family, each family's HELP and TYPE once, in the order first seen."""

    def __init__(self):
        self.order = []
        self.families = {}

    def add(self, name, kind, help_text, value, **labels):
        if not valid_name(name) or not isinstance(value, (int, float)) or isinstance(value, bool):
            return
        if name not in self.families:
            self.order.append(name)
            self.families[name] = (kind, help_text, [])
        text = ",".join('%s="%s"' % (k, escape(v)) for k, v in labels.items() if v is not None)
        self.families[name][2].append("%s%s %s" % (name, "{%s}" % text if text else "", number(value)))

    def text(self):
        out = []
        for name in self.order:
            kind, help_text, samples = self.families[name]
            out.append("# HELP %s %s" % (name, help_text.replace("\\", "\\\\").replace("\n", " ")))
            out.append("# TYPE %s %s" % (name, kind))
            out.extend(samples)
        return "\n".join(out) + "\n"


def number(value):
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def report_sample(key):
    """(family, type, help, extra labels) for a report key, or None for a key left out."""
    if not all(c.isascii() and (c.isalnum() or c in "_.") for c in key):
        return None
    if key.startswith("core") and "." in key:
        core, what = key[4:].split(".", 1)
        if core.isdigit() and what in CORE_COUNTERS:
            return ("fox_core_%s_total" % what, "counter", "per core of the node: %s" % CORE_COUNTERS[what],
                    {"core": core})
        return None
    for prefix, stem, help_text in PREFIXES:
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix):]
        if not rest or "." in rest:
            return None
        if stem is None:
            return ("fox_am_dropped_total", "counter", "frames the node's transport dropped, by reason",
                    {"reason": rest})
        if key in GAUGES:
            return (stem + rest, "gauge", help_text + rest.replace("_", " "), {})
        return (stem + rest + "_total", "counter", help_text + rest.replace("_", " "), {})
    return None


def exposition(snap):
    f = Families()
    f.add("fox_cluster_info", "gauge", "the cluster: its name, accelerator, network and boot method", 1,
          cluster=snap.get("name"), accel=snap.get("accel"), network=snap.get("network"), boot=snap.get("boot"))
    counts: Dict[str, int] = {}
    for row in snap["nodes"]:
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    for state in sorted(set(counts) | {"booting", "idle", "running", "dead"}):
        f.add("fox_nodes", "gauge", "nodes by state", counts.get(state, 0), state=state)
    c = snap.get("counters", {})
    f.add("fox_node_deaths_total", "counter", "nodes the supervisor declared dead (killed, or QEMU gone)",
          c.get("deaths", 0))
    f.add("fox_boots_total", "counter", "node boots (into the pool or a job)", c.get("boots", 0))
    f.add("fox_jobs_started_total", "counter", "jobs started", c.get("jobs_started", 0))
    f.add("fox_jobs_ended_total", "counter", "jobs ended", c.get("jobs_ended", 0))
    f.add("fox_jobs_queued", "gauge", "jobs waiting for the running one", snap.get("queued", 0))
    job = snap.get("job")
    f.add("fox_job_running", "gauge", "1 while a job runs", 1 if job else 0)
    if job:
        f.add("fox_job_info", "gauge", "the running job", 1, fox_job=job["id"], app=job["app"])
        f.add("fox_job_places", "gauge", "the running job's places on nodes (place 0 is the frontend's)",
              len(job["nodes"]), fox_job=job["id"])
        f.add("fox_job_seconds", "gauge", "how long the running job has run", job.get("seconds") or 0,
              fox_job=job["id"])
    for row in snap["nodes"]:
        node, host = row["node"], row.get("host")
        f.add("fox_node_up", "gauge", "1 unless the node is dead", 0 if row["state"] == "dead" else 1,
              node=node, host=host)
        f.add("fox_node_state", "gauge", "the node's state (1 for the one it is in)", 1, node=node, host=host,
              state=row["state"])
        f.add("fox_node_cores", "gauge", "the node's cores", row.get("cores") or 0, node=node, host=host)
        f.add("fox_node_boots_total", "counter", "times the node booted", row.get("boots") or 0, node=node,
              host=host)
        if row.get("uptime") is not None:
            f.add("fox_node_uptime_seconds", "gauge", "since the node's last boot", row["uptime"], node=node,
                  host=host)
        for key, value in sorted((row.get("switch") or {}).items()):
            if key in SWITCH_COUNTERS:
                f.add("fox_switch_%s_total" % key, "counter", "the cluster's switch: %s" % SWITCH_COUNTERS[key],
                      value, node=node, host=host)
        report = row.get("am")
        if not isinstance(report, dict) or row.get("job") is None or row["state"] == "dead":
            continue  # a dead node's last report is not its state: its series end (stale in Prometheus)
        labels = dict(node=node, host=host, fox_job=row.get("job"), place=row.get("place"))
        if row.get("am_age") is not None:
            f.add("fox_node_report_age_seconds", "gauge", "since the node's last status report", row["am_age"],
                  **labels)
        for key in sorted(report):
            what = report_sample(key)
            value = report[key]
            if what is None or not isinstance(value, int) or isinstance(value, bool) or value < 0:
                continue
            family, kind, help_text, extra = what
            f.add(family, kind, help_text, value, **labels, **extra)
    return f.text()
