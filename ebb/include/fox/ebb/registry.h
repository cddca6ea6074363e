// The node's registry of live Ebbs: the type-erased machinery under the
// flavours' fault handlers. Users call the flavours (shared_ebb.h,
// multicore_ebb.h) and lifetime.h, not this header.
//
// Locking (see ebb/README.md): one registry SpinLock guards the id -> entry
// map; one SpinLock per entry guards its "installed on core c" bitmap and
// the table slots it covers; a per-core lock guards that core's far map.
// Order: registry -> entry -> far map. No lock is held while user code
// (constructors, destructors) runs, and nothing allocates under a lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fox/ebb/ebb_id.h"

namespace fox::ebb::detail {

enum class Kind : uint8_t {
  kShared,     // every core's slot holds the one root object
  kMulticore,  // core c's slot holds core c's representative
};

// What the registry knows about an Ebb's C++ type. Flavours define one
// constexpr EbbType per type; its address is the type's identity.
struct EbbType {
  Kind kind;
  void* (*make_root)();  // lazy creation at a static id; null: not allowed
  void (*delete_root)(void*);
  void (*delete_rep)(void*);  // kMulticore only
};

// Type-erased construction and deletion used by the flavours' EbbTypes.
template <class T>
void* MakeDefault() {
  if constexpr (std::is_default_constructible_v<T>) {
    return new T();
  } else {
    return nullptr;
  }
}
template <class T>
void DeleteAs(void* p) {
  delete static_cast<T*>(p);
}

struct Entry;

struct Found {
  Entry* entry;
  void* root;  // the shared object (kShared) or the root (kMulticore)
};

// The live Ebb `id` for a fault on the calling core, creating its root first
// when `id` is a static id not yet created and type->make_root allows it
// (exactly one core constructs it; the others wait for it). Marks the calling
// core as using representatives (lifetime.h). The result is valid until the
// calling core's next quiescent point. Thread context; takes the registry
// lock; may run the root's constructor (no lock held). Throws DeadEbbError
// (no live Ebb: null, destroyed, or never created), EbbTypeError (created as
// another type), and whatever the root's constructor throws.
Found FindForFault(EbbId id, const EbbType* type);

// Installs `rep` in the calling core's table for `entry` (from FindForFault
// on this core). Allocates before locking; takes the entry lock (and the
// core's far-map lock for far ids). Throws DeadEbbError if the Ebb was
// destroyed since FindForFault; `rep` then still belongs to the caller.
void Install(Entry* entry, void* rep);

// Registers a new live Ebb `id` of `type` whose root is `root` (ownership
// passes to the registry on success, stays with the caller on a throw).
// Thread context; takes the registry lock. Throws EbbExistsError (id live,
// being created, or a destroyed static id), EbbError (kNullId or the
// reserved id).
void Publish(EbbId id, const EbbType* type, void* root);

struct RepOnCore {
  int core;
  void* rep;
};
// Copies the representatives of the live Ebb `id` (at most one per core) into
// `out` (room for core::kMaxCores entries); returns how many. The pointers are
// valid until the calling core's next quiescent point. Throws as FindForFault
// (never creates anything).
size_t CollectReps(EbbId id, const EbbType* type, RepOnCore* out);

// The root of the live Ebb `id`, without creating anything. As CollectReps.
void* FindRoot(EbbId id, const EbbType* type);

}  // namespace fox::ebb::detail
