// Team (team.h): an allgather at the lowest live member, by a shared Ebb at
// kTeamId on every place.
//
// Messages: kContribute (member -> gatherer): team id, op number, the
// members, this member's index, its bytes; kResult (gatherer -> members):
// team id, op number, one optional byte string per member; kKnown (member ->
// next gatherer): an answer this member was given by a gatherer that died
// since. The gatherer answers once every member has contributed or died; it
// keeps the answers of the team's last two operations, so that a member whose
// first gatherer died and who asks again gets the same.
//
// A gatherer that dies while it sends an answer may have reached only some
// members. Those it reached have moved on (at most one operation: the next
// one needs every live member's contribution) and will not contribute to
// that operation again, so the next gatherer could neither complete it nor
// answer it alike. Every member therefore keeps the last answer it was given
// per team (kKeptTeams teams) and, when the place that gave it dies, hands
// it to the next live member (kKnown), which answers with it whoever asks
// for that operation: every survivor sees the same set.
#include "fox/apgas/team.h"

#include <algorithm>
#include <map>

#include "fox/ebb/messenger.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/future.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/spinlock.h"
#include "team_service.h"

namespace fox::apgas {
namespace detail {
namespace {
constexpr size_t kKeptTeams = 64;  // last answers kept per place (teams)
using Slots = std::vector<std::optional<std::vector<uint8_t>>>;

void Send(uint32_t place, HandlerId handler, const std::vector<uint8_t>& bytes) {
  (void)ebb::Messenger::Get()->SendAny(place, ebb::kTeamId, handler, bytes.data(), bytes.size());
}
// `value` encoded, to `place` (may block: never under lock_).
template <class T>
void SendValue(uint32_t place, HandlerId handler, const T& value) {
  std::vector<uint8_t> message;
  OutArchive out(message);
  out(value);
  Send(place, handler, message);
}
}  // namespace

struct Contribution {
  uint64_t team = 0, op = 0;
  std::vector<uint32_t> members;
  uint32_t index = 0;
  std::vector<uint8_t> bytes;
  template <class A>
  void serialize(A& ar) {
    ar(team, op, members, index, bytes);
  }
};
struct Answer {
  uint64_t team = 0, op = 0;
  std::vector<uint8_t> present;  // 1 per member that contributed
  std::vector<std::vector<uint8_t>> bytes;
  template <class A>
  void serialize(A& ar) {
    ar(team, op, present, bytes);
  }
};

// kKnown: an answer and the team's members (the receiver may not have heard
// of the operation).
struct Known {
  std::vector<uint32_t> members;
  Answer answer;
  template <class A>
  void serialize(A& ar) {
    ar(members, answer);
  }
};

struct TeamService::Waiting {
  Contribution mine;
  uint32_t gatherer;
  Promise<Slots> promise;
};
struct TeamService::Given {
  std::vector<uint32_t> members;
  uint32_t gatherer;
  Answer answer;
};
struct TeamService::Gathering {
  std::vector<uint32_t> members;
  std::map<uint32_t, std::vector<uint8_t>> got;  // by member index
  std::optional<Answer> answer;                  // once given
};

TeamService::TeamService() : core_(core::Current()) {
  auto on_message = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    OnMessage(from, handler, data, length);
  };
  // A large tree message's buffer becomes its bytes (OnTree); the rest as any message.
  auto on_large = [this](NodeId from, HandlerId handler, std::vector<uint8_t> data) {
    if (handler != kTree) return OnMessage(from, handler, data.data(), data.size());
    try {
      OnTree(std::move(data));
    } catch (const std::exception& e) {
      LOG_WARN("apgas: malformed Team message from place %u: %s", from, e.what());
    }
  };
  if (auto r = ebb::Messenger::Get()->Listen(ebb::kTeamId, on_message, core_); !r.ok()) {
    LOG_ERROR("apgas: Team cannot receive messages: %s", ErrorName(r.error()));
  } else if (auto large = ebb::Messenger::Get()->ListenLarge(ebb::kTeamId, on_large, core_); !large.ok()) {
    LOG_ERROR("apgas: Team cannot receive large messages: %s", ErrorName(large.error()));
  }
  subscription_ = am::OnPeerState(
      [this](NodeId node, am::PeerState state) {
        if (state == am::PeerState::kDead) OnDeath(node);
      },
      core_);
}

TeamService::~TeamService() {
  am::StopPeerState(subscription_);
  ebb::Messenger::Get()->StopListeningAny(ebb::kTeamId);
}

uint32_t TeamService::GathererLocked(const std::vector<uint32_t>& members) const {
  for (uint32_t m : members) {
    if (dead_.count(m) == 0) return m;
  }
  return members.empty() ? 0 : members.front();
}

Future<Slots> TeamService::Contribute(uint64_t team, uint64_t op, std::vector<uint32_t> members, uint32_t index,
                                      std::vector<uint8_t> bytes) {
  auto w = std::make_shared<Waiting>();
  w->mine = Contribution{team, op, std::move(members), index, std::move(bytes)};
  auto future = w->promise.GetFuture();
  {
    SpinGuard g(lock_);
    w->gatherer = GathererLocked(w->mine.members);
    waiting_[{team, op}] = w;
  }
  SendValue(w->gatherer, kContribute, w->mine);
  return future;
}

void TeamService::OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  try {
    InArchive in(data, length);
    if (handler == kContribute) {
      Contribution c;
      in(c);
      OnContribution(std::move(c));
    } else if (handler == kResult) {
      Answer a;
      in(a);
      OnAnswer(from, std::move(a));
    } else if (handler == kKnown) {
      Known k;
      in(k);
      OnKnown(std::move(k));
    } else if (handler == kTree) {
      OnTree(std::vector<uint8_t>(data, data + length));
    }
  } catch (const std::exception& e) {
    LOG_WARN("apgas: malformed Team message from place %u: %s", from, e.what());
  }
}

