// Delegate operations (Grappa §3.3; issue 42): an operation on an element of
// a GlobalArray executed at the element's home place, on the one core that
// runs that place's delegates, so that it is atomic there without locks —
// against every other delegate to that place, from any place, this one
// included.
//
//   auto counts = GlobalArray<int64_t>::Make(1024);
//   int64_t before = delegate::fetch_add(counts[7], int64_t(1));   // blocking
//   finish([&] {
//     for (uint64_t i : keys) delegate::add_async(counts[i % 1024], int64_t(1));  // aggregated
//   });                                                            // all applied here
//   int64_t doubled = delegate::call(counts[7], [](int64_t& x, int64_t k) noexcept { return x *= k; }, int64_t(2));
//
// Blocking forms (read, write, fetch_add, fetch_xor, compare_exchange, call)
// return once the operation was applied, with its result; the calling
// activity blocks (not its core). Asynchronous forms (write_async,
// add_async, xor_async, call_async) return at once: the operation belongs
// to the calling activity's finish, which returns only after it was applied
// (or reports its failure). Asynchronous operations from one core to one
// place go together in a batch (SetBatchBytes: one network message by
// default), sent when full and when the issuing activity ends or blocks;
// a blocking operation to a place first sends this core's batches
// to it, so one activity's operations to one place apply in its order.
//
// Operations act on elements of trivially copyable types; add, xor and
// compare_exchange on integers of 4 or 8 bytes (add also on float and
// double). call runs f(element, args...) at the home: f is a captureless
// lambda (or another empty function object) declared noexcept, its
// arguments and result trivially copyable; it must not block.
//
// Failures: a home known dead throws DeadPlaceException (either form); one
// that dies with asynchronous operations on their way gives their finish
// one DeadPlaceException (however many there were); an index past the
// array's end throws std::out_of_range before anything is sent; an
// operation the home refuses (the array destroyed there, a function that
// program lacks) throws std::runtime_error saying why, or gives the finish
// one.
//
// Event context, inside an activity.
#pragma once

#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fox/apgas/global_memory.h"

