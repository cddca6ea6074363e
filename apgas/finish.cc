// Finish by counting (runtime.h explains the protocol and why it is safe).
#include <algorithm>
#include <cstring>

#include "fox/ebb/messenger.h"
#include "fox/event.h"
#include "fox/net/am.h"
#include "runtime.h"

namespace fox::apgas::detail {
namespace {

// A finish's exceptions as it throws them: nested MultipleExceptions (an
// inner finish's, rethrown by an activity) flattened, a place's death once.
void Flatten(const std::exception_ptr& e, std::vector<std::exception_ptr>* out, std::set<uint32_t>* dead) {
  try {
    std::rethrow_exception(e);
  } catch (const MultipleExceptions& m) {
    for (const auto& inner : m.exceptions()) Flatten(inner, out, dead);
  } catch (const DeadPlaceException& d) {
    if (dead->insert(d.place().id).second) out->push_back(e);
  } catch (...) {
    out->push_back(e);
  }
}

// A place's death, on its way to a finish.
ExceptionInfo DeadInfo(uint32_t place) {
  return {1, place, "fox::apgas::DeadPlaceException", "place " + std::to_string(place) + " is dead"};
}

// Adds one place's counts (a report, or a row) to `to`.
void AddCounts(std::map<uint32_t, uint64_t>* sent, std::map<uint32_t, uint64_t>* recv,
               const std::map<uint32_t, uint64_t>& more_sent, const std::map<uint32_t, uint64_t>& more_recv) {
  for (auto& [q, n] : more_sent) (*sent)[q] += n;
  for (auto& [q, n] : more_recv) (*recv)[q] += n;
}

uint64_t CountOf(const std::map<uint32_t, uint64_t>& m, uint32_t key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

const char* FinishModeName(FinishMode mode) {
  switch (mode) {
    case FinishMode::kPlace0: return "place0";
    case FinishMode::kOptimistic: return "optimistic";
    default: return "none";
  }
}

bool ParseFinishMode(const char* text, FinishMode* mode) {
  if (std::strcmp(text, "none") == 0) {
    *mode = FinishMode::kNone;
  } else if (std::strcmp(text, "place0") == 0) {
    *mode = FinishMode::kPlace0;
  } else if (std::strcmp(text, "optimistic") == 0) {
    *mode = FinishMode::kOptimistic;
  } else {
    return false;
  }
  return true;
}

void Runtime::Resolve::Run() {
  for (auto& p : promises) p.SetValue();
  for (auto& m : messages) (void)SendTo(m.to, m.handler, m.bytes);  // fails only if it died
}

FinishKey Runtime::NewFinish(const FinishKey* parent) {
  SpinGuard g(lock_);
  FinishKey f{here().id, next_finish_++};
  ++stats_.finishes;
  Waiter& w = waiting_[f.id];
  w.future = w.done.GetFuture();
  Local& l = local_[f];
  l.live = 1;  // the body
  if (mode_ != FinishMode::kNone && parent != nullptr) {
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
  if (mode_ != FinishMode::kNone) {
    SpinGuard g(lock_);
    auto l = local_.find(f);
    out(l == local_.end() ? Chain{} : l->second.chain);
  }
  return bytes;
}

FinishKey Runtime::ReadHeader(InArchive& in, Chain* chain) const {
  FinishKey f;
  in(f);
  if (mode_ != FinishMode::kNone) in(*chain);
  return f;
}

void Runtime::AddErrors(State& s, std::vector<ExceptionInfo> errors) {
  for (auto& e : errors) {
    if (e.dead != 0 && !s.dead_counted.insert(e.place).second) continue;  // a place's death once
    s.errors.push_back(std::move(e));
  }
}

void Runtime::Spawned(FinishKey f) {
  SpinGuard g(lock_);
  ++local_[f].live;
  ++stats_.spawned_local;
}

void Runtime::AddDeadLocked(FinishKey f, Local& l, uint32_t dead) {
  if (StatePlaceLocked(f) == here().id) {
    if (State* s = StateLocked(f, &l.chain)) AddErrors(*s, {DeadInfo(dead)});
    return;
  }
  l.errors.push_back(DeadInfo(dead));
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
  uint32_t to;
  {
    SpinGuard g(lock_);
    to = StatePlaceLocked(f);
    auto it = local_.find(f);
    if (it == local_.end()) return;  // cannot happen: the activity counted itself
    ++stats_.done;
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
      if (mode_ == FinishMode::kOptimistic && to == f.home && f.home != 0) {  // this place's row
        Row& row = rows_[f];
        row.finish = f;
        AddCounts(&row.sent, &row.recv, report.sent, report.recv);
        row.errors.insert(row.errors.end(), report.errors.begin(), report.errors.end());
        if (row.chain.empty()) row.chain = report.chain;
      }
      OutArchive out(message);
      out(++sequence_[to], f, report);
    }
  }
  resolve.Run();
  if (!message.empty()) (void)SendTo(to, kReport, message);  // fails only if it died
}

void Runtime::OnOrdered(uint32_t from, HandlerId handler, const uint8_t* data, size_t length) {
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

void Runtime::ApplyLocked(uint32_t from, HandlerId handler, const uint8_t* data, size_t length, Resolve* resolve) {
  try {
    InArchive in(data, length);
    uint64_t seq;
    in(seq);
    if (handler == kReport) {
      FinishKey f;
      Report report;
      in(f, report);
      ApplyReportLocked(from, f, std::move(report), resolve);
    } else if (handler == kFlushed) {
      uint32_t dead;
      std::vector<Unreported> counts;
      std::vector<Row> rows;
      in(dead, counts, rows);
      if (!rows.empty() && (mode_ != FinishMode::kOptimistic || here().id != 0)) throw std::runtime_error("rows");
      for (Row& row : rows) ApplyRowLocked(from, std::move(row));
      ApplyFlushedLocked(from, dead, counts, resolve);
    } else if (handler == kAdoptions) {
      uint32_t dead;
      std::vector<std::pair<FinishKey, FinishKey>> pairs;
      in(dead, pairs);
      if (from != 0 || mode_ != FinishMode::kOptimistic) throw std::runtime_error("adoptions");
      ApplyAdoptionsLocked(dead, pairs, resolve);
    } else if (handler == kAdopteeDone) {
      FinishKey adopter, f;
      std::vector<ExceptionInfo> errors;
      in(adopter, f, errors);
      if (from != 0 || mode_ != FinishMode::kOptimistic) throw std::runtime_error("adoptee");
      ApplyAdopteeDoneLocked(adopter, f, std::move(errors), resolve);
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
  if (mode_ == FinishMode::kPlace0 && dead_.count(f.home) != 0) AdoptLocked(f, s, nullptr);
  return &s;
}

void Runtime::AdoptLocked(FinishKey f, State& s, Adoptions* remote) {
  if (mode_ == FinishMode::kNone || s.adopter || s.finished) return;
  for (size_t i = 0; i < s.chain.size(); ++i) {
    FinishKey a = s.chain[i];
    if (dead_.count(a.home) != 0) continue;
    Chain rest(s.chain.begin() + ptrdiff_t(i) + 1, s.chain.end());
    if (StatePlaceLocked(a) != here().id) {  // its home keeps its state (optimistic): tell it
      if (remote == nullptr) return;
      s.adopter = a;
      (*remote)[a.home].emplace_back(a, f);
      ++stats_.adopted;
      return;
    }
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
  // (Place 0 takes reports of any finish in mode optimistic: the reporter
  // may know its home dead before place 0 does.)
  bool fallback = mode_ == FinishMode::kOptimistic && here().id == 0;
  if (StatePlaceLocked(f) != here().id && f.home != here().id && !fallback) {
    ++stats_.malformed;
    return;
  }
  State* s = StateLocked(f, &report.chain);
  if (s == nullptr || s->finished) return;  // late: it ended (a place that died meanwhile)
  if (from == f.home) s->home_reported = true;
  Counts& c = s->total[from];
  AddCounts(&c.sent, &c.recv, report.sent, report.recv);
  AddErrors(*s, std::move(report.errors));
  for (uint32_t d : dead_) NoteDeathLocked(f, *s, d);  // sent to a place that has died since
  CheckLocked(f, *s, resolve);
  SweepLocked();
}

std::vector<Unreported> Runtime::UnreportedFromLocked(uint32_t asker, uint32_t dead) {
  std::vector<Unreported> counts;
  for (auto& [f, l] : local_) {
    uint64_t n = StatePlaceLocked(f) == asker ? CountOf(l.recv, dead) : 0;
    if (n != 0) counts.push_back({f, n, l.chain});
  }
  return counts;
}

void Runtime::ApplyFlushedLocked(uint32_t from, uint32_t dead, const std::vector<Unreported>& counts,
                                 Resolve* resolve) {
  // Every report `from` sent before its answer is in: these sums are final.
  for (const Unreported& u : counts) {
    if (StatePlaceLocked(u.finish) != here().id) continue;
    State* s = StateLocked(u.finish, &u.chain);
    if (s == nullptr) continue;
    s->from_dead[dead][from] = CountOf(s->total[from].recv, dead) + u.count;
  }
  flush_pending_[dead].erase(from);
  FlushesDoneLocked(resolve);
  CheckAllLocked(resolve);
}

void Runtime::FlushesDoneLocked(Resolve* resolve) {
  if (mode_ != FinishMode::kOptimistic || here().id != 0) return;
  std::vector<uint32_t> done;
  for (auto& [d, pending] : flush_pending_) {
    if (pending.empty() && adoptions_done_.insert(d).second) done.push_back(d);
  }
  for (uint32_t d : done) AdoptionsLocked(d, resolve);
}

std::vector<Row> Runtime::RowsForLocked(uint32_t dead) {
  std::vector<Row> rows;
  std::set<FinishKey> homed;
  for (auto& [f, row] : rows_) {
    if (f.home == dead) homed.insert(f);
  }
  for (auto& [f, l] : local_) {
    if (f.home == dead) homed.insert(f);
  }
  for (FinishKey f : homed) {
    Row row;
    auto r = rows_.find(f);
    if (r != rows_.end()) {
      row = std::move(r->second);
      rows_.erase(r);
    }
    row.finish = f;
    auto l = local_.find(f);
    if (l != local_.end()) {
      for (uint32_t d : gone_) {
        uint64_t n = CountOf(l->second.recv, d);
        if (n != 0) row.unreported[d] = n;
      }
      if (row.chain.empty()) row.chain = l->second.chain;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void Runtime::ApplyRowLocked(uint32_t from, Row row) {
  State* s = StateLocked(row.finish, &row.chain);
  if (s == nullptr || s->finished) return;
  Counts& c = s->total[from];
  AddCounts(&c.sent, &c.recv, row.sent, row.recv);
  AddErrors(*s, std::move(row.errors));
  // Received from places `from` holds dead: final.
  for (auto& [d, n] : row.unreported) s->from_dead[d][from] = CountOf(c.recv, d) + n;
}

void Runtime::AdoptionsLocked(uint32_t dead, Resolve* resolve) {
  // Adopters that died: what they adopted waits for them here now.
  std::vector<std::pair<FinishKey, FinishKey>> relink;  // (adopter, adoptee)
  for (auto& [g, s] : state_) {
    if (s.adopter && s.adopter->home == dead && !s.finished) relink.emplace_back(*s.adopter, g);
  }
  for (auto& [a, g] : relink) {
    const Chain& chain = state_[g].chain;
    auto at = std::find(chain.begin(), chain.end(), a);
    Chain rest(at == chain.end() ? chain.end() : at + 1, chain.end());
    if (State* adopter = StateLocked(a, &rest)) adopter->adoptees.insert(g);
  }
  Adoptions remote;
  for (auto& [f, s] : state_) {
    if (f.home == dead) {
      for (uint32_t d : dead_) NoteDeathLocked(f, s, d);
      AdoptLocked(f, s, &remote);
    }
  }
  for (Place p : places_) {
    if (p.id == here().id || dead_.count(p.id) != 0) continue;
    std::vector<uint8_t> bytes;
    OutArchive out(bytes);
    out(++sequence_[p.id], dead, remote[p.id]);
    resolve->messages.push_back({p.id, kAdoptions, std::move(bytes)});
  }
}

void Runtime::ApplyAdoptionsLocked(uint32_t dead, const std::vector<std::pair<FinishKey, FinishKey>>& pairs,
                                   Resolve* resolve) {
  for (auto& [a, f] : pairs) {
    if (a.home != here().id) continue;
    if (State* s = StateLocked(a, nullptr)) s->adoptees.insert(f);
  }
  if (adoptions_pending_.erase(dead) == 0) adoptions_early_.insert(dead);
  CheckAllLocked(resolve);
}

void Runtime::ApplyAdopteeDoneLocked(FinishKey adopter, FinishKey f, std::vector<ExceptionInfo> errors,
                                     Resolve* resolve) {
  auto it = state_.find(adopter);
  if (it == state_.end() || it->second.finished) return;
  State& a = it->second;
  AddErrors(a, std::move(errors));
  a.adoptees.erase(f);
  CheckLocked(adopter, a, resolve);
  SweepLocked();
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
  if (!s.adoptees.empty() || !adoptions_pending_.empty()) return;
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
  if (s.adopter && StatePlaceLocked(*s.adopter) != here().id) {  // at its home (optimistic)
    if (dead_.count(s.adopter->home) != 0) return;               // it will be rebuilt here, without f
    std::vector<uint8_t> bytes;
    OutArchive out(bytes);
    out(++sequence_[s.adopter->home], *s.adopter, f, s.errors);
    resolve->messages.push_back({s.adopter->home, kAdopteeDone, std::move(bytes)});
    return;
  }
  if (s.adopter) {
    auto a = state_.find(*s.adopter);
    if (a == state_.end()) return;
    State& adopter = a->second;
    AddErrors(adopter, std::move(s.errors));
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
    if (mode_ == FinishMode::kOptimistic && f.home != 0) {  // the reporters forget their rows
      std::vector<uint8_t> id(8);
      std::memcpy(id.data(), &f.id, 8);
      for (auto& [p, c] : s.total) {
        if (p != here().id && dead_.count(p) == 0) resolve->messages.push_back({p, kRelease, id});
      }
    }
    return;
  }
  if (dead_.count(f.home) != 0 || mode_ != FinishMode::kPlace0) return;
  std::vector<uint8_t> bytes;
  OutArchive out(bytes);
  out(f.id, s.errors);
  resolve->messages.push_back({f.home, kDone, std::move(bytes)});
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
    if (mode_ != FinishMode::kPlace0 || from != 0 || w == waiting_.end() || w->second.resolved) {
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
  AddErrors(s, {DeadInfo(d)});
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
  if (errors.empty()) return;
  std::vector<std::exception_ptr> flat;
  std::set<uint32_t> dead;
  for (const auto& e : errors) Flatten(e, &flat, &dead);
  throw MultipleExceptions(std::move(flat));
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