void TeamService::OnContribution(Contribution c) {
  std::optional<Answer> reply;
  std::vector<uint32_t> to;
  {
    SpinGuard g(lock_);
    if (c.index >= c.members.size()) return;
    Gathering& gather = gathering_[{c.team, c.op}];
    if (gather.members.empty()) gather.members = c.members;
    if (gather.answer) {  // asked again (its first gatherer died): the same answer
      reply = gather.answer;
      to.push_back(c.members[c.index]);
    } else {
      gather.got[c.index] = std::move(c.bytes);
      reply = CompleteLocked(c.team, c.op, gather, &to);
    }
  }
  Deliver(reply, to);
}

// The answer, if every member has contributed or died.
std::optional<Answer> TeamService::CompleteLocked(uint64_t team, uint64_t op, Gathering& gather,
                                                  std::vector<uint32_t>* to) {
  for (size_t i = 0; i < gather.members.size(); ++i) {
    if (gather.got.count(uint32_t(i)) == 0 && dead_.count(gather.members[i]) == 0) return std::nullopt;
  }
  Answer a{team, op, {}, {}};
  for (size_t i = 0; i < gather.members.size(); ++i) {
    auto it = gather.got.find(uint32_t(i));
    a.present.push_back(it != gather.got.end() ? 1 : 0);
    a.bytes.push_back(it != gather.got.end() ? it->second : std::vector<uint8_t>{});
    if (dead_.count(gather.members[i]) == 0) to->push_back(gather.members[i]);
  }
  gather.answer = a;
  gather.got.clear();
  ForgetOldLocked(team, op);
  return a;
}

// Answers older than the operation before `op` of `team` are asked for by
// nobody: a member is at most one operation behind another.
void TeamService::ForgetOldLocked(uint64_t team, uint64_t op) {
  if (op < 2) return;
  auto end = gathering_.lower_bound({team, op - 1});
  gathering_.erase(gathering_.lower_bound({team, 0}), end);
}

void TeamService::Deliver(const std::optional<Answer>& answer, const std::vector<uint32_t>& to) {
  if (!answer) return;
  std::vector<uint8_t> message;
  OutArchive out(message);
  out(*answer);
  for (uint32_t m : to) {
    if (deliver_filter_ && !deliver_filter_(answer->op, m)) return;
    Send(m, kResult, message);
  }
}

void TeamService::OnAnswer(uint32_t from, Answer a) {
  std::shared_ptr<Waiting> w;
  std::vector<std::pair<uint32_t, Known>> hand_on;
  {
    SpinGuard g(lock_);
    auto it = waiting_.find({a.team, a.op});
    if (it == waiting_.end()) return;  // answered already
    w = it->second;
    waiting_.erase(it);
    auto [given, fresh] = given_.try_emplace(a.team);
    if (fresh) {
      given_order_.push_back(a.team);
      if (given_order_.size() > kKeptTeams) {
        given_.erase(given_order_.front());
        given_order_.pop_front();
      }
    }
    given->second = Given{w->mine.members, from, a};
    if (dead_.count(from) != 0) hand_on.push_back(HandOnLocked(given->second));  // its death came first
  }
  for (auto& [to, known] : hand_on) SendValue(to, kKnown, known);
  Slots slots(a.present.size());
  for (size_t i = 0; i < a.present.size() && i < a.bytes.size(); ++i) {
    if (a.present[i]) slots[i] = std::move(a.bytes[i]);
  }
  w->promise.SetValue(std::move(slots));
}

// `given` for the team's gatherer now (its own gatherer died): where to
// send it, and what.
std::pair<uint32_t, Known> TeamService::HandOnLocked(Given& given) {
  given.gatherer = GathererLocked(given.members);
  return {given.gatherer, Known{given.members, given.answer}};
}

