// The APGAS runtime of one place (runtime.h): messages, activities, `at`,
// and the job's life (joins, shutdown). The finish's counting is in
// finish.cc.
#include "runtime.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <typeinfo>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/net/frontend_link.h"
#include "fox/timer.h"

namespace fox::apgas {
namespace detail {
namespace {

std::string Demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  return out;
}

ebb::EbbRef<ebb::Messenger> Messenger() { return ebb::Messenger::Get(); }

}  // namespace

// A message to the runtime at `place`, large if it must be. Event context.
Result<void> SendTo(uint32_t place, HandlerId handler, const std::vector<uint8_t>& bytes) {
  return Messenger()->SendAny(place, ebb::kApgasRuntimeId, handler, bytes.data(), bytes.size());
}

namespace {}  // namespace

void RunClosure(const std::vector<uint8_t>& closure, std::vector<uint8_t>* result) {
  InArchive in(closure.data(), closure.size());
  uint64_t id = 0;
  in(id);
  Runner run = FindClosure(id);
  if (run == nullptr) throw std::runtime_error("apgas: a closure this place does not have (different sources?)");
  run(in, result);
}

std::vector<ExceptionInfo> Describe(std::exception_ptr e, Place where) {
  try {
    std::rethrow_exception(e);
  } catch (const DeadPlaceException& d) {
    return {{1, d.place().id, "fox::apgas::DeadPlaceException", d.what()}};
  } catch (const RemoteException& r) {
    return {{0, r.place().id, r.type(), r.what()}};
  } catch (const MultipleExceptions& m) {
    std::vector<ExceptionInfo> all;
    for (const auto& inner : m.exceptions()) {
      for (auto& i : Describe(inner, where)) all.push_back(std::move(i));
    }
    return all;
  } catch (const std::exception& x) {
    return {{0, where.id, Demangle(typeid(x).name()), x.what()}};
  } catch (...) {
    const std::type_info* t = abi::__cxa_current_exception_type();
    return {{0, where.id, t != nullptr ? Demangle(t->name()) : "unknown", "(not a std::exception)"}};
  }
}

std::exception_ptr Rebuild(const ExceptionInfo& info) {
  if (info.dead != 0) return std::make_exception_ptr(DeadPlaceException(Place{info.place}));
  return std::make_exception_ptr(RemoteException(Place{info.place}, info.type, info.what));
}

Activity* Current() { return static_cast<Activity*>(event::Local()); }

Runtime::Runtime() : core_(core::Current()) {
  JoinStealGroup();
  (void)ebb::Rpc::Get()->pending();  // `at` and joins need the Rpc Ebb here
  auto on_message = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    OnMessage(from, handler, data, length);
  };
  if (auto r = Messenger()->ListenAny(ebb::kApgasRuntimeId, on_message, core_); !r.ok()) {
    LOG_ERROR("apgas: cannot receive messages: %s", ErrorName(r.error()));
  }
  subscription_ = am::OnPeerState(
      [this](NodeId node, am::PeerState state) {
        if (state == am::PeerState::kDead) OnDeath(node);
      },
      core_);
  if (auto r = Messenger()->AddStatusSource(&Runtime::AddStatus, this); !r.ok()) {
    LOG_WARN("apgas: status reports will lack the runtime's counters: %s", ErrorName(r.error()));
  }
}

// This place's lines of a status report (Messenger::AddStatusSource): what
// `fox status` and the supervisor's metrics show of the job.
void Runtime::AddStatus(const void* context, std::string* out) {
  const Runtime* rt = static_cast<const Runtime*>(context);
  Stats s = rt->stats();
  size_t dead;
  {
    SpinGuard g(rt->lock_);
    dead = rt->dead_.size();
  }
  const struct {
    const char* name;
    uint64_t value;
  } rows[] = {{"finishes", s.finishes},
              {"spawned_local", s.spawned_local},
              {"spawned_remote", s.spawned_remote},
              {"received", s.received},
              {"done", s.done},
              {"reports_sent", s.reports_sent},
              {"reports_received", s.reports_received},
              {"local_finishes", s.local_finishes},
              {"adopted", s.adopted},
              {"malformed", s.malformed},
              {"dead_places", dead}};
  char line[64];
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "apgas.%s %llu\n", r.name, (unsigned long long)r.value);
    *out += line;
  }
}

