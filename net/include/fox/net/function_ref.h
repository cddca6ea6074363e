// FunctionRef<R(Args...)>: a non-owning reference to a callable, for
// callbacks that run during the call that receives them (frame delivery,
// transmission). Two words, never allocates, so it is usable in interrupt
// context, unlike fox::Function. The callable must outlive the call.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace fox::net {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename D = std::remove_reference_t<F>,
            typename = std::enable_if_t<!std::is_same_v<std::remove_cv_t<D>, FunctionRef> &&
                                        std::is_invocable_r_v<R, D&, Args...>>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): passed as an argument
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... args) -> R { return (*static_cast<D*>(o))(std::forward<Args>(args)...); }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace fox::net
