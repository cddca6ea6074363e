// How values and closures cross places (DESIGN.md "APGAS model"): a closure
// sent to another place is deep-copied with its captures (X10 semantics).
//
// Values are written with cereal (Debian's libcereal-dev), through two
// archives of our own over byte vectors: OutArchive appends to a vector,
// InArchive reads a message and throws cereal::Exception instead of reading
// past its end, and refuses a container size larger than the bytes left (a
// malformed message cannot make it allocate without bound).
//
// What can be sent (checked at compile time, with a readable error):
//   - a type cereal can serialize (a `serialize` member or function, the
//     standard containers and strings of such types, arithmetic types), or
//   - a trivially copyable type (copied byte for byte): closures that
//     capture only such values (numbers, GlobalRef, plain structs),
// but not a raw pointer, which means nothing at another place (GlobalRef
// and SAS segments are the ways to name remote memory).
//
// A closure type is known at every place of the job by an id: the FNV-1a
// hash of its name as the compiler spells it in a template instantiation —
// for a lambda, its source file, line and column — so the hosted place 0
// and the node images built from the same sources agree on it. Closures
// register themselves before main (one static per instantiation).
// A lambda inside a template is spelled by where it is, without the
// template's arguments: two instantiations of it with the same argument
// types would share an id, which registration refuses (the program aborts
// at start, naming it). Such a closure's arguments must name the template
// parameters, or the closure must live outside the template (every app of
// the pool image is linked together: apps/CMakeLists.txt). A place
// joins with ClosureIds(): place 0 refuses it unless it has every closure
// place 0 has (the pool image holds every bundled app's, more than place 0's
// program), so places built from other sources are refused at the start.
#pragma once

// cereal's access.hpp includes <iostream>, which (libstdc++ before GCC 13)
// puts a static ios_base::Init in every file that includes it: the eight
// standard streams and the classic locale's facets built before main (4 ms
// of a node's boot under emulation). cereal uses nothing of it, so it is
// kept out here; a file that includes <iostream> itself still gets it.
#include <istream>
#include <ostream>
#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1
#define FOX_CEREAL_WITHOUT_IOSTREAM
#endif
#include <cereal/cereal.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#ifdef FOX_CEREAL_WITHOUT_IOSTREAM
#undef _GLIBCXX_IOSTREAM
#undef FOX_CEREAL_WITHOUT_IOSTREAM
#endif
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace fox::apgas {

class OutArchive : public cereal::OutputArchive<OutArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit OutArchive(std::vector<uint8_t>& out) : OutputArchive(this), out_(out) {}
  void saveBinary(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + size);
  }

 private:
  std::vector<uint8_t>& out_;
};

