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

const char* FinishModeName(FinishMode mode) { return mode == FinishMode::kPlace0 ? "place0" : "none"; }

bool ParseFinishMode(const char* text, FinishMode* mode) {
  if (std::strcmp(text, "none") == 0) {
    *mode = FinishMode::kNone;
  } else if (std::strcmp(text, "place0") == 0) {
    *mode = FinishMode::kPlace0;
  } else {
    return false;
  }
  return true;
}

void Runtime::Resolve::Run() {
  for (auto& p : promises) p.SetValue();
  for (auto& [to, bytes] : messages) (void)SendTo(to, kDone, bytes);  // fails only if it died
}

FinishKey Runtime::NewFinish(const FinishKey* parent) {
  SpinGuard g(lock_);
  FinishKey f{here().id, next_finish_++};
  Waiter& w = waiting_[f.id];
  w.future = w.done.GetFuture();
  Local& l = local_[f];
  l.live = 1;  // the body
  if (mode_ == FinishMode::kPlace0 && parent != nullptr) {
    l.chain.push_back(*parent);
    auto p = local_.find(*parent);  // there: the activity that opens f is one of it
    if (p != local_.end()) l.chain.insert(l.chain.end(), p->second.chain.begin(), p->second.chain.end());
  }
  return f;
}

std::vector<uint8_t> Runtime::Header(FinishKey f) {
  std::vector<uint8_t> bytes;
  OutArchive out(bytes);
  out(f);
  if (mode_ == FinishMode::kPlace0) {
    SpinGuard g(lock_);
    auto l = local_.find(f);
    out(l == local_.end() ? Chain{} : l->second.chain);
  }
  return bytes;
}

FinishKey Runtime::ReadHeader(InArchive& in, Chain* chain) const {
  FinishKey f;
  in(f);
  if (mode_ == FinishMode::kPlace0) in(*chain);
  return f;
}

void Runtime::Spawned(FinishKey f) {
  SpinGuard g(lock_);
  ++local_[f].live;
}

void Runtime::AddDeadLocked(FinishKey f, Local& l, uint32_t dead) {
  if (StatePlace(f) == here().id) {
    State* s = StateLocked(f, &l.chain);
    if (s != nullptr && s->dead_counted.insert(dead).second) {
      s->errors.push_back({1, dead, "fox::apgas::DeadPlaceException", "place " + std::to_string(dead) + " is dead"});
    }
    return;
  }
  l.errors.push_back({1, dead, "fox::apgas::DeadPlaceException", "place " + std::to_string(dead) + " is dead"});
}

bool Runtime::Sent(FinishKey f, Place to, bool record) {
  SpinGuard g(lock_);
  Local& l = local_[f];
  if (dead_.count(to.id) != 0) {
    if (record) AddDeadLocked(f, l, to.id);
    return false;
  }
  ++l.sent[to.id];
  ++stats_.spawned_remote;
  if (f.home == here().id) {
    auto w = waiting_.find(f.id);
    if (w != waiting_.end()) w->second.escaped = true;
  }
  return true;
}

void Runtime::Received(FinishKey f, uint32_t from, Chain chain) {
  SpinGuard g(lock_);
  Local& l = local_[f];
  if (l.chain.empty()) l.chain = std::move(chain);
  ++l.recv[from];
  ++l.live;
  ++stats_.received;
}

void Runtime::Done(FinishKey f, std::exception_ptr error) {
  Resolve resolve;
  std::vector<uint8_t> message;
  uint32_t to = StatePlace(f);
  {
    SpinGuard g(lock_);
    auto it = local_.find(f);
    if (it == local_.end()) return;  // cannot happen: the activity counted itself
    Local& l = it->second;
    auto w = f.home == here().id ? waiting_.find(f.id) : waiting_.end();
    if (error) {
      if (w != waiting_.end()) {
        w->second.errors.push_back(error);  // kept as thrown
      } else {
        for (auto& e : Describe(error, here())) l.errors.push_back(std::move(e));
      }
    }
    if (--l.live > 0) return;
    Report report{std::move(l.sent), std::move(l.recv), std::move(l.errors), std::move(l.chain)};
    local_.erase(it);  // nothing of f left here: forget it
    if (to != here().id && w != waiting_.end() && !w->second.escaped) {
      // Local-counter optimisation: nothing of f ever left home.
      if (!w->second.resolved) {
        w->second.resolved = true;
        resolve.promises.push_back(std::move(w->second.done));
      }
      ++stats_.local_finishes;
    } else if (to == here().id) {
      ++stats_.reports_sent;
      ApplyReportLocked(here().id, f, std::move(report), &resolve);
    } else {
      ++stats_.reports_sent;
      OutArchive out(message);
      out(++sequence_[to], f, report);
    }
  }
  resolve.Run();
  if (!message.empty()) (void)SendTo(to, kReport, message);  // fails only if it died
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
  resolve.Run();
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
      std::vector<Unreported> counts;
      in(dead, counts);
      ApplyFlushedLocked(from, dead, counts, resolve);
    }
  } catch (const std::exception&) {
    ++stats_.malformed;
  }
}