Runtime::~Runtime() {
  for (Held* held = TakeHeld(false); held != nullptr;) {  // never opened: dropped
    Held* next = held->next;
    delete held;
    held = next;
  }
  Messenger()->RemoveStatusSource(&Runtime::AddStatus, this);
  am::StopPeerState(subscription_);
  Messenger()->StopListeningAny(ebb::kApgasRuntimeId);
}

void Runtime::SetPlaces(std::vector<Place> places) {
  SpinGuard g(lock_);
  places_ = std::move(places);
}

std::vector<Place> Runtime::places() const {
  SpinGuard g(lock_);
  return places_;
}

bool Runtime::IsDead(uint32_t place) const {
  SpinGuard g(lock_);
  return dead_.count(place) != 0;
}

Runtime::Stats Runtime::stats() const {
  SpinGuard g(lock_);
  return stats_;
}

// Activities run on the application cores natively. Hosted, every core takes
// events: activities run on all but core 0, the transport's (am::Config::core:
// its socket, heartbeats and retransmissions are events there), when there are
// others, so that a long activity does not hold the transport back. (Four
// hosted places of 2 cores each counting on a 2-CPU host, with activities on
// core 0 too: every run declared a live place dead.)
static int FirstActivityCore() {
  if (core::Online() > core::KernelCores()) return core::KernelCores();
  return core::Online() > 1 ? 1 : 0;
}

void Runtime::JoinStealGroup() {
  for (int c = FirstActivityCore(); c < core::Online(); ++c) event::SetStealGroup(c, kStealGroup);
}

int Runtime::NextCore() {
  int first = FirstActivityCore();
  int cores = core::Online() - first;
  return first + int(next_core_.fetch_add(1, std::memory_order_relaxed) % uint32_t(cores));
}

// Activities are shared work: spread round-robin at spawn, and an idle
// activity core takes them from a busy one (work stealing).
void Runtime::Launch(FinishKey f, Function<void()> body) {
  if (!open_.load(std::memory_order_acquire)) {
    auto* held = new Held{f, std::move(body), nullptr};  // allocated before the lock
    {
      SpinGuard g(lock_);
      if (!open_.load(std::memory_order_relaxed)) {
        *held_tail_ = held;
        held_tail_ = &held->next;
        return;
      }
    }
    body = std::move(held->body);  // opened meanwhile
    delete held;
  }
  Spawn(f, std::move(body));
}

// The held activities, oldest first, the list emptied; `open`: from now on
// none is held.
Runtime::Held* Runtime::TakeHeld(bool open) {
  SpinGuard g(lock_);
  if (open) open_.store(true, std::memory_order_release);
  Held* list = held_;
  held_ = nullptr;
  held_tail_ = &held_;
  return list;
}

void Runtime::Open() {
  for (Held* held = TakeHeld(true); held != nullptr;) {
    Held* next = held->next;
    Spawn(held->f, std::move(held->body));
    delete held;
    held = next;
  }
}

void Runtime::Spawn(FinishKey f, Function<void()> body) {
  event::SpawnShared(NextCore(), [this, f, body = std::move(body)]() mutable {
    Activity a{f};
    event::Local() = &a;
    std::exception_ptr error;
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
    event::Local() = nullptr;
    Done(f, error);
  });
}

// ---- messages ----

void Runtime::OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  switch (Raw(handler)) {
    case kSpawn: return OnSpawn(from, data, length);
    case kAt: return OnAt(from, data, length);
    case kReport:
    case kFlushed:
    case kAdoptions:
    case kAdopteeDone: return OnOrdered(from, handler, data, length);
    case kRelease: {
      uint64_t id = 0;
      SpinGuard g(lock_);
      if (length != 8) {
        ++stats_.malformed;
        return;
      }
      std::memcpy(&id, data, 8);
      rows_.erase(FinishKey{from, id});
      return;
    }
    case kJoin: return OnJoin(from, data, length);
    case kReady: return OnReady(from, data, length);
    case kPlaces: return OnPlaces(from, data, length);
    case kFlush: return OnFlush(from, data, length);
    case kDone: return OnDone(from, data, length);
    case kShutdown: {
      auto request = ebb::Rpc::ParseRequest(data, length);
      if (!request) return;
      (void)ebb::Rpc::Reply(from, request->id, nullptr, 0);
      if (!over_set_.exchange(true)) over_.SetValue(true);
      return;
    }
    default: {
      SpinGuard g(lock_);
      ++stats_.malformed;
    }
  }
}

