// Finish by counting (runtime.h explains the protocol and why it is safe).
#include <cstring>

#include "fox/ebb/messenger.h"
#include "fox/event.h"
#include "fox/net/am.h"
#include "runtime.h"

namespace fox::apgas::detail {
namespace {

uint64_t CountOf(const std::map<uint32_t, uint64_t>& m, uint32_t key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

FinishKey Runtime::NewFinish() {
  SpinGuard g(lock_);
  FinishKey f{here().id, next_finish_++};
  Home& h = home_[f.id];
  h.waiter = h.done.GetFuture();
  local_[f].live = 1;  // the body
  return f;
}

void Runtime::Spawned(FinishKey f) {
  SpinGuard g(lock_);
  ++local_[f].live;
}

bool Runtime::Sent(FinishKey f, Place to, bool record) {
  SpinGuard g(lock_);
  Local& l = local_[f];
  if (dead_.count(to.id) != 0) {
    if (!record) return false;
    if (f.home == here().id) {
      auto h = home_.find(f.id);
      if (h != home_.end() && h->second.dead_counted.insert(to.id).second) {
        h->second.errors.push_back(std::make_exception_ptr(DeadPlaceException(to)));
      }
    } else {
      l.errors.push_back({1, to.id, "fox::apgas::DeadPlaceException", "place " + std::to_string(to.id) + " is dead"});
    }
    return false;
  }
  ++l.sent[to.id];
  ++stats_.spawned_remote;
  return true;
}

void Runtime::Received(FinishKey f, uint32_t from) {
  SpinGuard g(lock_);
  Local& l = local_[f];
  ++l.recv[from];
  ++l.live;
  ++stats_.received;
}

void Runtime::Done(FinishKey f, std::exception_ptr error) {
  Resolve resolve;
  std::vector<uint8_t> message;
  {
    SpinGuard g(lock_);
    auto it = local_.find(f);
    if (it == local_.end()) return;  // cannot happen: the activity counted itself
    Local& l = it->second;
    if (error) {
      if (f.home == here().id) {
        l.raised.push_back(error);
      } else {
        for (auto& e : Describe(error, here())) l.errors.push_back(std::move(e));
      }
    }
    if (--l.live > 0) return;
    Report report{std::move(l.sent), std::move(l.recv), std::move(l.errors)};
    std::vector<std::exception_ptr> raised = std::move(l.raised);
    local_.erase(it);  // nothing of f left here: forget it
    ++stats_.reports_sent;
    if (f.home == here().id) {
      auto h = home_.find(f.id);
      if (h != home_.end()) {
        for (auto& e : raised) h->second.errors.push_back(std::move(e));
      }
      ApplyReportLocked(f.home, f, std::move(report), &resolve);
    } else {
      OutArchive out(message);
      out(++sequence_[f.home], f, report);
    }
  }
  for (auto& p : resolve) p.SetValue();
  if (!message.empty()) (void)SendTo(f.home, kReport, message);  // fails only if the home died
}

void Runtime::OnOrdered(uint32_t from, uint16_t handler, const uint8_t* data, size_t length) {
  uint64_t seq = 0;
  if (length < 8) {
    SpinGuard g(lock_);
    ++stats_.malformed;
    return;
  }
  std::memcpy(&seq, data, 8);
  Resolve resolve;
  {
    SpinGuard g(lock_);
    ++stats_.reports_received;
    Ordered& o = ordered_[from];
    if (seq <= o.applied) return;
    if (seq != o.applied + 1) {  // overtook an earlier one: wait for it
      o.held.emplace(seq, std::make_pair(handler, std::vector<uint8_t>(data, data + length)));
      return;
    }
    ApplyLocked(from, handler, data, length, &resolve);
    o.applied = seq;
    for (auto it = o.held.find(o.applied + 1); it != o.held.end(); it = o.held.find(o.applied + 1)) {
      ApplyLocked(from, it->second.first, it->second.second.data(), it->second.second.size(), &resolve);
      o.applied = it->first;
      o.held.erase(it);
    }
  }
  for (auto& p : resolve) p.SetValue();
}

void Runtime::ApplyLocked(uint32_t from, uint16_t handler, const uint8_t* data, size_t length, Resolve* resolve) {
  try {
    InArchive in(data, length);
    uint64_t seq;
    in(seq);
    if (handler == kReport) {
      FinishKey f;
      Report report;
      in(f, report);
      ApplyReportLocked(from, f, std::move(report), resolve);
    } else {
      uint32_t dead;
      std::vector<std::pair<uint64_t, uint64_t>> counts;
      in(dead, counts);
      ApplyFlushedLocked(from, dead, counts, resolve);
    }
  } catch (const std::exception&) {
    ++stats_.malformed;
  }
}

void Runtime::ApplyReportLocked(uint32_t from, FinishKey f, Report report, Resolve* resolve) {
  if (f.home != here().id) {
    ++stats_.malformed;
    return;
  }
  auto it = home_.find(f.id);
  if (it == home_.end() || it->second.finished) return;  // late: it ended (a place that died meanwhile)
  Home& h = it->second;
  Counts& c = h.total[from];
  for (auto& [q, n] : report.sent) c.sent[q] += n;
  for (auto& [q, n] : report.recv) c.recv[q] += n;
  for (auto& e : report.errors) {
    if (e.dead != 0 && !h.dead_counted.insert(e.place).second) continue;
    h.errors.push_back(Rebuild(e));
  }
  for (uint32_t d : dead_) NoteDeathLocked(f, h, d);  // sent to a place that has died since
  CheckLocked(f, h, resolve);
}

std::vector<std::pair<uint64_t, uint64_t>> Runtime::UnreportedFromLocked(uint32_t home, uint32_t dead) {
  std::vector<std::pair<uint64_t, uint64_t>> counts;
  for (auto& [f, l] : local_) {
    uint64_t n = f.home == home ? CountOf(l.recv, dead) : 0;
    if (n != 0) counts.emplace_back(f.id, n);
  }
  return counts;
}

void Runtime::ApplyFlushedLocked(uint32_t from, uint32_t dead, const std::vector<std::pair<uint64_t, uint64_t>>& counts,
                                 Resolve* resolve) {
  // Every report `from` sent before its answer is in: these sums are final.
  for (auto& [id, unreported] : counts) {
    auto h = home_.find(id);
    if (h == home_.end()) continue;
    h->second.from_dead[dead][from] = CountOf(h->second.total[from].recv, dead) + unreported;
  }
  flush_pending_[dead].erase(from);
  CheckAllLocked(resolve);
}

void Runtime::CheckAllLocked(Resolve* resolve) {
  for (auto& [id, h] : home_) CheckLocked(FinishKey{here().id, id}, h, resolve);
}

void Runtime::CheckLocked(FinishKey f, Home& h, Resolve* resolve) {
  if (h.finished || local_.count(f) != 0) return;  // the body or other activities of f still run here
  auto total = [&](uint32_t place, bool sent, uint32_t peer) -> uint64_t {
    auto it = h.total.find(place);
    if (it == h.total.end()) return 0;
    return CountOf(sent ? it->second.sent : it->second.recv, peer);
  };
  for (auto& [p, c] : h.total) {
    if (dead_.count(p) != 0) continue;
    for (auto& [q, n] : c.sent) {
      if (dead_.count(q) == 0 && total(q, false, p) != n) return;  // lost with q if it died
    }
    for (auto& [q, n] : c.recv) {
      if (dead_.count(q) == 0 && total(q, true, p) != n) return;
    }
  }
  // Orphans: what each live place received from a dead one, by the final
  // counts of the flush, must be in its reports.
  for (uint32_t d : dead_) {
    auto pending = flush_pending_.find(d);
    if (pending != flush_pending_.end() && !pending->second.empty()) return;
    auto final = h.from_dead.find(d);
    if (final == h.from_dead.end()) continue;
    for (auto& [p, n] : final->second) {
      if (dead_.count(p) == 0 && total(p, false, d) != n) return;
    }
  }
  h.finished = true;
  resolve->push_back(std::move(h.done));
}

void Runtime::NoteDeathLocked(FinishKey f, Home& h, uint32_t d) {
  if (h.finished || h.dead_counted.count(d) != 0) return;
  auto received = [&](uint32_t from) -> uint64_t {
    auto it = h.total.find(d);
    return it == h.total.end() ? 0 : CountOf(it->second.recv, from);
  };
  auto mine = local_.find(f);  // the home's own sends, not reported yet
  uint64_t unreported = mine == local_.end() ? 0 : CountOf(mine->second.sent, d);
  bool lost = unreported > received(f.home) && h.total.count(f.home) == 0;
  for (auto& [p, c] : h.total) {
    if (CountOf(c.sent, d) + (p == f.home ? unreported : 0) > received(p)) lost = true;
  }
  if (!lost) return;
  h.dead_counted.insert(d);
  h.errors.push_back(std::make_exception_ptr(DeadPlaceException(Place{d})));
}

void Runtime::Wait(FinishKey f) {
  Future<void> done;
  {
    SpinGuard g(lock_);
    done = std::move(home_[f.id].waiter);
  }
  done.Block();
  std::vector<std::exception_ptr> errors;
  {
    SpinGuard g(lock_);
    auto it = home_.find(f.id);
    errors = std::move(it->second.errors);
    home_.erase(it);
  }
  if (!errors.empty()) throw MultipleExceptions(std::move(errors));
}

void FinishBlock(Function<void()> body) {
  Activity* parent = Current();
  auto rt = Runtime::Get();
  FinishKey f = rt->NewFinish();
  Activity mine{f};
  event::Local() = &mine;
  std::exception_ptr error;
  try {
    body();
  } catch (...) {
    error = std::current_exception();
  }
  event::Local() = &mine;
  rt->Done(f, error);
  try {
    rt->Wait(f);
  } catch (...) {
    event::Local() = parent;
    throw;
  }
  event::Local() = parent;
}

}  // namespace fox::apgas::detail
