// Function<R(Args...)>: a move-only callable wrapper (std::function needs
// copyable callables; continuations, promises and unique_ptrs are not).
// Callables up to kInline bytes live inside the object; larger ones on the
// heap. Invoking an empty Function is a bug (asserted with a trap).
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace fox {

template <typename Signature>
class Function;

template <typename R, typename... Args>
class Function<R(Args...)> {
 public:
  static constexpr size_t kInline = 48;

  Function() = default;
  Function(std::nullptr_t) {}

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, Function> && std::is_invocable_r_v<R, D&, Args...>>>
  Function(F&& f) {
    if constexpr (sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<D>) {
      new (storage_) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      *reinterpret_cast<D**>(storage_) = new D(std::forward<F>(f));
      ops_ = &kHeapOps<D>;
    }
  }

  Function(Function&& other) noexcept : ops_(other.ops_) {
    if (ops_ != nullptr) ops_->move(other.storage_, storage_);
    other.ops_ = nullptr;
  }
  Function& operator=(Function&& other) noexcept {
    if (this != &other) {
      Reset();
      ops_ = other.ops_;
      if (ops_ != nullptr) ops_->move(other.storage_, storage_);
      other.ops_ = nullptr;
    }
    return *this;
  }
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;
  ~Function() { Reset(); }

  explicit operator bool() const { return ops_ != nullptr; }

  R operator()(Args... args) {
    if (ops_ == nullptr) __builtin_trap();
    return ops_->invoke(storage_, std::forward<Args>(args)...);
  }

  void Reset() {
    if (ops_ != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    R (*invoke)(void*, Args&&...);
    void (*move)(void* from, void* to);
    void (*destroy)(void*);
  };

  template <typename D>
  static constexpr Ops kInlineOps = {
      [](void* s, Args&&... args) -> R { return (*static_cast<D*>(s))(std::forward<Args>(args)...); },
      [](void* from, void* to) {
        new (to) D(std::move(*static_cast<D*>(from)));
        static_cast<D*>(from)->~D();
      },
      [](void* s) { static_cast<D*>(s)->~D(); }};

  template <typename D>
  static constexpr Ops kHeapOps = {
      [](void* s, Args&&... args) -> R { return (**static_cast<D**>(s))(std::forward<Args>(args)...); },
      [](void* from, void* to) { *static_cast<D**>(to) = *static_cast<D**>(from); },
      [](void* s) { delete *static_cast<D**>(s); }};

  alignas(std::max_align_t) unsigned char storage_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace fox