void Runtime::OnSpawn(NodeId from, const uint8_t* data, size_t length) {
  FinishKey f;
  Chain chain;
  size_t header = 0;
  try {
    InArchive in(data, length);
    f = ReadHeader(in, &chain);
    header = length - in.remaining();
  } catch (const std::exception&) {
    SpinGuard g(lock_);
    ++stats_.malformed;
    return;
  }
  Received(f, from, std::move(chain));
  std::vector<uint8_t> closure(data + header, data + length);
  Launch(f, [closure = std::move(closure)] { RunClosure(closure, nullptr); });
}

void Runtime::OnAt(NodeId from, const uint8_t* data, size_t length) {
  auto request = ebb::Rpc::ParseRequest(data, length);
  if (!request) return;
  FinishKey f;
  Chain chain;
  size_t header = 0;
  try {
    InArchive in(request->body, request->length);
    f = ReadHeader(in, &chain);
    header = request->length - in.remaining();
  } catch (const std::exception&) {
    (void)ebb::Rpc::Fail(from, request->id, Error::kCorrupt);
    return;
  }
  Received(f, from, std::move(chain));
  std::vector<uint8_t> closure(request->body + header, request->body + request->length);
  uint64_t rpc = request->id;
  // The body's exception goes back to the caller, not to the finish.
  Launch(f, [from, rpc, closure = std::move(closure)] {
    std::vector<uint8_t> reply{0};
    try {
      RunClosure(closure, &reply);
    } catch (...) {
      reply.assign(1, 1);
      OutArchive out(reply);
      out(Describe(std::current_exception(), here()));
    }
    (void)ebb::Rpc::Reply(from, rpc, reply.data(), reply.size());
  });
}

// ---- the job ----

void Runtime::OnJoin(NodeId from, const uint8_t* data, size_t length) {
  auto request = ebb::Rpc::ParseRequest(data, length);
  if (!request) return;
  uint8_t mode = 0;
  std::vector<uint64_t> theirs;
  try {
    InArchive in(request->body, request->length);
    in(mode, theirs);
  } catch (const std::exception&) {
    (void)ebb::Rpc::Fail(from, request->id, Error::kCorrupt);
    return;
  }
  std::vector<uint64_t> mine = ClosureIds();
  bool same_closures = std::includes(theirs.begin(), theirs.end(), mine.begin(), mine.end());
  uint8_t welcome = same_closures && mode == uint8_t(mode_) ? 1 : 0;
  bool everyone = false;
  if (all_joined_set_.load()) {  // the job runs: a place it asked for (AddPlaces)
    std::vector<uint8_t> reply{uint8_t(welcome ? 2 : 0)};
    if (welcome) {
      std::vector<uint32_t> ids, dead;
      {
        SpinGuard g(lock_);
        for (Place p : places_) ids.push_back(p.id);
        dead.assign(dead_.begin(), dead_.end());
      }
      ids.push_back(from);
      std::sort(ids.begin(), ids.end());
      std::vector<uint32_t> members;
      for (NodeId n : ebb::Dht::Get()->members()) members.push_back(n);
      OutArchive out(reply);
      out(ids, dead, members);
    } else {
      std::printf("apgas: place %u refused: its closures or finish mode differ from place 0's\n", from);
    }
    (void)ebb::Rpc::Reply(from, request->id, reply.data(), reply.size());
    return;
  }
  {
    SpinGuard g(lock_);
    if (welcome) {
      joined_.insert(from);
    } else if (refusal_.empty() && !same_closures) {
      refusal_ = "place " + std::to_string(from) + " lacks closures place 0 has (built from other sources?)";
    } else if (refusal_.empty()) {
      refusal_ = "place " + std::to_string(from) + " runs another finish mode than place 0's " + FinishModeName(mode_) +
                 " (fox.finish must be the same at every place)";
    }
    size_t expected = places_.size() - 1;
    everyone = !refusal_.empty() || joined_.size() >= expected;
  }
  (void)ebb::Rpc::Reply(from, request->id, &welcome, 1);
  if (everyone && !all_joined_set_.exchange(true)) all_joined_.SetValue();
}

