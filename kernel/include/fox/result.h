// Result<T>: errors as values for kernel/ and net/ (STYLE.md §4).
//
// A Result<T> holds either a T or an Error. Errors are small, trivially
// copyable codes; callers propagate them with FOX_TRY / FOX_TRY_ASSIGN. Safe in
// any context (no allocation, no exceptions).
#pragma once

#include <cstdint>
#include <new>
#include <utility>

namespace fox {

enum class Error : uint16_t {
  kOk = 0,
  kNoMemory,         // an allocation could not be satisfied
  kInvalidArgument,  // malformed input from a caller or the outside world
  kNotFound,         // a named thing does not exist
  kOutOfRange,       // a value is outside what is allowed
  kAlreadyExists,    // a named thing exists already
  kUnsupported,      // the hardware or configuration lacks a feature
  kBusy,             // try again later
  kCorrupt,          // an invariant of stored data does not hold
  kTimedOut,         // no answer in the time allowed
  kPeerDead,         // the peer node is dead, or not a member (the transport's and Rpc's answer, never a store's)
};

// Human-readable name of an error; never null.
const char* ErrorName(Error e);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : has_value_(true) { new (&storage_) T(value); }
  Result(T&& value) : has_value_(true) { new (&storage_) T(std::move(value)); }
  Result(Error error) : has_value_(false), error_(error) {}
  Result(const Result& o) : has_value_(o.has_value_), error_(o.error_) {
    if (has_value_) new (&storage_) T(o.value());
  }
  Result(Result&& o) : has_value_(o.has_value_), error_(o.error_) {
    if (has_value_) new (&storage_) T(std::move(o.value()));
  }
  Result& operator=(const Result&) = delete;
  ~Result() {
    if (has_value_) value().~T();
  }

  bool ok() const { return has_value_; }
  explicit operator bool() const { return has_value_; }
  Error error() const { return has_value_ ? Error::kOk : error_; }

  T& value() { return *std::launder(reinterpret_cast<T*>(&storage_)); }
  const T& value() const { return *std::launder(reinterpret_cast<const T*>(&storage_)); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  T value_or(T fallback) const { return has_value_ ? value() : fallback; }

 private:
  bool has_value_;
  Error error_ = Error::kOk;
  alignas(T) unsigned char storage_[sizeof(T)];
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() : error_(Error::kOk) {}
  Result(Error error) : error_(error) {}
  bool ok() const { return error_ == Error::kOk; }
  explicit operator bool() const { return ok(); }
  Error error() const { return error_; }

 private:
  Error error_;
};

inline Result<void> Ok() { return Result<void>(); }

}  // namespace fox

// Evaluates a Result<void> expression; returns its error from the enclosing
// function if it failed.
#define FOX_TRY(expr)                                          \
  do {                                                         \
    auto fox_try_result_ = (expr);                             \
    if (!fox_try_result_.ok()) return fox_try_result_.error(); \
  } while (0)

#define FOX_CONCAT_INNER(a, b) a##b
#define FOX_CONCAT(a, b) FOX_CONCAT_INNER(a, b)

// `FOX_TRY_ASSIGN(auto x, Expr());` declares x from a Result<T> or returns
// the error from the enclosing function.
#define FOX_TRY_ASSIGN(decl, expr)                                                         \
  auto FOX_CONCAT(fox_try_, __LINE__) = (expr);                                            \
  if (!FOX_CONCAT(fox_try_, __LINE__).ok()) return FOX_CONCAT(fox_try_, __LINE__).error(); \
  decl = std::move(FOX_CONCAT(fox_try_, __LINE__).value())
