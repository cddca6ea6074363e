// The C++ runtime on a compute node: exceptions, RTTI, static constructors,
// thread_local, the standard library, clocks.
#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "fox/clock.h"
#include "fox/event.h"
#include "fox/exit.h"
#include "vmtest.h"

namespace vmtest {
namespace {

struct TestError : std::runtime_error {
  int code;
  TestError(const std::string& what, int c) : std::runtime_error(what), code(c) {}
};

[[gnu::noinline]] int Level3(int x) {
  if (x > 2) throw TestError("depth " + std::to_string(x), x * 10);
  return x;
}
[[gnu::noinline]] int Level2(int x) {
  std::function<int(int)> f = [](int y) { return Level3(y + 1) + 1; };
  return f(x) + 1;
}
[[gnu::noinline]] int Level1(int x) {
  std::vector<std::string> live(3, "destructor must run during unwinding");
  return Level2(x + 1) + int(live.size());
}

int g_destroyed = 0;
struct Guard {
  ~Guard() { ++g_destroyed; }
};
[[gnu::noinline]] void ThrowWithGuards() {
  Guard a, b;
  throw std::out_of_range("guards");
}

}  // namespace

int Exceptions(int, char**) {
  try {
    Level1(1);
    CHECK(false);
  } catch (const TestError& e) {
    std::printf("caught TestError '%s' code %d\n", e.what(), e.code);
    CHECK(std::string(e.what()) == "depth 3" && e.code == 30);
  }
  try {
    ThrowWithGuards();
  } catch (const std::logic_error& e) {  // caught through a base class
    CHECK(std::string(e.what()) == "guards");
  }
  CHECK(g_destroyed == 2);
  std::exception_ptr saved;
  try {
    throw 42;
  } catch (...) {
    saved = std::current_exception();
  }
  try {
    std::rethrow_exception(saved);
  } catch (int v) {
    CHECK(v == 42);
  }
  try {
    try {
      throw std::runtime_error("inner");
    } catch (...) {
      std::throw_with_nested(std::logic_error("outer"));
    }
  } catch (const std::logic_error& e) {
    try {
      std::rethrow_if_nested(e);
    } catch (const std::runtime_error& inner) {
      CHECK(std::string(inner.what()) == "inner");
    }
  }
  bool caught = false;
  try {
    std::vector<int> v(3);
    (void)v.at(7);
  } catch (const std::out_of_range&) {
    caught = true;
  }
  CHECK(caught);
  return 0;
}

namespace {
struct Shape {
  virtual ~Shape() = default;
  virtual double Area() const = 0;
};
struct Square : Shape {
  double side = 2;
  double Area() const override { return side * side; }
};
struct Circle : Shape {
  double Area() const override { return 3; }
};
struct Mixin {
  virtual ~Mixin() = default;
};
struct Both : Square, Mixin {};
}  // namespace

int Rtti(int, char**) {
  std::unique_ptr<Shape> s = std::make_unique<Both>();
  CHECK(dynamic_cast<Square*>(s.get()) != nullptr);
  CHECK(dynamic_cast<Circle*>(s.get()) == nullptr);
  Mixin* m = dynamic_cast<Mixin*>(s.get());  // cross cast
  CHECK(m != nullptr && dynamic_cast<Shape*>(m) == s.get());
  Shape& shape = *s;
  CHECK(typeid(shape) == typeid(Both));
  std::printf("typeid: %s\n", typeid(shape).name());
  bool threw = false;
  try {
    Shape& ref = *s;
    (void)dynamic_cast<Circle&>(ref);
  } catch (const std::bad_cast&) {
    threw = true;
  }
  CHECK(threw);
  return 0;
}

namespace {
int g_ctor_order[3];
int g_ctor_count = 0;
struct Registered {
  explicit Registered(int id) { g_ctor_order[g_ctor_count++] = id; }
  ~Registered() { std::printf("static destructor %d ran\n", g_ctor_order[0]); }
};
Registered g_first(7);
std::map<std::string, int> g_table = {{"one", 1}, {"two", 2}};
}  // namespace

int StaticCtors(int, char**) {
  CHECK(g_ctor_count == 1 && g_ctor_order[0] == 7);
  CHECK(g_table.size() == 2 && g_table["two"] == 2);
  static Registered local(9);  // function-local static: guarded init
  CHECK(g_ctor_count == 2);
  return 0;
}

namespace {
thread_local int tls_counter = 41;
thread_local std::string tls_name = "per-core";
thread_local char tls_zeroed[64];
}  // namespace

int ThreadLocal(int, char**) {
  CHECK(tls_counter == 41);
  CHECK(tls_name == "per-core");
  for (char c : tls_zeroed) CHECK(c == 0);
  ++tls_counter;
  tls_name += " data";
  CHECK(tls_counter == 42 && tls_name == "per-core data");
  uintptr_t fs;
  asm volatile("movq %%fs:0, %0" : "=r"(fs));  // the TLS block is reached through FS
  CHECK(reinterpret_cast<uintptr_t>(&tls_counter) < fs && fs - reinterpret_cast<uintptr_t>(&tls_counter) < 65536);
  return 0;
}

int StdLib(int, char**) {
  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 0);
  std::reverse(v.begin(), v.end());
  std::sort(v.begin(), v.end());
  CHECK(v.front() == 0 && v.back() == 999 && std::accumulate(v.begin(), v.end(), 0) == 499500);
  std::unordered_map<std::string, int> counts;
  for (int i = 0; i < 10000; ++i) counts["k" + std::to_string(i % 100)]++;
  CHECK(counts.size() == 100 && counts["k7"] == 100);
  std::ostringstream os;
  os << "pi=" << 3.25 << " hex=" << std::hex << 255;
  CHECK(os.str() == "pi=3.25 hex=ff");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f|%5d|%s", 2.5, 42, "x");
  CHECK(std::string(buf) == "2.500|   42|x");
  std::function<int(int)> fib = [&](int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); };
  CHECK(fib(20) == 6765);
  auto shared = std::make_shared<std::vector<int>>(5, 1);
  std::weak_ptr<std::vector<int>> weak = shared;
  CHECK(weak.lock()->size() == 5);
  shared.reset();
  CHECK(weak.expired());
  std::cout << "iostream works: " << 12345 << std::endl;
  return 0;
}

