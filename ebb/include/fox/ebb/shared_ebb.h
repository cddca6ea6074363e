// SharedEbb<T>: one representative per node, shared by every core.
//
//   class Directory : public fox::ebb::SharedEbb<Directory> { ... };
//   EbbRef<Directory> dir = Directory::Create(args...);   // dynamic id
//   dir->Lookup(key);                                      // any core
//
// The object is constructed once per node: by Create/CreateAt, or, for a
// default-constructible T at a static id, by the first fault on any core
// (under the registry's protocol: exactly one construction; cores faulting
// meanwhile wait for it). Every other core's first access installs the same
// pointer in its own table. The object is called concurrently from all
// cores: its methods do their own locking.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/id_allocator.h"
#include "fox/ebb/registry.h"

namespace fox::ebb {

namespace detail {
template <class T>
inline constexpr EbbType kSharedType{Kind::kShared, std::is_default_constructible_v<T> ? &MakeDefault<T> : nullptr,
                                     &DeleteAs<T>, nullptr};
}  // namespace detail

template <class T>
class SharedEbb {
 public:
  // Constructs T(args...) under a fresh dynamic id (AllocateId). Thread
  // context; allocates; throws IdExhaustedError and what T's constructor
  // throws.
  template <class... Args>
  static EbbRef<T> Create(Args&&... args) {
    return CreateAt(AllocateId(), std::forward<Args>(args)...);
  }

  // Constructs T(args...) as the Ebb `id`: a static id, or a dynamic id from
  // AllocateId() not used before. Throws EbbExistsError if `id` is live,
  // being created, or a destroyed static id (the new object is then deleted).
  template <class... Args>
  static EbbRef<T> CreateAt(EbbId id, Args&&... args) {
    auto object = std::make_unique<T>(std::forward<Args>(args)...);
    detail::Publish(id, &detail::kSharedType<T>, static_cast<void*>(object.get()));
    object.release();
    return EbbRef<T>(id);
  }

  // EbbRef's miss handler: installs the node's object in the calling core's
  // table and returns it. Thread context; throws DeadEbbError, EbbTypeError.
  static T* HandleFault(EbbId id) {
    detail::Found found = detail::FindForFault(id, &detail::kSharedType<T>);
    detail::Install(found.entry, found.root);
    return static_cast<T*>(found.root);
  }
};

}  // namespace fox::ebb
