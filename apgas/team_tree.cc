// Team's tree collectives (team.h): reduce, broadcast, gather and scatter
// along a binomial tree rooted at a member, alltoall member to member, and
// the messages they travel in (kTree of the TeamService Ebb, team.cc): the
// bytes, then a trailer of team id, operation, a tag (the step of the
// algorithm), the sender's member index, the bytes' length, and where they
// go in the whole value and its length (the bytes first, so that a large
// message's buffer becomes the bytes without a copy). A value longer than
// the largest message the Messenger carries goes in pieces, put together at
// the receiver, so a collective takes values of any size (an alltoall of a
// graph's edges). A member receives only from the members the algorithm
// names; the message may come before the receiver asks (kept until it
// does).
//
// Failures: a receive fails with DeadPlaceException once any member of the
// team is dead (known here first, or learnt while waiting), so that no
// member waits for one that will never send: a member whose peer throws
// learns of the death as every place does (the transport's peer states)
// and throws in turn. Members that had their result before the death keep
// it; the others throw.
#include <algorithm>

#include "fox/apgas/team.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/static_ids.h"
#include "fox/log.h"
#include "fox/net/wire.h"
#include "team_service.h"

namespace fox::apgas {
namespace detail {
namespace {
constexpr size_t kTrailerBytes = 8 + 8 + 4 + 4 + 8 + 8 + 8;  // team, op, tag, from, length, offset, total
constexpr size_t kPieceBytes = ebb::Messenger::kMaxLargeBytes - kTrailerBytes;
constexpr uint64_t kMaxValueBytes = uint64_t(1) << 36;  // a larger total is a malformed message

std::vector<uint8_t> WithTrailer(std::vector<uint8_t> bytes, uint64_t team, uint64_t op, uint32_t tag, uint32_t from,
                                 uint64_t offset, uint64_t total) {
  size_t length = bytes.size();
  bytes.resize(length + kTrailerBytes);
  uint8_t* t = bytes.data() + length;
  net::wire::Store64(t, team);
  net::wire::Store64(t + 8, op);
  net::wire::Store32(t + 16, tag);
  net::wire::Store32(t + 20, from);
  net::wire::Store64(t + 24, length);
  net::wire::Store64(t + 32, offset);
  net::wire::Store64(t + 40, total);
  return bytes;
}
}  // namespace

struct TeamService::TreeWait {
  std::vector<uint32_t> members;
  Promise<std::vector<uint8_t>> promise;
};

// A send to a dead place is lost, which its receivers learn as a death
// (the Messenger's errors otherwise mean the same).
void TeamService::TreeSend(uint32_t place, uint64_t team, uint64_t op, uint32_t tag, uint32_t from,
                           std::vector<uint8_t> bytes) {
  const uint64_t total = bytes.size();
  if (total <= kPieceBytes) {
    (void)ebb::Messenger::Get()->SendAny(place, ebb::kTeamId, kTree,
                                         WithTrailer(std::move(bytes), team, op, tag, from, 0, total));
    return;
  }
  for (uint64_t offset = 0; offset < total; offset += kPieceBytes) {
    uint64_t end = std::min<uint64_t>(total, offset + kPieceBytes);
    std::vector<uint8_t> piece(bytes.begin() + long(offset), bytes.begin() + long(end));
    (void)ebb::Messenger::Get()->SendAny(place, ebb::kTeamId, kTree,
                                         WithTrailer(std::move(piece), team, op, tag, from, offset, total));
  }
}

void TeamService::OnTree(std::vector<uint8_t> message) {
  if (message.size() < kTrailerBytes) throw std::invalid_argument("a tree message shorter than its trailer");
  size_t length = message.size() - kTrailerBytes;
  const uint8_t* t = message.data() + length;
  if (net::wire::Load64(t + 24) != length) throw std::invalid_argument("a tree message of the wrong length");
  TreeKey key{net::wire::Load64(t), net::wire::Load64(t + 8), net::wire::Load32(t + 16), net::wire::Load32(t + 20)};
  uint64_t offset = net::wire::Load64(t + 32), total = net::wire::Load64(t + 40);
  if (total > kMaxValueBytes || offset > total || length > total - offset) {
    throw std::invalid_argument("a tree message's piece outside its value");
  }
  message.resize(length);
  std::shared_ptr<TreeWait> w;
  {
    SpinGuard g(lock_);
    if (length != total) {  // a piece: kept until the value is whole
      Assembly& a = tree_assembling_[key];
      if (a.bytes.empty()) a.bytes.resize(total);
      if (a.bytes.size() != total || a.got + length > total) {
        tree_assembling_.erase(key);
        throw std::invalid_argument("a tree message's pieces disagree on its length");
      }
      std::copy(message.begin(), message.end(), a.bytes.begin() + long(offset));
      a.got += length;
      if (a.got < total) return;
      message = std::move(a.bytes);
      tree_assembling_.erase(key);
    }
    auto it = tree_waiting_.find(key);
    if (it == tree_waiting_.end()) {
      tree_arrived_[key] = std::move(message);
      return;
    }
    w = it->second;
    tree_waiting_.erase(it);
  }
  w->promise.SetValue(std::move(message));
}

void TeamService::ThrowIfAnyDead(const std::vector<uint32_t>& members) const {
  SpinGuard g(lock_);
  for (uint32_t m : members) {
    if (dead_.count(m) != 0) throw DeadPlaceException(Place{m});
  }
}

std::vector<uint8_t> TeamService::TreeReceive(uint64_t team, uint64_t op, uint32_t tag, uint32_t from,
                                              const std::vector<uint32_t>& members) {
  auto w = std::make_shared<TreeWait>();
  auto future = w->promise.GetFuture();
  {
    SpinGuard g(lock_);
    TreeKey key{team, op, tag, from};
    auto it = tree_arrived_.find(key);
    if (it != tree_arrived_.end()) {
      std::vector<uint8_t> bytes = std::move(it->second);
      tree_arrived_.erase(it);
      return bytes;
    }
    for (uint32_t m : members) {
      if (dead_.count(m) != 0) throw DeadPlaceException(Place{m});
    }
    w->members = members;
    tree_waiting_[key] = w;
  }
  auto* activity = event::Local();
  auto bytes = future.Block();  // rethrows the DeadPlaceException
  event::Local() = activity;
  return bytes;
}

void TeamService::FailTreeWaitsLocked(uint32_t dead, std::vector<std::shared_ptr<TreeWait>>* failed) {
  std::set<uint64_t> teams;
  for (auto it = tree_waiting_.begin(); it != tree_waiting_.end();) {
    const auto& members = it->second->members;
    if (std::find(members.begin(), members.end(), dead) == members.end()) {
      ++it;
      continue;
    }
    teams.insert(std::get<0>(it->first));
    failed->push_back(it->second);
    it = tree_waiting_.erase(it);
  }
  // What came for those teams' operations will not be asked for.
  for (auto it = tree_arrived_.begin(); it != tree_arrived_.end();) {
    it = teams.count(std::get<0>(it->first)) != 0 ? tree_arrived_.erase(it) : std::next(it);
  }
  for (auto it = tree_assembling_.begin(); it != tree_assembling_.end();) {
    it = teams.count(std::get<0>(it->first)) != 0 ? tree_assembling_.erase(it) : std::next(it);
  }
}

void TeamService::FailTreeWaits(const std::vector<std::shared_ptr<TreeWait>>& failed, uint32_t dead) {
  for (const auto& w : failed) w->promise.SetException(std::make_exception_ptr(DeadPlaceException(Place{dead})));
}

}  // namespace detail

// ---- the algorithms, over member indices ----

namespace {
// Tags: one per step of an algorithm within an operation.
enum : uint32_t { kUp = 1, kDown = 2, kAll = 3 };
}  // namespace

std::vector<uint32_t> Team::Ids() const {
  std::vector<uint32_t> ids;
  for (Place p : places_) ids.push_back(p.id);
  return ids;
}

size_t Team::Rank() const {
  long i = IndexOf(here());
  if (i < 0) throw std::logic_error("Team: this place is not a member");
  return size_t(i);
}

size_t Team::RootIndex(Place root) const {
  long i = IndexOf(root);
  if (i < 0) throw std::invalid_argument("Team: the root is not a member");
  return size_t(i);
}

bool Team::ReduceInto(size_t root, Function<void(Bytes)> absorb, Function<Bytes()> take, uint64_t operation) {
  auto service = detail::TeamService::Get();
  std::vector<uint32_t> ids = Ids();
  size_t n = places_.size(), me = Rank(), vr = (me + n - root) % n;
  service->ThrowIfAnyDead(ids);
  // This member's value covers relative ranks [vr, vr + mask): received ones come after it.
  for (size_t mask = 1; mask < n; mask <<= 1) {
    if (vr & mask) {
      size_t parent = (vr - mask + root) % n;
      service->TreeSend(ids[parent], id_, operation, kUp, uint32_t(me), take());
      return false;
    }
    if (vr + mask < n) {
      size_t child = (vr + mask + root) % n;
      absorb(service->TreeReceive(id_, operation, kUp, uint32_t(child), ids));
    }
  }
  return true;
}

namespace {
// AllreduceArray's tags: its own steps (1...), above the other algorithms'.
constexpr uint32_t kArray = 16;
}  // namespace

void Team::SendTo(size_t member, uint64_t operation, uint32_t tag, Bytes bytes) {
  static_assert(detail::kTrailerBytes <= kMessageRoom, "PieceOf leaves room for the trailer");
  detail::TeamService::Get()->TreeSend(places_[member].id, id_, operation, kArray + tag, uint32_t(Rank()),
                                       std::move(bytes));
}

Team::Bytes Team::ReceiveFrom(size_t member, uint64_t operation, uint32_t tag) {
  return detail::TeamService::Get()->TreeReceive(id_, operation, kArray + tag, uint32_t(member), Ids());
}

void Team::ThrowIfAnyDead() const { detail::TeamService::Get()->ThrowIfAnyDead(Ids()); }

std::optional<Team::Bytes> Team::ReduceBytes(size_t root, Bytes mine, Function<Bytes(const Bytes&, const Bytes&)> op,
                                             uint64_t operation) {
  bool at_root = ReduceInto(
      root, [&](Bytes theirs) { mine = op(mine, theirs); }, [&] { return std::move(mine); }, operation);
  if (!at_root) return std::nullopt;
  return mine;
}

std::vector<uint8_t> Team::BroadcastBytes(size_t root, std::vector<uint8_t> bytes, uint64_t operation) {
  auto service = detail::TeamService::Get();
  std::vector<uint32_t> ids = Ids();
  size_t n = places_.size(), me = Rank(), vr = (me + n - root) % n;
  service->ThrowIfAnyDead(ids);
  size_t mask = 1;
  for (; mask < n; mask <<= 1) {
    if (vr & mask) {
      bytes = service->TreeReceive(id_, operation, kDown, uint32_t((vr - mask + root) % n), ids);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < n) service->TreeSend(ids[(vr + mask + root) % n], id_, operation, kDown, uint32_t(me), bytes);
  }
  return bytes;
}

std::vector<std::vector<uint8_t>> Team::GatherBytes(size_t root, std::vector<uint8_t> mine, uint64_t operation) {
  // Each subtree's pieces, by relative rank, travel up as one message.
  using Pieces = std::vector<std::vector<uint8_t>>;
  auto join = [](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    Pieces pa = Decode<Pieces>(a), pb = Decode<Pieces>(b);
    for (auto& p : pb) pa.push_back(std::move(p));
    return Encode(pa);
  };
  auto all = ReduceBytes(root, Encode(Pieces{std::move(mine)}), join, operation);
  if (!all) return {};
  Pieces relative = Decode<Pieces>(*all), out(places_.size());
  for (size_t v = 0; v < relative.size() && v < out.size(); ++v) out[(v + root) % out.size()] = std::move(relative[v]);
  return out;
}

std::vector<uint8_t> Team::ScatterBytes(size_t root, std::vector<std::vector<uint8_t>> pieces, uint64_t operation) {
  // Down the binomial tree: each member gets its subtree's pieces (by
  // relative rank), keeps its own and passes the rest on.
  using Pieces = std::vector<std::vector<uint8_t>>;
  auto service = detail::TeamService::Get();
  std::vector<uint32_t> ids = Ids();
  size_t n = places_.size(), me = Rank(), vr = (me + n - root) % n;
  service->ThrowIfAnyDead(ids);
  Pieces mine;  // relative ranks [vr, vr + span)
  size_t mask = 1;
  for (; mask < n; mask <<= 1) {
    if (vr & mask) {
      mine = Decode<Pieces>(service->TreeReceive(id_, operation, kDown, uint32_t((vr - mask + root) % n), ids));
      break;
    }
  }
  if (vr == 0) {
    if (pieces.size() != n) throw std::invalid_argument("Team::scatter: not one value per member");
    for (size_t v = 0; v < n; ++v) mine.push_back(std::move(pieces[(v + root) % n]));
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask >= n) continue;
    size_t end = std::min(n, vr + 2 * mask) - vr;  // their subtree: [vr + mask, vr + 2 mask)
    Pieces theirs(std::make_move_iterator(mine.begin() + long(mask)),
                  std::make_move_iterator(mine.begin() + long(std::min(end, mine.size()))));
    service->TreeSend(ids[(vr + mask + root) % n], id_, operation, kDown, uint32_t(me), Encode(theirs));
  }
  if (mine.empty()) throw std::logic_error("Team::scatter: nothing came for this member");
  return std::move(mine[0]);
}

std::vector<std::vector<uint8_t>> Team::AlltoallBytes(std::vector<std::vector<uint8_t>> pieces, uint64_t operation) {
  auto service = detail::TeamService::Get();
  std::vector<uint32_t> ids = Ids();
  size_t n = places_.size(), me = Rank();
  if (pieces.size() != n) throw std::invalid_argument("Team::alltoall: not one value per member");
  service->ThrowIfAnyDead(ids);
  for (size_t k = 1; k < n; ++k) {
    size_t to = (me + k) % n;
    service->TreeSend(ids[to], id_, operation, kAll, uint32_t(me), std::move(pieces[to]));
  }
  std::vector<std::vector<uint8_t>> out(n);
  out[me] = std::move(pieces[me]);
  for (size_t k = 1; k < n; ++k) {
    size_t from = (me + n - k) % n;
    out[from] = service->TreeReceive(id_, operation, kAll, uint32_t(from), ids);
  }
  return out;
}

}  // namespace fox::apgas