Runtime::State* Runtime::StateLocked(FinishKey f, const Chain* chain) {
  auto it = state_.find(f);
  if (it != state_.end()) return &it->second;
  if (f.home == here().id) {
    auto w = waiting_.find(f.id);
    if (w == waiting_.end() || w->second.resolved) return nullptr;  // late: it ended
  }
  State& s = state_[f];
  if (chain != nullptr) s.chain = *chain;
  if (dead_.count(f.home) != 0) AdoptLocked(f, s);
  return &s;
}

void Runtime::AdoptLocked(FinishKey f, State& s) {
  if (mode_ != FinishMode::kPlace0 || s.adopter || s.finished) return;
  for (size_t i = 0; i < s.chain.size(); ++i) {
    FinishKey a = s.chain[i];
    if (dead_.count(a.home) != 0) continue;
    Chain rest(s.chain.begin() + ptrdiff_t(i) + 1, s.chain.end());
    State* adopter = StateLocked(a, &rest);
    if (adopter == nullptr) return;  // it ended: nothing of f can be left (see runtime.h)
    if (adopter->chain.empty()) adopter->chain = std::move(rest);
    s.adopter = a;
    adopter->adoptees.insert(f);
    ++stats_.adopted;
    return;
  }
}

void Runtime::ApplyReportLocked(uint32_t from, FinishKey f, Report report, Resolve* resolve) {
  if (StatePlace(f) != here().id) {
    ++stats_.malformed;
    return;
  }
  State* s = StateLocked(f, &report.chain);
  if (s == nullptr || s->finished) return;  // late: it ended (a place that died meanwhile)
  if (from == f.home) s->home_reported = true;
  Counts& c = s->total[from];
  for (auto& [q, n] : report.sent) c.sent[q] += n;
  for (auto& [q, n] : report.recv) c.recv[q] += n;
  for (auto& e : report.errors) {
    if (e.dead != 0 && !s->dead_counted.insert(e.place).second) continue;
    s->errors.push_back(std::move(e));
  }
  for (uint32_t d : dead_) NoteDeathLocked(f, *s, d);  // sent to a place that has died since
  CheckLocked(f, *s, resolve);
  SweepLocked();
}

std::vector<Unreported> Runtime::UnreportedFromLocked(uint32_t asker, uint32_t dead) {
  std::vector<Unreported> counts;
  for (auto& [f, l] : local_) {
    uint64_t n = StatePlace(f) == asker ? CountOf(l.recv, dead) : 0;
    if (n != 0) counts.push_back({f, n, l.chain});
  }
  return counts;
}

void Runtime::ApplyFlushedLocked(uint32_t from, uint32_t dead, const std::vector<Unreported>& counts,
                                 Resolve* resolve) {
  // Every report `from` sent before its answer is in: these sums are final.
  for (const Unreported& u : counts) {
    if (StatePlace(u.finish) != here().id) continue;
    State* s = StateLocked(u.finish, &u.chain);
    if (s == nullptr) continue;
    s->from_dead[dead][from] = CountOf(s->total[from].recv, dead) + u.count;
  }
  flush_pending_[dead].erase(from);
  CheckAllLocked(resolve);
}

void Runtime::CheckAllLocked(Resolve* resolve) {
  for (auto& [f, s] : state_) CheckLocked(f, s, resolve);
  SweepLocked();
}

void Runtime::SweepLocked() {
  std::erase_if(state_, [](const auto& entry) { return entry.second.finished; });
}

