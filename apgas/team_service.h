// Internal: Team's messages and state at one place (team.cc), a shared Ebb
// at kTeamId (the gatherer's side and the members' side).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "fox/apgas/team.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/future.h"
#include "fox/net/ids.h"
#include "fox/spinlock.h"

namespace fox::apgas::detail {

// The TeamService Ebb's messages (kTree: the pieces of team_tree.cc's collectives).
enum TeamHandler : uint16_t { kContribute = 1, kResult = 2, kKnown = 3, kTree = 4 };

struct Contribution;
struct Answer;
struct Known;

class TeamService : public ebb::SharedEbb<TeamService> {
 public:
  static ebb::EbbRef<TeamService> Get() { return ebb::EbbRef<TeamService>(ebb::kTeamId); }
  TeamService();  // listens on the calling core; before am::Start
  ~TeamService();

  // This member's contribution to operation `op` of `team`; the future
  // holds every member's (nullopt: died first). Event context.
  Future<std::vector<std::optional<std::vector<uint8_t>>>> Contribute(uint64_t team, uint64_t op,
                                                                      std::vector<uint32_t> members, uint32_t index,
                                                                      std::vector<uint8_t> bytes);
  // Members waiting for an answer here.
  size_t waiting() const {
    SpinGuard g(lock_);
    return waiting_.size();
  }
  // testing::SetTeamDeliverFilter (team.h).
  void SetDeliverFilter(std::function<bool(uint64_t op, uint32_t member)> filter) {
    deliver_filter_ = std::move(filter);
  }
  // Tree collectives (team_tree.cc): `bytes` to `place` as message `tag`
  // of operation `op` of `team`, from member index `from`. May block.
  void TreeSend(uint32_t place, uint64_t team, uint64_t op, uint32_t tag, uint32_t from, std::vector<uint8_t> bytes);
  // That message, once it came; DeadPlaceException (naming it) if a place
  // of `members` is dead or dies first. Blocks the calling event.
  std::vector<uint8_t> TreeReceive(uint64_t team, uint64_t op, uint32_t tag, uint32_t from,
                                   const std::vector<uint32_t>& members);
  // DeadPlaceException if a place of `members` is known dead here.
  void ThrowIfAnyDead(const std::vector<uint32_t>& members) const;

  // How many teams over places hashing to `group` this place made before.
  uint64_t NextTeamOver(uint64_t group) {
    SpinGuard g(lock_);
    return made_[group]++;
  }

 private:
  struct Waiting;
  struct Gathering;
  struct Given;  // the last answer this member was given, per team
  struct TreeWait;
  using TreeKey = std::tuple<uint64_t, uint64_t, uint32_t, uint32_t>;  // team, op, tag, from
  void OnTree(std::vector<uint8_t> message);                           // throws std::invalid_argument if malformed
  void FailTreeWaitsLocked(uint32_t dead, std::vector<std::shared_ptr<TreeWait>>* failed) REQUIRES(lock_);
  static void FailTreeWaits(const std::vector<std::shared_ptr<TreeWait>>& failed, uint32_t dead);
  void OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  void OnContribution(Contribution c);
  void OnAnswer(uint32_t from, Answer a);
  void OnKnown(Known k);
  void OnDeath(uint32_t place);
  std::pair<uint32_t, Known> HandOnLocked(Given& given) REQUIRES(lock_);
  void ForgetOldLocked(uint64_t team, uint64_t op) REQUIRES(lock_);
  std::optional<Answer> CompleteLocked(uint64_t team, uint64_t op, Gathering& gather, std::vector<uint32_t>* to)
      REQUIRES(lock_);
  void Deliver(const std::optional<Answer>& answer, const std::vector<uint32_t>& to);
  uint32_t GathererLocked(const std::vector<uint32_t>& members) const REQUIRES(lock_);

  int core_;
  uint64_t subscription_ = 0;
  mutable SpinLock lock_;
  std::set<uint32_t> dead_ GUARDED_BY(lock_);
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<Waiting>> waiting_ GUARDED_BY(lock_);
  std::map<std::pair<uint64_t, uint64_t>, Gathering> gathering_ GUARDED_BY(lock_);
  std::map<uint64_t, uint64_t> made_ GUARDED_BY(lock_);
  std::map<uint64_t, Given> given_ GUARDED_BY(lock_);
  std::deque<uint64_t> given_order_ GUARDED_BY(lock_);  // given_'s teams, oldest first
  std::function<bool(uint64_t, uint32_t)> deliver_filter_;
  std::map<TreeKey, std::vector<uint8_t>> tree_arrived_ GUARDED_BY(lock_);
  struct Assembly {
    std::vector<uint8_t> bytes;  // the value's length
    uint64_t got = 0;            // bytes of it arrived
  };
  std::map<TreeKey, Assembly> tree_assembling_ GUARDED_BY(lock_);  // values sent in pieces
  std::map<TreeKey, std::shared_ptr<TreeWait>> tree_waiting_ GUARDED_BY(lock_);
};

}  // namespace fox::apgas::detail