namespace fox::apgas {

namespace detail {

// The operations (delegate_wire.h carries them).
enum class DelegateOp : uint8_t { kRead = 1, kWrite, kAdd, kXor, kCas, kCall };
// What add means for the element's bytes.
enum class DelegateType : uint8_t { kBytes = 0, kInteger, kFloat };

// A call's function at the home: runs it on `element` with the arguments'
// bytes, writes its result's bytes.
struct DelegateFn {
  void (*run)(void* element, const uint8_t* args, uint8_t* result);
  uint32_t elem_bytes, arg_bytes, result_bytes;
};
// Registers a function by its name (a lambda's file, line and column, as in
// serialization.h's closures); returns its id. Before main.
uint64_t RegisterDelegateFn(const char* name, DelegateFn fn);
// The function `id`, or nullptr if this program has none.
const DelegateFn* FindDelegateFn(uint64_t id);

template <class T, class F, class... A>
struct DelegateCall {
  using R = std::invoke_result_t<const F&, T&, const A&...>;
  static constexpr uint32_t kResultBytes =
      std::is_void_v<R> ? 0 : uint32_t(sizeof(std::conditional_t<std::is_void_v<R>, char, R>));
  static constexpr uint32_t kArgBytes = (uint32_t(sizeof(A)) + ... + 0);
  static const char* Name() { return __PRETTY_FUNCTION__; }
  static void Run(void* element, const uint8_t* args, uint8_t* result) {
    Invoke(element, args, result, std::index_sequence_for<A...>{});
  }
  template <size_t... I>
  static void Invoke(void* element, const uint8_t* bytes, uint8_t* result, std::index_sequence<I...>) {
    std::tuple<A...> args;
    size_t offset = 0;
    ((std::memcpy(&std::get<I>(args), bytes + offset, sizeof(A)), offset += sizeof(A)), ...);
    (void)bytes;
    const F f{};
    if constexpr (std::is_void_v<R>) {
      f(*static_cast<T*>(element), std::get<I>(args)...);
      (void)result;
    } else {
      R r = f(*static_cast<T*>(element), std::get<I>(args)...);
      std::memcpy(result, &r, sizeof(R));
    }
  }
  static const uint64_t id;
};
template <class T, class F, class... A>
const uint64_t DelegateCall<T, F, A...>::id = RegisterDelegateFn(DelegateCall<T, F, A...>::Name(),
                                                                 DelegateFn{&DelegateCall<T, F, A...>::Run,
                                                                            uint32_t(sizeof(T)),
                                                                            DelegateCall<T, F, A...>::kArgBytes,
                                                                            DelegateCall<T, F, A...>::kResultBytes});

// One operation as bytes: the runtime's side (delegate.cc).
struct DelegateTarget {
  uint32_t place;
  uint64_t region, index;
  uint32_t elem_bytes;
};
template <class T>
DelegateTarget TargetOf(const GlobalAddress<T>& a) {
  return {a.place.id, a.region, a.index, uint32_t(sizeof(T))};
}
// Blocking: applies `op` and copies its result (result_bytes) to `result`.
void DelegateBlocking(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn, const void* args,
                      uint32_t arg_bytes, void* result, uint32_t result_bytes);
// Asynchronous, under the current finish.
void DelegateAsync(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn, const void* args,
                   uint32_t arg_bytes);

template <class T>
constexpr DelegateType ArithmeticType() {
  static_assert((std::is_integral_v<T> || std::is_floating_point_v<T>)&&(sizeof(T) == 4 || sizeof(T) == 8),
                "delegate: add works on integers and floating point values of 4 or 8 bytes");
  return std::is_floating_point_v<T> ? DelegateType::kFloat : DelegateType::kInteger;
}
template <class T>
constexpr DelegateType IntegerType() {
  static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                "delegate: xor and compare_exchange work on integers of 4 or 8 bytes");
  return DelegateType::kInteger;
}
template <class F, class... A>
constexpr void CheckCall() {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "delegate::call: the function must be captureless (pass what it needs as arguments)");
  static_assert((std::is_trivially_copyable_v<A> && ...), "delegate::call: arguments must be trivially copyable");
}
template <class T, class F, class... A>
void PackArgs(uint8_t* out, const A&... args) {
  size_t offset = 0;
  ((std::memcpy(out + offset, &args, sizeof(A)), offset += sizeof(A)), ...);
  (void)out;
}

}  // namespace detail