void Runtime::CheckLocked(FinishKey f, State& s, Resolve* resolve) {
  if (s.finished) return;
  if (f.home == here().id) {
    if (local_.count(f) != 0) return;  // the body or other activities of f still run here
  } else if (!s.home_reported && dead_.count(f.home) == 0) {
    return;  // the body still runs at its home
  }
  if (!s.adoptees.empty()) return;
  auto total = [&](uint32_t place, bool sent, uint32_t peer) -> uint64_t {
    auto it = s.total.find(place);
    if (it == s.total.end()) return 0;
    return CountOf(sent ? it->second.sent : it->second.recv, peer);
  };
  for (auto& [p, c] : s.total) {
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
    auto final = s.from_dead.find(d);
    if (final == s.from_dead.end()) continue;
    for (auto& [p, n] : final->second) {
      if (dead_.count(p) == 0 && total(p, false, d) != n) return;
    }
  }
  s.finished = true;
  FinishedLocked(f, s, resolve);
}

void Runtime::FinishedLocked(FinishKey f, State& s, Resolve* resolve) {
  if (s.adopter) {
    auto a = state_.find(*s.adopter);
    if (a == state_.end()) return;
    State& adopter = a->second;
    for (auto& e : s.errors) {
      if (e.dead != 0 && !adopter.dead_counted.insert(e.place).second) continue;
      adopter.errors.push_back(std::move(e));
    }
    adopter.adoptees.erase(f);
    CheckLocked(*s.adopter, adopter, resolve);
    return;
  }
  if (f.home == here().id) {
    auto w = waiting_.find(f.id);
    if (w == waiting_.end() || w->second.resolved) return;
    for (auto& e : s.errors) w->second.errors.push_back(Rebuild(e));
    w->second.resolved = true;
    resolve->promises.push_back(std::move(w->second.done));
    return;
  }
  if (dead_.count(f.home) != 0) return;
  std::vector<uint8_t> bytes;
  OutArchive out(bytes);
  out(f.id, s.errors);
  resolve->messages.emplace_back(f.home, std::move(bytes));
}

void Runtime::OnDone(NodeId from, const uint8_t* data, size_t length) {
  uint64_t id = 0;
  std::vector<ExceptionInfo> errors;
  Resolve resolve;
  {
    SpinGuard g(lock_);
    try {
      InArchive in(data, length);
      in(id, errors);
    } catch (const std::exception&) {
      ++stats_.malformed;
      return;
    }
    auto w = waiting_.find(id);
    if (from != StatePlace(FinishKey{here().id, id}) || w == waiting_.end() || w->second.resolved) {
      ++stats_.malformed;
      return;
    }
    for (auto& e : errors) w->second.errors.push_back(Rebuild(e));
    w->second.resolved = true;
    resolve.promises.push_back(std::move(w->second.done));
  }
  resolve.Run();
}

void Runtime::NoteDeathLocked(FinishKey f, State& s, uint32_t d) {
  if (s.finished || s.dead_counted.count(d) != 0) return;
  auto received = [&](uint32_t from) -> uint64_t {
    auto it = s.total.find(d);
    return it == s.total.end() ? 0 : CountOf(it->second.recv, from);
  };
  // The home's own sends, not reported yet (when the state is at home).
  auto mine = f.home == here().id ? local_.find(f) : local_.end();
  uint64_t unreported = mine == local_.end() ? 0 : CountOf(mine->second.sent, d);
  bool lost = unreported > received(f.home) && s.total.count(f.home) == 0;
  for (auto& [p, c] : s.total) {
    if (CountOf(c.sent, d) + (p == f.home ? unreported : 0) > received(p)) lost = true;
  }
  if (!lost) return;
  s.dead_counted.insert(d);
  s.errors.push_back({1, d, "fox::apgas::DeadPlaceException", "place " + std::to_string(d) + " is dead"});
}

void Runtime::Wait(FinishKey f) {
  Future<void> done;
  {
    SpinGuard g(lock_);
    done = std::move(waiting_[f.id].future);
  }
  done.Block();
  std::vector<std::exception_ptr> errors;
  {
    SpinGuard g(lock_);
    auto it = waiting_.find(f.id);
    errors = std::move(it->second.errors);
    waiting_.erase(it);
  }
  if (!errors.empty()) throw MultipleExceptions(std::move(errors));
}

void FinishBlock(Function<void()> body) {
  Activity* parent = Current();
  auto rt = Runtime::Get();
  FinishKey f = rt->NewFinish(parent != nullptr ? &parent->finish : nullptr);
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
