// EbbRef<T>: how code names and calls an Ebb (STYLE.md §7).
//
// An EbbRef is the Ebb's id and nothing else: copy it, store it, send it to
// another node. `ref->Method()` finds the calling core's representative in
// its translation table (local_table.h): one table load and one predictable
// branch. On a miss, EbbRef calls T::HandleFault(id) out of line; the
// flavours (shared_ebb.h, multicore_ebb.h) implement it by finding or
// creating this core's representative and installing it in this core's table.
//
// A representative pointer obtained through an EbbRef stays valid until the
// calling core next passes a quiescent point (lifetime.h): do not keep it
// across events; keep the EbbRef.
#pragma once

#include "fox/ebb/ebb_id.h"
#include "fox/ebb/local_table.h"

namespace fox::ebb {

namespace detail {

// Start of every miss (local_table.cc): attaches the calling core's table if
// needed, finds ids beyond kDirectSlots in the core's far map, and otherwise
// counts a representative miss and returns null so that the caller runs the
// Ebb's fault handler. Thread context.
void* BeginMiss(EbbId id);

template <class T>
[[gnu::noinline, gnu::cold]] T* Miss(EbbId id) {
  if (void* rep = BeginMiss(id)) return static_cast<T*>(rep);
  return T::HandleFault(id);
}

}  // namespace detail

template <class T>
class EbbRef {
 public:
  constexpr EbbRef() = default;
  constexpr explicit EbbRef(EbbId id) : id_(id) {}

  // This core's representative, created on a miss by T::HandleFault. Thread
  // context. Throws DeadEbbError for a null, destroyed or unknown id (and
  // whatever the fault handler throws); the hit path takes no lock, does not
  // allocate and does not throw.
  [[gnu::always_inline]] T* operator->() const { return Get(); }
  [[gnu::always_inline]] T& operator*() const { return *Get(); }
  [[gnu::always_inline]] T* Get() const {
    void* rep = LoadSlot(ThisCoreTable(), id_);
    if (rep == nullptr) [[unlikely]] {
      return detail::Miss<T>(id_);
    }
    return static_cast<T*>(rep);
  }

  // This core's representative if it is already installed in the direct
  // table, else null; never faults, locks, allocates or throws, so it is the
  // only dereference allowed in interrupt context. Ids at or above
  // kDirectSlots always give null.
  T* LocalRepOrNull() const { return static_cast<T*>(LoadSlot(ThisCoreTable(), id_)); }

  constexpr EbbId id() const { return id_; }
  constexpr explicit operator bool() const { return id_ != kNullId; }
  friend constexpr bool operator==(EbbRef a, EbbRef b) { return a.id_ == b.id_; }

 private:
  EbbId id_ = kNullId;
};

}  // namespace fox::ebb