// An answer a dead gatherer gave some members: the answer to that operation
// here too, to those waiting for it and to whoever asks later.
void TeamService::OnKnown(Known k) {
  std::optional<Answer> reply;
  std::vector<uint32_t> to;
  {
    SpinGuard g(lock_);
    size_t n = k.members.size();
    if (n == 0 || k.answer.present.size() != n || k.answer.bytes.size() != n) return;
    Gathering& gather = gathering_[{k.answer.team, k.answer.op}];
    if (gather.members.empty()) gather.members = k.members;
    if (gather.answer || gather.members != k.members) return;
    for (auto& [index, bytes] : gather.got) {
      if (index < n && dead_.count(gather.members[index]) == 0) to.push_back(gather.members[index]);
    }
    gather.answer = k.answer;
    gather.got.clear();
    reply = std::move(k.answer);
    ForgetOldLocked(reply->team, reply->op);
  }
  Deliver(reply, to);
}

void TeamService::OnDeath(uint32_t place) {
  std::vector<std::pair<std::optional<Answer>, std::vector<uint32_t>>> answers;
  std::vector<std::shared_ptr<Waiting>> resend;
  std::vector<std::pair<uint32_t, Known>> hand_on;
  std::vector<std::shared_ptr<TreeWait>> failed;
  {
    SpinGuard g(lock_);
    if (!dead_.insert(place).second) return;
    FailTreeWaitsLocked(place, &failed);
    for (auto& [team, given] : given_) {
      if (given.gatherer == place) hand_on.push_back(HandOnLocked(given));
    }
    for (auto& [key, gather] : gathering_) {
      if (gather.answer) continue;
      std::vector<uint32_t> to;
      auto a = CompleteLocked(key.first, key.second, gather, &to);
      if (a) answers.emplace_back(a, to);
    }
    for (auto& [key, w] : waiting_) {
      if (w->gatherer != place) continue;
      w->gatherer = GathererLocked(w->mine.members);
      resend.push_back(w);
    }
  }
  for (auto& [to, known] : hand_on) SendValue(to, kKnown, known);
  for (auto& [a, to] : answers) Deliver(a, to);
  for (auto& w : resend) SendValue(w->gatherer, kContribute, w->mine);
  FailTreeWaits(failed, place);
}

}  // namespace detail

namespace {
uint64_t Fnv(uint64_t h, uint64_t v) {
  for (int b = 0; b < 8; ++b) h = (h ^ uint8_t(v >> (8 * b))) * 0x100000001b3ull;
  return h;
}
}  // namespace

Team::Team(std::vector<Place> places) : places_(std::move(places)) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (Place p : places_) h = Fnv(h, p.id);
  // Members make their teams over the same places in the same order.
  id_ = Fnv(h, detail::TeamService::Get()->NextTeamOver(h));
}

long Team::IndexOf(Place p) const {
  for (size_t i = 0; i < places_.size(); ++i) {
    if (places_[i] == p) return long(i);
  }
  return -1;
}

std::vector<std::optional<std::vector<uint8_t>>> Team::Gather(std::vector<uint8_t> mine) {
  long index = IndexOf(here());
  if (index < 0) throw std::logic_error("Team: this place is not a member");
  std::vector<uint32_t> members;
  for (Place p : places_) members.push_back(p.id);
  auto future =
      detail::TeamService::Get()->Contribute(id_, next_op_++, std::move(members), uint32_t(index), std::move(mine));
  auto* activity = event::Local();
  auto slots = future.Block();
  event::Local() = activity;
  return slots;
}

namespace {
// A member's part of split.
struct SplitEntry {
  int64_t color = 0, key = 0;
  uint32_t index = 0;
  template <class A>
  void serialize(A& ar) {
    ar(color, key, index);
  }
};
}  // namespace

Team Team::split(int64_t color, int64_t key) {
  using Entry = SplitEntry;
  using Entries = std::vector<Entry>;
  auto join = [](Entries a, const Entries& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  Entries all = AllreduceValue<Entries>(Entries{Entry{color, key, uint32_t(Rank())}}, join);
  std::vector<Entry> mine;
  for (const Entry& e : all) {
    if (e.color == color) mine.push_back(e);
  }
  std::sort(mine.begin(), mine.end(),
            [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.index < b.index; });
  std::vector<Place> members;
  for (const Entry& e : mine) members.push_back(places_[e.index]);
  return Team(std::move(members));
}

int Team::agree(int value) {
  std::vector<uint8_t> mine;
  OutArchive out(mine);
  out(value);
  auto all = Gather(std::move(mine));
  int result = ~0;
  for (auto& bytes : all) {
    if (!bytes) continue;
    InArchive in(bytes->data(), bytes->size());
    int v = 0;
    in(v);
    result &= v;
  }
  return result;
}

namespace testing {
void SetTeamDeliverFilter(std::function<bool(uint64_t, uint32_t)> filter) {
  detail::TeamService::Get()->SetDeliverFilter(std::move(filter));
}
}  // namespace testing

}  // namespace fox::apgas
