"""The fault campaign's memcached workload (campaign.py; issue 43's L column): stock clients
(pymemcache) write through every hosted place's gateway while the campaign injects its fault, then
every write the Dht acknowledged (STORED) is read back through place 0, which no fault touches. A
write acknowledged and then missing or different is lost: the replicated Dht promises none is.

  writes = Writes(run, places, write_s)   # starts once the places say where they serve
  ... the fault ...
  writes.join(); writes.acked, writes.lost, writes.error

Each place gets a thread of its own writing keys "pP:N" (values naming key and place) for write_s
seconds from the places' start, at most RATE a second (a machine's speed does not lengthen the
read-back); a write that fails or times out (its place dead, paused, fenced)
is not acknowledged, and that thread goes on after a short pause. Then the acknowledged keys are
read back in batches (get_many) through place 0, with the client's own timeouts (a read whose
primary died waits for the membership, then the replica answers).
"""
import re
import threading
import time

RATE = 1000  # writes a second through each place, at most: the read-back's length is bounded
GATEWAY = re.compile(r"place(\d+)\| memcached: place 0 serves the same Dht to clients on this machine at "
                     r"127\.0\.0\.1:(\d+)")


def value_of(place, n):
    return ("written through place %d as write %d" % (place, n)).encode()


class Writes:
    def __init__(self, run, places, write_s):
        from pymemcache.client.base import Client  # Debian's python3-pymemcache (make deps)
        self.client = Client
        self.run, self.places, self.write_s = run, places, write_s
        self.acked = {}  # key -> value
        self.lost, self.checked, self.error = 0, 0, None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.main, daemon=True)
        self.thread.start()

    def ports(self, wait_s=60):
        """Every place's gateway port, from the places' output."""
        end = time.monotonic() + wait_s
        while time.monotonic() < end and not self.run.ended():
            found = {int(m.group(1)): int(m.group(2)) for m in GATEWAY.finditer("\n".join(self.run.lines))}
            if len(found) == self.places:
                return found
            time.sleep(0.05)
        return None

    def write(self, place, port, until):
        c, n, due = None, 0, time.monotonic()
        while time.monotonic() < until and not self.run.ended():
            due = max(due + 1.0 / RATE, time.monotonic() - 0.1)  # no burst after a failure's pause
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            key, value = "p%d:%d" % (place, n), value_of(place, n)
            n += 1
            try:
                if c is None:
                    c = self.client(("127.0.0.1", port), connect_timeout=2, timeout=5)
                if c.set(key, value, noreply=False):
                    with self.lock:
                        self.acked[key] = value
            except Exception:  # not acknowledged: a dead, paused or fenced place
                c = None
                time.sleep(0.2)

    def main(self):
        try:
            ports = self.ports()
            if ports is None:
                self.error = "the places never said where they serve"
                return
            until = self.run.started + self.write_s
            writers = [threading.Thread(target=self.write, args=(p, port, until), daemon=True)
                       for p, port in ports.items()]
            for w in writers:
                w.start()
            for w in writers:
                w.join()
            self.verify(ports[0])
        except Exception as e:  # noqa: BLE001 (reported as the run's failure)
            self.error = "%s: %s" % (type(e).__name__, e)

    def verify(self, port):
        c = self.client(("127.0.0.1", port), connect_timeout=5, timeout=30)
        keys = sorted(self.acked)
        for i in range(0, len(keys), 200):
            batch = keys[i:i + 200]
            got = c.get_many(batch)
            for k in batch:
                self.checked += 1
                if got.get(k) != self.acked[k]:
                    self.lost += 1

    def join(self, timeout):
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.error = "the read-back did not end"
