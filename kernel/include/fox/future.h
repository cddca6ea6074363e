// Futures and promises on the event loop.
//
// A Promise<T> is fulfilled once, on any core, with a value or an exception.
// Its Future<T> can be waited on two ways: Then(f) runs f(ready future) as an
// event on the core that called Then; Block() suspends the calling event
// (event::Block) until the value is there and returns it or rethrows.
// Futures are move-only values; the shared state is reference counted.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "fox/core.h"
#include "fox/event.h"
#include "fox/function.h"
#include "fox/spinlock.h"

namespace fox {

template <typename T>
class Future;
template <typename T>
class Promise;

class BrokenPromise : public std::exception {
 public:
  const char* what() const noexcept override { return "fox: promise destroyed without a value"; }
};

class FutureAlreadyRetrieved : public std::exception {
 public:
  const char* what() const noexcept override { return "fox: future already retrieved or empty"; }
};

class PromiseAlreadySatisfied : public std::exception {
 public:
  const char* what() const noexcept override { return "fox: promise already has a value or an exception"; }
};

namespace future_internal {

struct Unit {};
template <typename T>
using Stored = std::conditional_t<std::is_void_v<T>, Unit, T>;

template <typename T>
struct State {
  SpinLock lock;
  bool ready GUARDED_BY(lock) = false;
  std::optional<Stored<T>> value GUARDED_BY(lock);
  std::exception_ptr error GUARDED_BY(lock);
  Function<void()> on_ready GUARDED_BY(lock);  // runs once, when ready

  // Publishes the result and fires the waiter, outside the lock.
  void Complete(std::optional<Stored<T>> v, std::exception_ptr e) {
    Function<void()> waiter;
    {
      SpinGuard guard(lock);
      if (ready) return;                    // fulfilled twice: the first result stands
      if (v) value.emplace(std::move(*v));  // T need not be assignable (Result<T> is not)
      error = std::move(e);
      ready = true;
      waiter = std::move(on_ready);
    }
    if (waiter) waiter();
  }

  // Runs `f` once ready: now if already ready, else from Complete.
  void OnReady(Function<void()> f) {
    {
      SpinGuard guard(lock);
      if (!ready) {
        on_ready = std::move(f);
        return;
      }
    }
    f();
  }
};

}  // namespace future_internal

template <typename T>
class Future {
 public:
  using State = future_internal::State<T>;

  Future() = default;
  explicit Future(std::shared_ptr<State> state) : state_(std::move(state)) {}
  Future(Future&&) noexcept = default;
  Future& operator=(Future&&) noexcept = default;

  bool Valid() const { return state_ != nullptr; }
  bool Ready() const NO_THREAD_SAFETY_ANALYSIS {
    if (!state_) return false;
    SpinGuard guard(state_->lock);
    return state_->ready;
  }

  // The value of a ready future (rethrows its exception). Consumes it.
  T Get() NO_THREAD_SAFETY_ANALYSIS {
    if (!state_) throw FutureAlreadyRetrieved();
    auto state = std::move(state_);
    std::exception_ptr error;
    {
      SpinGuard guard(state->lock);
      if (!state->ready) throw FutureAlreadyRetrieved();
      error = state->error;
    }
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<T>) return std::move(*state->value);
  }

  // Suspends the calling event until ready, then Get(). Event context only.
  T Block() {
    if (!state_) throw FutureAlreadyRetrieved();
    if (!Ready()) {
      auto state = state_;
      event::Block([state](event::Continuation k) {
        auto shared = std::make_shared<event::Continuation>(std::move(k));
        state->OnReady([shared] { shared->Resume(); });
      });
    }
    return Get();
  }

  // Runs f(Future<T>) on the calling core once ready; returns a future of
  // f's result (exceptions thrown by f go into it).
  template <typename F>
  auto Then(F&& f) -> Future<std::invoke_result_t<F, Future<T>>> {
    using R = std::invoke_result_t<F, Future<T>>;
    if (!state_) throw FutureAlreadyRetrieved();
    auto next = std::make_shared<future_internal::State<R>>();
    auto state = std::move(state_);
    int core = core::Current();
    state->OnReady([state, next, core, fn = Function<R(Future<T>)>(std::forward<F>(f))]() mutable {
      event::SpawnRemote(core, [state, next, fn = std::move(fn)]() mutable {
        try {
          if constexpr (std::is_void_v<R>) {
            fn(Future<T>(state));
            next->Complete(future_internal::Unit{}, nullptr);
          } else {
            next->Complete(fn(Future<T>(state)), nullptr);
          }
        } catch (...) {
          next->Complete(std::nullopt, std::current_exception());
        }
      });
    });
    return Future<R>(next);
  }

 private:
  std::shared_ptr<State> state_;
};

template <typename T>
class Promise {
 public:
  Promise() : state_(std::make_shared<future_internal::State<T>>()) {}
  Promise(Promise&&) noexcept = default;
  Promise& operator=(Promise&& o) noexcept {
    Abandon();
    state_ = std::move(o.state_);
    retrieved_ = o.retrieved_;
    satisfied_ = o.satisfied_;
    return *this;
  }
  ~Promise() { Abandon(); }

  // Once per promise, before or after its value (as std::promise).
  // FutureAlreadyRetrieved the second time, or on a moved-from promise.
  Future<T> GetFuture() {
    if (retrieved_ || !state_) throw FutureAlreadyRetrieved();
    retrieved_ = true;
    return Future<T>(state_);
  }

  // One value or exception per promise: PromiseAlreadySatisfied the second
  // time (FutureAlreadyRetrieved on a moved-from promise). Any core; not
  // concurrently with another SetValue/SetException of this promise.
  template <typename U = T, typename = std::enable_if_t<!std::is_void_v<U>>>
  void SetValue(U value) {
    Satisfy()->Complete(std::move(value), nullptr);
  }
  template <typename U = T, typename = std::enable_if_t<std::is_void_v<U>>>
  void SetValue() {
    Satisfy()->Complete(future_internal::Unit{}, nullptr);
  }
  void SetException(std::exception_ptr e) { Satisfy()->Complete(std::nullopt, std::move(e)); }

 private:
  // The state, kept (a later GetFuture takes it; only the flag changes, so
  // a GetFuture on another core does not race with it); the copy returned
  // keeps it alive while Complete runs the waiter, which may destroy this.
  std::shared_ptr<future_internal::State<T>> Satisfy() {
    if (!state_) throw FutureAlreadyRetrieved();
    if (satisfied_) throw PromiseAlreadySatisfied();
    satisfied_ = true;
    return state_;
  }
  void Abandon() {
    if (state_ && !satisfied_) state_->Complete(std::nullopt, std::make_exception_ptr(BrokenPromise()));
    state_.reset();
  }

  std::shared_ptr<future_internal::State<T>> state_;
  bool retrieved_ = false;
  bool satisfied_ = false;
};

template <typename T>
Future<std::decay_t<T>> MakeReadyFuture(T&& value) {
  Promise<std::decay_t<T>> p;
  auto f = p.GetFuture();
  p.SetValue(std::forward<T>(value));
  return f;
}

inline Future<void> MakeReadyFuture() {
  Promise<void> p;
  auto f = p.GetFuture();
  p.SetValue();
  return f;
}

}  // namespace fox