namespace delegate {

template <class T>
T read(const GlobalAddress<T>& a) {
  T value;
  detail::DelegateBlocking(detail::TargetOf(a), detail::DelegateOp::kRead, detail::DelegateType::kBytes, 0, nullptr, 0,
                           &value, sizeof(T));
  return value;
}

template <class T>
void write(const GlobalAddress<T>& a, const T& value) {
  detail::DelegateBlocking(detail::TargetOf(a), detail::DelegateOp::kWrite, detail::DelegateType::kBytes, 0, &value,
                           sizeof(T), nullptr, 0);
}

// The element's value before adding `value`.
template <class T>
T fetch_add(const GlobalAddress<T>& a, T value) {
  T before;
  detail::DelegateBlocking(detail::TargetOf(a), detail::DelegateOp::kAdd, detail::ArithmeticType<T>(), 0, &value,
                           sizeof(T), &before, sizeof(T));
  return before;
}

template <class T>
T fetch_xor(const GlobalAddress<T>& a, T value) {
  T before;
  detail::DelegateBlocking(detail::TargetOf(a), detail::DelegateOp::kXor, detail::IntegerType<T>(), 0, &value,
                           sizeof(T), &before, sizeof(T));
  return before;
}

// Sets the element to `desired` if it equals `expected`; returns the value
// it had (== expected: it was set).
template <class T>
T compare_exchange(const GlobalAddress<T>& a, T expected, T desired) {
  T both[2] = {expected, desired}, before;
  detail::DelegateBlocking(detail::TargetOf(a), detail::DelegateOp::kCas, detail::IntegerType<T>(), 0, both,
                           sizeof(both), &before, sizeof(T));
  return before;
}

// f(element, args...) at the element's home; its value.
template <class T, class F, class... A>
auto call(const GlobalAddress<T>& a, const F&, const A&... args) -> std::invoke_result_t<const F&, T&, const A&...> {
  detail::CheckCall<F, A...>();
  static_assert(std::is_nothrow_invocable_v<const F&, T&, const A&...>,
                "delegate::call: the function must be declared noexcept (it runs in the home's message handler)");
  using Call = detail::DelegateCall<T, F, A...>;
  using R = typename Call::R;
  uint8_t packed[Call::kArgBytes + 1];
  detail::PackArgs<T, F>(packed, args...);
  if constexpr (std::is_void_v<R>) {
    detail::DelegateBlocking(detail::TargetOf(a), detail::DelegateOp::kCall, detail::DelegateType::kBytes, Call::id,
                             packed, Call::kArgBytes, nullptr, 0);
  } else {
    static_assert(std::is_trivially_copyable_v<R>, "delegate::call: the result must be trivially copyable");
    R r;
    detail::DelegateBlocking(detail::TargetOf(a), detail::DelegateOp::kCall, detail::DelegateType::kBytes, Call::id,
                             packed, Call::kArgBytes, &r, sizeof(R));
    return r;
  }
}

template <class T>
void write_async(const GlobalAddress<T>& a, const T& value) {
  detail::DelegateAsync(detail::TargetOf(a), detail::DelegateOp::kWrite, detail::DelegateType::kBytes, 0, &value,
                        sizeof(T));
}

template <class T>
void add_async(const GlobalAddress<T>& a, T value) {
  detail::DelegateAsync(detail::TargetOf(a), detail::DelegateOp::kAdd, detail::ArithmeticType<T>(), 0, &value,
                        sizeof(T));
}

template <class T>
void xor_async(const GlobalAddress<T>& a, T value) {
  detail::DelegateAsync(detail::TargetOf(a), detail::DelegateOp::kXor, detail::IntegerType<T>(), 0, &value, sizeof(T));
}

// f(element, args...) at the element's home, under the current finish; f
// returns nothing.
template <class T, class F, class... A>
void call_async(const GlobalAddress<T>& a, const F&, const A&... args) {
  detail::CheckCall<F, A...>();
  static_assert(std::is_nothrow_invocable_v<const F&, T&, const A&...>,
                "delegate::call_async: the function must be declared noexcept");
  using Call = detail::DelegateCall<T, F, A...>;
  static_assert(std::is_void_v<typename Call::R>, "delegate::call_async: nobody receives the function's value");
  uint8_t packed[Call::kArgBytes + 1];
  detail::PackArgs<T, F>(packed, args...);
  detail::DelegateAsync(detail::TargetOf(a), detail::DelegateOp::kCall, detail::DelegateType::kBytes, Call::id, packed,
                        Call::kArgBytes);
}

// How many bytes a batch of asynchronous operations to one place may reach
// before it is sent: one network message (the default, am's
// kMaxMessageBytes), less (down to one operation per batch), or more, each
// then sent as a large message (what a larger batch costs and saves: make
// bench B=irregular). This place only; any context.
void SetBatchBytes(size_t bytes);
size_t BatchBytes();

// This place's counters.
struct Stats {
  uint64_t batches_sent = 0, ops_sent = 0, calls_sent = 0;         // as the issuer
  uint64_t batches_applied = 0, ops_applied = 0, ops_refused = 0;  // as the home
  uint64_t malformed = 0;                                          // messages that were not delegates
};
Stats stats();

}  // namespace delegate
}  // namespace fox::apgas
