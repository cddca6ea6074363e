// Finish by counting (runtime.h explains the protocol and why it is safe).
#include <cstring>

#include "fox/ebb/messenger.h"
#include "fox/event.h"
#include "fox/net/am.h"
#include "runtime.h"

namespace fox::apgas::detail {
namespace {

// Sends (or, at home, hands over) a report. Event context.
void Deliver(uint32_t home, FinishKey f, const Report& report) {
  std::vector<uint8_t> bytes;
  OutArchive out(bytes);
  out(f, report);
  (void)SendTo(home, kReport, bytes);
  // Otherwise the home is dead: nobody waits for this finish any more.
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
  Report report;
  bool send = false;
  {
    SpinGuard g(lock_);
    Local& l = local_[f];
    if (error) {
      if (f.home == here().id) {
        l.raised.push_back(error);
      } else {
        for (auto& e : Describe(error, here())) l.errors.push_back(std::move(e));
      }
    }
    if (--l.live > 0) return;
    report.seq = ++l.seq;
    report.sent = l.sent;
    report.recv = l.recv;
    report.errors = std::move(l.errors);
    l.errors.clear();
    send = true;
    if (f.home == here().id) {
      // At home: the raised exceptions go straight to the finish.
      auto h = home_.find(f.id);
      if (h != home_.end()) {
        for (auto& e : l.raised) h->second.errors.push_back(std::move(e));
      }
      l.raised.clear();
    }
    ++stats_.reports_sent;
  }
  if (!send) return;
  if (f.home == here().id) {
    OnReport(f.home, f, std::move(report));
  } else {
    Deliver(f.home, f, report);
  }
}

void Runtime::OnReport(uint32_t from, FinishKey f, Report report) {
  std::vector<Promise<void>> resolve;
  {
    SpinGuard g(lock_);
    ++stats_.reports_received;
    if (f.home != here().id) {
      ++stats_.malformed;
      return;
    }
    auto it = home_.find(f.id);
    if (it == home_.end() || it->second.finished) return;  // late: released already
    Home& h = it->second;
    Report& latest = h.latest[from];
    if (report.seq <= latest.seq) return;  // an older one overtaken (large and small messages)
    for (auto& e : report.errors) {
      if (e.dead != 0 && !h.dead_counted.insert(e.place).second) continue;
      h.errors.push_back(Rebuild(e));
    }
    report.errors.clear();
    latest = std::move(report);
    for (uint32_t d : dead_) NoteDeathLocked(f, h, d);  // sent to a place that has died since
    CheckLocked(f, h, &resolve);
  }
  for (auto& p : resolve) p.SetValue();
}

void Runtime::CheckLocked(FinishKey f, Home& h, std::vector<Promise<void>>* resolve) {
  if (h.finished || h.latest.count(f.home) == 0) return;  // the body (or its local children) still runs
  auto count = [&](uint32_t place, bool sent, uint32_t peer) -> uint64_t {
    auto it = h.latest.find(place);
    if (it == h.latest.end()) return 0;
    const auto& m = sent ? it->second.sent : it->second.recv;
    auto c = m.find(peer);
    return c == m.end() ? 0 : c->second;
  };
  for (auto& [p, rep] : h.latest) {
    if (dead_.count(p) != 0) continue;
    for (auto& [q, n] : rep.sent) {
      if (dead_.count(q) == 0 && count(q, false, p) != n) return;  // lost with q if it died
    }
    for (auto& [q, n] : rep.recv) {
      if (dead_.count(q) == 0 && count(q, true, p) != n) return;
    }
  }
  // Orphans: what each live place received from a dead one, by the final
  // counts of the flush, must be in its latest report.
  for (uint32_t d : dead_) {
    auto pending = flush_pending_.find(d);
    if (pending != flush_pending_.end() && !pending->second.empty()) return;
    auto final = h.from_dead.find(d);
    if (final == h.from_dead.end()) continue;
    for (auto& [p, n] : final->second) {
      if (dead_.count(p) == 0 && count(p, false, d) != n) return;
    }
  }
  h.finished = true;
  resolve->push_back(std::move(h.done));
}

void Runtime::NoteDeathLocked(FinishKey f, Home& h, uint32_t d) {
  if (h.finished || h.dead_counted.count(d) != 0) return;
  auto received = [&](uint32_t from) -> uint64_t {
    auto it = h.latest.find(d);
    if (it == h.latest.end()) return 0;
    auto c = it->second.recv.find(from);
    return c == it->second.recv.end() ? 0 : c->second;
  };
  bool lost = false;
  for (auto& [p, rep] : h.latest) {
    auto c = rep.sent.find(d);
    if (c != rep.sent.end() && c->second > received(p)) lost = true;
  }
  auto mine = local_.find(f);  // the home's own sends, not reported yet
  if (mine != local_.end()) {
    auto c = mine->second.sent.find(d);
    if (c != mine->second.sent.end() && c->second > received(f.home)) lost = true;
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
  std::set<uint32_t> involved;
  {
    SpinGuard g(lock_);
    auto it = home_.find(f.id);
    errors = std::move(it->second.errors);
    for (auto& [p, rep] : it->second.latest) {
      if (p != f.home && dead_.count(p) == 0) involved.insert(p);
    }
    home_.erase(it);
    local_.erase(f);
  }
  std::vector<uint8_t> release;
  {
    OutArchive out(release);
    out(f);
  }
  for (uint32_t p : involved) {
    (void)am::SendWait(p, ebb::kApgasRuntimeId, kRelease, release.data(), release.size());
    am::Flush(p);
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