bool Runtime::AwaitJoins(uint64_t timeout_ms) {
  {
    SpinGuard g(lock_);
    if (places_.size() <= 1 && !all_joined_set_.exchange(true)) all_joined_.SetValue();
  }
  auto deadline = timer::Start(timeout_ms * 1'000'000, [this] {
    if (!all_joined_set_.exchange(true)) all_joined_.SetValue();
  });
  all_joined_future_.Block();
  timer::Cancel(deadline);
  SpinGuard g(lock_);
  if (!refusal_.empty()) {
    std::printf("apgas: job refused: %s\n", refusal_.c_str());
    return false;
  }
  if (joined_.size() + 1 < places_.size()) {
    std::printf("apgas: %zu of %zu places joined in %llu ms\n", joined_.size() + 1, places_.size(),
                (unsigned long long)timeout_ms);
    return false;
  }
  return true;
}

Runtime::Joined Runtime::Join() {
  Joined joined;
  std::vector<uint8_t> request;
  OutArchive out(request);
  out(uint8_t(mode_), ClosureIds());
  auto r = ebb::Rpc::Get()->Call(0, ebb::kApgasRuntimeId, kJoin, request.data(), request.size(), 120'000).Block();
  if (!r.ok()) {
    std::printf("apgas: place %u could not join place 0: %s\n", here().id, ErrorName(r.error()));
    return joined;
  }
  if (r->size() == 1 && (*r)[0] == 1) {
    joined.ok = true;
    return joined;
  }
  if (r->size() > 1 && (*r)[0] == 2) {
    try {
      InArchive in(r->data() + 1, r->size() - 1);
      in(joined.places, joined.dead, joined.dht_members);
      joined.ok = joined.late = true;
    } catch (const std::exception&) {
      std::printf("apgas: place %u: a malformed welcome from place 0\n", here().id);
    }
    return joined;
  }
  std::printf(
      "apgas: place %u refused by place 0: its closures or its finish mode (%s) differ (built from other "
      "sources? fox.finish?)\n",
      here().id, FinishModeName(mode_));
  return joined;
}

void Runtime::MarkDead(const std::vector<uint32_t>& dead) {
  SpinGuard g(lock_);
  for (uint32_t d : dead) {
    dead_.insert(d);
    gone_.insert(d);
  }
}

bool Runtime::Ready() {
  auto r = ebb::Rpc::Get()->Call(0, ebb::kApgasRuntimeId, kReady, nullptr, 0, 120'000).Block();
  return r.ok();
}

void Runtime::OnReady(NodeId from, const uint8_t* data, size_t length) {
  auto request = ebb::Rpc::ParseRequest(data, length);
  if (!request) return;
  std::vector<uint32_t> ids;
  std::vector<uint32_t> tell;
  {
    SpinGuard g(lock_);
    if (std::find(places_.begin(), places_.end(), Place{from}) == places_.end()) places_.push_back(Place{from});
    std::sort(places_.begin(), places_.end());
    for (Place p : places_) {
      ids.push_back(p.id);
      if (p.id != 0 && p.id != from && dead_.count(p.id) == 0) tell.push_back(p.id);
    }
  }
  std::vector<uint8_t> body;
  OutArchive out(body);
  out(ids);
  std::vector<Future<Result<ebb::Rpc::Bytes>>> calls;
  for (uint32_t p : tell)
    calls.push_back(ebb::Rpc::Get()->Call(p, ebb::kApgasRuntimeId, kPlaces, body.data(), body.size(), 10'000));
  for (auto& c : calls) (void)c.Block();  // a place that died meanwhile: its death is told anyway
  std::printf("apgas: place %u joined the job: %zu places\n", from, ids.size());
  (void)ebb::Rpc::Reply(from, request->id, nullptr, 0);
}

void Runtime::OnPlaces(NodeId from, const uint8_t* data, size_t length) {
  auto request = ebb::Rpc::ParseRequest(data, length);
  if (!request || from != 0) return;
  std::vector<uint32_t> ids;
  try {
    InArchive in(request->body, request->length);
    in(ids);
  } catch (const std::exception&) {
    (void)ebb::Rpc::Fail(from, request->id, Error::kCorrupt);
    return;
  }
  {
    SpinGuard g(lock_);
    places_.clear();
    for (uint32_t id : ids) places_.push_back(Place{id});
  }
  (void)ebb::Rpc::Reply(from, request->id, nullptr, 0);
}

std::vector<Place> Runtime::AddPlaces(size_t n, uint64_t timeout_ms) {
  if (n == 0) return {};
  std::vector<Place> before = places();
  if (auto r = frontend::RequestNodes(uint32_t(n)); !r.ok()) {
    throw std::runtime_error(std::string("apgas::addPlaces: the frontend cannot add places here (") +
                             ErrorName(r.error()) + "): run the job with fox run");
  }
  uint64_t deadline = clock::NowNs() + timeout_ms * 1'000'000;
  std::vector<Place> added;
  for (;;) {
    added.clear();
    for (Place p : places()) {
      if (std::find(before.begin(), before.end(), p) == before.end()) added.push_back(p);
    }
    if (added.size() >= n || clock::NowNs() >= deadline) return added;
    timer::Sleep(20'000'000);
  }
}

bool Runtime::Serve() { return over_.GetFuture().Block(); }

void Runtime::Shutdown() {
  std::vector<Future<Result<ebb::Rpc::Bytes>>> replies;
  for (Place p : places()) {
    if (p == here() || IsDead(p.id)) continue;
    replies.push_back(ebb::Rpc::Get()->Call(p.id, ebb::kApgasRuntimeId, kShutdown, nullptr, 0, 10'000));
  }
  for (auto& r : replies) (void)r.Block();
}

void Runtime::OnDeath(uint32_t place) {
  std::vector<uint32_t> ask;
  Resolve resolve;
  {
    SpinGuard g(lock_);
    if (!dead_.insert(place).second) return;
    gone_.insert(place);
    if (mode_ == FinishMode::kOptimistic && here().id != 0 && adoptions_early_.count(place) == 0) {
      adoptions_pending_.insert(place);
    }
    // The places that hold finish states ask for flushes: every place
    // (none, optimistic), place 0 (place0).
    if (mode_ != FinishMode::kPlace0 || here().id == 0) {
      for (Place p : places_) {
        if (dead_.count(p.id) == 0) ask.push_back(p.id);
      }
      flush_pending_[place] = std::set<uint32_t>(ask.begin(), ask.end());
    }
    for (auto& [d, waiting] : flush_pending_) waiting.erase(place);  // it answers nothing any more
    for (auto& [f, s] : state_) {
      NoteDeathLocked(f, s, place);
      if (f.home == place && mode_ == FinishMode::kPlace0) AdoptLocked(f, s, nullptr);
    }
    FlushesDoneLocked(&resolve);
    CheckAllLocked(&resolve);
  }
  resolve.Run();
  if (place == 0 && here().id != 0 && !over_set_.exchange(true)) over_.SetValue(false);
  // Every live place (this one too, through its own mailbox, so that what
  // the dead place sent here before is counted first) answers with its
  // unreported counts, in its report sequence (runtime.h).
  std::vector<uint8_t> request(4);
  std::memcpy(request.data(), &place, 4);
  for (uint32_t q : ask) (void)SendTo(q, kFlush, request);
}

void Runtime::AddDeathHook(Function<void(uint32_t)> hook) {
  auto h = std::make_shared<Function<void(uint32_t)>>(std::move(hook));
  SpinGuard g(lock_);
  death_hooks_.push_back(std::move(h));
}

void Runtime::RunDeathHooks(uint32_t dead) {
  if (dead == here().id) return;
  std::vector<std::shared_ptr<Function<void(uint32_t)>>> hooks;
  bool first;
  {
    SpinGuard g(lock_);
    first = hooks_done_.try_emplace(dead, false).second;
    if (first) hooks = death_hooks_;
  }
  if (first) {
    for (auto& h : hooks) (*h)(dead);
    SpinGuard g(lock_);
    hooks_done_[dead] = true;
    return;
  }
  for (;;) {  // another flush for it runs them: wait (this event only)
    {
      SpinGuard g(lock_);
      if (hooks_done_[dead]) return;
    }
    timer::Sleep(1'000'000);
  }
}

void Runtime::OnFlush(NodeId from, const uint8_t* data, size_t length) {
  if (length != 4) return;
  uint32_t dead;
  std::memcpy(&dead, data, 4);
  if (dead != here().id) am::DeclareDead(dead);  // nothing more from it
  RunDeathHooks(dead);
  Resolve resolve;
  std::vector<uint8_t> answer;
  {
    SpinGuard g(lock_);
    gone_.insert(dead);  // from now on what is homed there reports to place 0 (optimistic)
    auto counts = UnreportedFromLocked(from, dead);
    std::vector<Row> rows;
    if (mode_ == FinishMode::kOptimistic && from == 0) rows = RowsForLocked(dead);
    if (from == here().id) {
      for (Row& row : rows) ApplyRowLocked(from, std::move(row));
      ApplyFlushedLocked(from, dead, counts, &resolve);
    } else {
      OutArchive out(answer);
      out(++sequence_[from], dead, counts, rows);
    }
  }
  resolve.Run();
  if (!answer.empty()) (void)SendTo(from, kFlushed, answer);
}

// ---- the API's entry points ----

void SpawnLocal(Function<void()> body) {
  Activity* a = Current();
  if (a == nullptr) throw std::logic_error("apgas::async outside an activity");
  auto rt = Runtime::Get();
  rt->Spawned(a->finish);
  rt->Launch(a->finish, std::move(body));
}

void SpawnRemote(Place place, std::vector<uint8_t> closure) {
  Activity* a = Current();
  if (a == nullptr) throw std::logic_error("apgas::asyncAt outside an activity");
  if (place == here()) {
    Runtime::Get()->Spawned(a->finish);
    Runtime::Get()->Launch(a->finish, [closure = std::move(closure)] { RunClosure(closure, nullptr); });
    return;
  }
  if (!Runtime::Get()->Sent(a->finish, place)) return;  // dead: the finish has its DeadPlaceException
  std::vector<uint8_t> message = Runtime::Get()->Header(a->finish);
  message.insert(message.end(), closure.begin(), closure.end());
  if (!SendTo(place.id, kSpawn, message).ok()) {
    // It died meanwhile: its death makes the count match and names it.
  }
}

std::vector<uint8_t> AtRemote(Place place, std::vector<uint8_t> closure) {
  Activity* a = Current();
  if (a == nullptr) throw std::logic_error("apgas::at outside an activity");
  FinishKey f = a->finish;
  if (!Runtime::Get()->Sent(f, place, false)) throw DeadPlaceException(place);
  std::vector<uint8_t> message = Runtime::Get()->Header(f);
  message.insert(message.end(), closure.begin(), closure.end());
  auto r = ebb::Rpc::Get()->Call(place.id, ebb::kApgasRuntimeId, kAt, message.data(), message.size(), 0).Block();
  event::Local() = a;  // (restored by the loop too: this event's own)
  if (!r.ok()) {
    if (r.error() == Error::kPeerDead) throw DeadPlaceException(place);
    throw std::runtime_error(std::string("apgas::at: ") + ErrorName(r.error()));
  }
  if (r->empty()) throw std::runtime_error("apgas::at: empty reply");
  if ((*r)[0] == 0) return std::vector<uint8_t>(r->begin() + 1, r->end());
  std::vector<ExceptionInfo> errors;
  try {
    InArchive in(r->data() + 1, r->size() - 1);
    in(errors);
  } catch (const std::exception&) {
    throw std::runtime_error("apgas::at: malformed exception from place " + std::to_string(place.id));
  }
  if (errors.size() == 1) std::rethrow_exception(Rebuild(errors[0]));
  std::vector<std::exception_ptr> all;
  for (auto& e : errors) all.push_back(Rebuild(e));
  throw MultipleExceptions(std::move(all));
}

}  // namespace detail

Place here() { return Place{am::Self()}; }

std::vector<Place> places() { return detail::Runtime::Get()->places(); }

bool isDead(Place place) { return detail::Runtime::Get()->IsDead(place.id); }

int activityCores() { return core::Online() - detail::FirstActivityCore(); }

}  // namespace fox::apgas
