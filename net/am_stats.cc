// The transport's counters (am.h: GetStats, ForEachCounter, LogStats), named
// in one table so that logs, `fox status` and benchmarks agree.
#include <cstdio>

#include "am_driver.h"
#include "am_mailbox.h"
#include "fox/log.h"

namespace fox::am {

using internal::g;
using internal::Locked;

namespace {
void AddChannel(net::ChannelCounters* sum, const net::ChannelCounters& c) {
  sum->frames_sent += c.frames_sent;
  sum->frames_retransmitted += c.frames_retransmitted;
  sum->timeouts += c.timeouts;
  sum->fast_retransmits += c.fast_retransmits;
  sum->resent_dropped += c.resent_dropped;
  sum->spurious_retransmits += c.spurious_retransmits;
  sum->frames_acked += c.frames_acked;
  sum->acks_sent += c.acks_sent;
  sum->transmit_refused += c.transmit_refused;
  sum->frames_received += c.frames_received;
  sum->frames_buffered += c.frames_buffered;
  sum->acks_received += c.acks_received;
  sum->duplicates += c.duplicates;
}
}  // namespace

Stats GetStats() {
  Stats s{};
  if (!Started()) return s;
  {
    Locked l;
    s.endpoint = g.endpoint->counters();
    s.membership = g.endpoint->membership().counters();
    g.endpoint->ForEachPeer([&](NodeId n) {
      g.lock.AssertHeld();
      if (const net::Channel* c = g.endpoint->ChannelTo(n)) AddChannel(&s.channels, c->counters());
    });
    s.local_messages = g.counters.local_messages;
    s.no_receiver = g.counters.no_receiver;
    s.backpressure_drops = g.counters.backpressure_drops;
    s.mailbox_overflows = g.counters.mailbox_overflows;
    s.rx_datagrams = g.counters.rx_datagrams;
    s.rx_bytes = g.counters.rx_bytes;
  }
  s.tx_datagrams = g.tx_datagrams.load(std::memory_order_relaxed);
  s.tx_bytes = g.tx_bytes.load(std::memory_order_relaxed);
  s.tx_failures = g.tx_failures.load(std::memory_order_relaxed);
  for (auto& m : g.mailboxes) {
    if (auto* mb = m.load(std::memory_order_acquire)) s.no_listener += mb->no_listener();
  }
  internal::PlatformStats(&s);
  return s;
}

void ForEachCounter(const Stats& s, FunctionRef<void(const char* name, uint64_t value)> fn) {
  const auto& e = s.endpoint;
  const auto& c = s.channels;
  const auto& m = s.membership;
  struct Row {
    const char* name;
    uint64_t value;
  };
  const Row rows[] = {
      {"messages_sent", e.messages_sent},
      {"messages_delivered", e.messages_delivered},
      {"local_messages", s.local_messages},
      {"frames_flushed", e.frames_flushed},
      {"flush_on_full", e.flush_on_full},
      {"flush_on_timeout", e.flush_on_timeout},
      {"send_busy", e.send_busy},
      {"deferred", e.deferred},
      {"deferred_full", e.deferred_full},
      {"deferred_dropped", e.deferred_dropped},
      {"frames_sent", c.frames_sent},
      {"frames_retransmitted", c.frames_retransmitted},
      {"retransmit_timeouts", c.timeouts},
      {"fast_retransmits", c.fast_retransmits},
      {"resent_dropped", c.resent_dropped},
      {"spurious_retransmits", c.spurious_retransmits},
      {"duplicates_received", c.duplicates},
      {"frames_acked", c.frames_acked},
      {"acks_sent", c.acks_sent},
      {"acks_received", c.acks_received},
      {"frames_buffered", c.frames_buffered},
      {"fd.probes", m.probes},
      {"fd.probes_indirect", m.probes_indirect},
      {"fd.probes_failed", m.probes_failed},
      {"fd.probes_skipped", m.probes_skipped},
      {"fd.pings_sent", m.pings_sent},
      {"fd.acks_sent", m.acks_sent},
      {"fd.ping_reqs_sent", m.ping_reqs_sent},
      {"fd.messages_received", m.messages_received},
      {"fd.bad_messages", m.bad_messages},
      {"fd.send_failures", m.send_failures},
      {"fd.suspicions", m.suspicions},
      {"fd.refutations", m.refutations},
      {"fd.declared_dead", m.declared_dead},
      {"fd.updates_sent", m.updates_sent},
      {"peers_suspected", e.peers_suspected},
      {"peers_dead", e.peers_dead},
      {"dead_notices_sent", e.dead_notices_sent},
      {"dead_notices_received", e.dead_notices_received},
      {"dead_notices_about_self", e.dead_notices_about_self},
      {"fences_sent", e.fences_sent},
      {"fences_ignored", e.fences_ignored},
      {"no_receiver", s.no_receiver},
      {"no_listener", s.no_listener},
      {"backpressure_drops", s.backpressure_drops},
      {"mailbox_overflows", s.mailbox_overflows},
      {"tx_datagrams", s.tx_datagrams},
      {"tx_bytes", s.tx_bytes},
      {"tx_failures", s.tx_failures},
      {"rx_datagrams", s.rx_datagrams},
      {"rx_bytes", s.rx_bytes},
      {"rx_not_am", s.rx_not_am},
      {"arp_requests", s.arp_requests},
      {"arp_misses", s.arp_misses},
      {"arp_replies", s.arp_replies},
      {"arp_learned", s.arp_learned},
      {"nic.rx_packets", s.nic.rx_packets},
      {"nic.rx_dropped", s.nic.rx_dropped},
      {"nic.tx_packets", s.nic.tx_packets},
      {"nic.tx_dropped", s.nic.tx_dropped},
      {"nic.interrupts", s.nic.interrupts},
  };
  for (const Row& r : rows) fn(r.name, r.value);
  char name[48];
  for (size_t i = 1; i < net::kNumDropReasons; ++i) {
    std::snprintf(name, sizeof name, "dropped.%s", net::DropReasonName(net::DropReason(i)));
    fn(name, e.drops.count[i]);
  }
}

void LogStats() {
  ForEachCounter(GetStats(), [](const char* name, uint64_t value) {
    if (value != 0) LOG_INFO("am stats: %s %llu", name, (unsigned long long)value);
  });
}

}  // namespace fox::am