int Clock(int, char**) {
  using namespace std::chrono;
  // The RTC is read when the wall clock is first asked for (x86_64/rtc.h):
  // asked on every core at once, every core gets the same epoch.
  auto walls =
      RunOnEveryCore([] { return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count(); });
  auto [low, high] = std::minmax_element(walls.begin(), walls.end());
  std::printf("system_clock on %d cores at once: within %lld ms\n", int(walls.size()), (long long)(*high - *low));
  CHECK(*low > 1600000000000ll && *high - *low < 1000);
  // steady_clock runs at the kernel clock's rate: within the kernel clock's
  // reading around it (the bound holds however long the host stalls the
  // emulated machine meanwhile).
  uint64_t k0 = fox::clock::NowNs();
  auto t0 = steady_clock::now();
  uint64_t spin = fox::clock::NowNs();
  while (fox::clock::NowNs() - spin < 20000000) {
  }
  auto t1 = steady_clock::now();
  uint64_t k1 = fox::clock::NowNs();
  auto us = duration_cast<microseconds>(t1 - t0).count();
  std::printf("steady_clock measured %lld us for a 20000 us spin (kernel clock: %llu us around it)\n", (long long)us,
              (unsigned long long)((k1 - k0) / 1000));
  CHECK(us >= 20000 && uint64_t(us) * 1000 <= k1 - k0);
  auto last = steady_clock::now();
  for (int i = 0; i < 100000; ++i) {
    auto now = steady_clock::now();
    CHECK(now >= last);
    last = now;
  }
  auto wall = system_clock::to_time_t(system_clock::now());
  std::printf("system_clock: %lld\n", (long long)wall);
  CHECK(wall > 1600000000);  // the RTC gave a date after 2020
  return 0;
}

// std::this_thread::sleep_for blocks only the calling event: other events
// run on the same core meanwhile.
int Sleep(int, char**) {
  auto ran = std::make_shared<int>(0);
  fox::event::Spawn([ran] { ++*ran; });
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto slept = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::printf("slept %lld ms; other events ran meanwhile: %d\n", (long long)slept, *ran);
  CHECK(slept >= 30 && slept < 500);
  CHECK(*ran == 1);
  return 0;
}

int ExitCode(int, char**) {
  std::printf("calling fox::Exit(3)\n");
  fox::Exit(3);
}

}  // namespace vmtest
