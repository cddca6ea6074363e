// MulticoreEbb<T, Root>: one representative per core, one Root per node.
//
//   struct CounterRoot { ... };                       // shared, node-wide
//   class Counter : public fox::ebb::MulticoreEbb<Counter, CounterRoot> {
//    public:
//     explicit Counter(CounterRoot& root);           // this core's rep
//     void Increment() { ++count_; }                 // no sharing, no lock
//   };
//   EbbRef<Counter> c = Counter::Create(root_args...);
//   c->Increment();
//
// The root is constructed once per node: by Create/CreateAt or, for a
// default-constructible Root at a static id, by the first fault on any core
// (exactly once however many cores fault together). Each core's first access
// creates that core's representative from the root, on that core, with
// `root.CreateRep()` (returning std::unique_ptr<T>) if Root has it, else
// `T(root)`. Representative constructors run without locks but must not block
// or dereference the same Ebb (a core's rep does not exist yet while it is
// being built). On destruction every representative is deleted before the
// root.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/id_allocator.h"
#include "fox/ebb/registry.h"

namespace fox::ebb {

namespace detail {
template <class T, class Root>
inline constexpr EbbType kMulticoreType{Kind::kMulticore,
                                        std::is_default_constructible_v<Root> ? &MakeDefault<Root> : nullptr,
                                        &DeleteAs<Root>, &DeleteAs<T>};

template <class T, class Root>
std::unique_ptr<T> MakeRep(Root& root) {
  if constexpr (requires {
                  { root.CreateRep() } -> std::convertible_to<std::unique_ptr<T>>;
                }) {
    return root.CreateRep();
  } else {
    return std::make_unique<T>(root);
  }
}
}  // namespace detail

template <class T, class Root>
class MulticoreEbb {
 public:
  // Constructs Root(root_args...) under a fresh dynamic id; representatives
  // come on each core's first access. Thread context; allocates; throws
  // IdExhaustedError and what Root's constructor throws.
  template <class... Args>
  static EbbRef<T> Create(Args&&... root_args) {
    return CreateAt(AllocateId(), std::forward<Args>(root_args)...);
  }

  // As Create, as the Ebb `id` (see SharedEbb::CreateAt). Throws
  // EbbExistsError.
  template <class... Args>
  static EbbRef<T> CreateAt(EbbId id, Args&&... root_args) {
    auto root = std::make_unique<Root>(std::forward<Args>(root_args)...);
    detail::Publish(id, &detail::kMulticoreType<T, Root>, static_cast<void*>(root.get()));
    root.release();
    return EbbRef<T>(id);
  }

  // EbbRef's miss handler: creates the calling core's representative from
  // the root, installs it and returns it. Thread context; allocates; throws
  // DeadEbbError, EbbTypeError and what the representative's constructor
  // throws (nothing is installed then, and the next access retries).
  static T* HandleFault(EbbId id) {
    detail::Found found = detail::FindForFault(id, &detail::kMulticoreType<T, Root>);
    std::unique_ptr<T> rep = detail::MakeRep<T, Root>(*static_cast<Root*>(found.root));
    detail::Install(found.entry, static_cast<void*>(rep.get()));
    return rep.release();
  }

  // The node's root of the live Ebb `id`, valid until the calling core's next
  // quiescent point. Throws DeadEbbError, EbbTypeError; creates nothing.
  static Root& GetRoot(EbbId id) { return *static_cast<Root*>(detail::FindRoot(id, &detail::kMulticoreType<T, Root>)); }

  // Calls f(core, rep) for every representative created so far (for example
  // to sum per-core counters). Reps are read while their cores may be using
  // them: f must only read what the reps publish for that (atomics). Runs f
  // without locks on the calling core. Throws as GetRoot.
  template <class F>
  static void ForEachRep(EbbId id, F&& f) {
    std::vector<detail::RepOnCore> reps(core::kMaxCores);
    size_t n = detail::CollectReps(id, &detail::kMulticoreType<T, Root>, reps.data());
    for (size_t i = 0; i < n; ++i) f(reps[i].core, *static_cast<T*>(reps[i].rep));
  }
};

}  // namespace fox::ebb