class InArchive : public cereal::InputArchive<InArchive, cereal::AllowEmptyClassElision> {
 public:
  InArchive(const uint8_t* data, size_t size) : InputArchive(this), p_(data), end_(data + size) {}
  void loadBinary(void* data, size_t size) {
    if (size > remaining()) throw cereal::Exception("apgas: message too short for what it claims to hold");
    if (size != 0) std::memcpy(data, p_, size);
    p_ += size;
  }
  size_t remaining() const { return size_t(end_ - p_); }
  const uint8_t* position() const { return p_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// cereal's glue for the two archives (as cereal/archives/binary.hpp does).
template <class T>
inline std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(OutArchive& ar, const T& t) {
  ar.saveBinary(std::addressof(t), sizeof t);
}
template <class T>
inline std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>> CEREAL_LOAD_FUNCTION_NAME(InArchive& ar,
                                                                                                       T& t) {
  ar.loadBinary(std::addressof(t), sizeof t);
}
// A bool is one byte, 0 or 1 (any other byte is no bool: a malformed message).
inline void CEREAL_LOAD_FUNCTION_NAME(InArchive& ar, bool& t) {
  uint8_t byte = 0;
  ar.loadBinary(&byte, 1);
  if (byte > 1) throw cereal::Exception("apgas: a bool that is neither 0 nor 1");
  t = byte == 1;
}
template <class Archive, class T>
inline CEREAL_ARCHIVE_RESTRICT(InArchive, OutArchive)
    CEREAL_SERIALIZE_FUNCTION_NAME(Archive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}
template <class T>
inline void CEREAL_SAVE_FUNCTION_NAME(OutArchive& ar, const cereal::SizeTag<T>& t) {
  ar(t.size);
}
template <class T>
inline void CEREAL_LOAD_FUNCTION_NAME(InArchive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  // Every element takes at least one byte: a size beyond what is left is a lie.
  if (uint64_t(t.size) > ar.remaining()) throw cereal::Exception("apgas: container size beyond the message");
}
template <class T>
inline void CEREAL_SAVE_FUNCTION_NAME(OutArchive& ar, const cereal::BinaryData<T>& bd) {
  ar.saveBinary(bd.data, size_t(bd.size));
}
template <class T>
inline void CEREAL_LOAD_FUNCTION_NAME(InArchive& ar, cereal::BinaryData<T>& bd) {
  ar.loadBinary(bd.data, size_t(bd.size));
}

namespace detail {

template <class T>
inline constexpr bool kCereal = cereal::traits::is_output_serializable<T, OutArchive>::value&&
    cereal::traits::is_input_serializable<T, InArchive>::value;

template <class T>
constexpr void CheckSendable() {
  static_assert(!std::is_pointer_v<T>,
                "apgas: a raw pointer sent to another place means nothing there: use GlobalRef<T> or a SAS segment");
  static_assert(!std::is_reference_v<T>, "apgas: values sent to another place are copies, not references");
  static_assert(kCereal<T> || std::is_trivially_copyable_v<T>,
                "apgas: a value sent to another place must be cereal-serializable or trivially copyable: capture "
                "numbers and plain structs by value, or pass strings and containers as arguments "
                "(asyncAt(place, fn, args...)) (see fox/apgas/serialization.h)");
}

// Writes / reads one sendable value.
template <class T>
void Save(OutArchive& ar, const T& value) {
  CheckSendable<T>();
  if constexpr (kCereal<T>) {
    ar(value);
  } else {
    ar.saveBinary(&value, sizeof value);
  }
}

// A T read from `ar`, in storage that does not need T to be default
// constructible (lambdas are not).
template <class T>
class Loaded {
 public:
  explicit Loaded(InArchive& ar) {
    CheckSendable<T>();
    if constexpr (kCereal<T> && std::is_default_constructible_v<T>) {
      new (storage_) T();
      constructed_ = true;
      ar(get());
    } else {
      static_assert(!kCereal<T> || std::is_trivially_copyable_v<T>,
                    "apgas: a cereal type sent between places needs a default constructor");
      ar.loadBinary(storage_, sizeof(T));
      constructed_ = true;
    }
  }
  ~Loaded() {
    if (constructed_) get().~T();
  }
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;
  T& get() { return *std::launder(reinterpret_cast<T*>(storage_)); }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
  bool constructed_ = false;
};

// ---- the closure table ----

// Runs a closure read from `in`; for `at`, writes its result to `result`.
using Runner = void (*)(InArchive& in, std::vector<uint8_t>* result);
// Registers a closure type by its name; returns its id. Before main.
uint64_t RegisterClosure(const char* name, Runner run);
// The runner of closure `id`, or nullptr if this program has none.
Runner FindClosure(uint64_t id);
// Every registered id, ascending.
std::vector<uint64_t> ClosureIds();

// Reads the arguments one by one, in order, then calls f with them.
template <class Fn, class... Rest>
struct Invoker;
template <class Fn>
struct Invoker<Fn> {
  template <class... L>
  static decltype(auto) Call(InArchive&, Fn& f, L&... loaded) {
    return f(loaded...);
  }
};
template <class Fn, class A0, class... Rest>
struct Invoker<Fn, A0, Rest...> {
  template <class... L>
  static decltype(auto) Call(InArchive& in, Fn& f, L&... loaded) {
    Loaded<A0> a(in);
    return Invoker<Fn, Rest...>::Call(in, f, loaded..., a.get());
  }
};

template <class F, class... A>
struct Closure {
  // The compiler's spelling of this instantiation: for a lambda, where it is.
  static const char* Name() { return __PRETTY_FUNCTION__; }
  static void Run(InArchive& in, std::vector<uint8_t>* result) {
    Loaded<F> f(in);
    using R = std::invoke_result_t<F&, A&...>;
    if constexpr (std::is_void_v<R>) {
      Invoker<F, A...>::Call(in, f.get());
    } else {
      R r = Invoker<F, A...>::Call(in, f.get());
      if (result != nullptr) {
        OutArchive out(*result);
        Save(out, r);
      }
    }
  }
  static const uint64_t id;
};
template <class F, class... A>
const uint64_t Closure<F, A...>::id = RegisterClosure(Closure<F, A...>::Name(), &Closure<F, A...>::Run);

// The bytes that carry `f(args...)` to another place: closure id, then f and args.
template <class F, class... A>
std::vector<uint8_t> Pack(const F& f, const A&... args) {
  std::vector<uint8_t> bytes;
  OutArchive out(bytes);
  out(Closure<F, A...>::id);
  Save(out, f);
  (Save(out, args), ...);
  return bytes;
}

// The bytes of `value` alone (what Unpack<T> reads back).
template <class T>
std::vector<uint8_t> Packed(const T& value) {
  std::vector<uint8_t> bytes;
  OutArchive out(bytes);
  Save(out, value);
  return bytes;
}

template <class R>
R Unpack(const std::vector<uint8_t>& bytes) {
  InArchive in(bytes.data(), bytes.size());
  Loaded<R> r(in);
  return std::move(r.get());
}

}  // namespace detail
}  // namespace fox::apgas

CEREAL_REGISTER_ARCHIVE(fox::apgas::OutArchive)
CEREAL_REGISTER_ARCHIVE(fox::apgas::InArchive)
CEREAL_SETUP_ARCHIVE_TRAITS(fox::apgas::InArchive, fox::apgas::OutArchive)
