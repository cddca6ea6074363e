// Costs of the Ebb object model (STYLE §7): a call through EbbRef on the hit
// path against a plain virtual call and a direct call, and the miss cost.
// Prints `ebb.metric value unit` lines (DESIGN.md, "make bench").
//
// Every call goes to a non-inlined method whose body only clobbers memory (no
// loop-carried dependency through memory to hide the call cost), and the
// object, the EbbRef and the virtual pointer are laundered through an empty
// asm each iteration, so the compiler can neither delete the calls nor hoist
// the table or vtable loads out of the loops. Each figure is the best of
// several runs of many iterations (loop overhead included, the same in all).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#ifdef FOX_BENCH_ON_RUNTIME
#include "fox/core.h"
#include "fox/event.h"
#include "fox/future.h"
#endif
#include <vector>

#include "../unit/ebb_test_cores.h"
#include "fox/ebb/ebb.h"

namespace {

using fox::ebb::EbbRef;
using Clock = std::chrono::steady_clock;

template <class T>
[[gnu::always_inline]] inline void Launder(T& value) {
  asm volatile("" : "+r"(value));
}

class Target : public fox::ebb::SharedEbb<Target> {
 public:
  [[gnu::noinline]] void Work(uint64_t x) { asm volatile("" : : "r"(x), "r"(this) : "memory"); }
};

class VirtualBase {
 public:
  virtual ~VirtualBase() = default;
  virtual void Work(uint64_t x) = 0;
};
class VirtualTarget final : public VirtualBase {
 public:
  [[gnu::noinline]] void Work(uint64_t x) override { asm volatile("" : : "r"(x), "r"(this) : "memory"); }
};

struct LeafRoot {};
class Leaf : public fox::ebb::MulticoreEbb<Leaf, LeafRoot> {
 public:
  explicit Leaf(LeafRoot&) {}
  [[gnu::noinline]] void Work(uint64_t x) { asm volatile("" : : "r"(x), "r"(this) : "memory"); }
};

constexpr uint64_t kIterations = 50'000'000;
constexpr int kRuns = 5;

template <class F>
double BestNsPerCall(F body) {
  double best = 1e30;
  for (int run = 0; run < kRuns; ++run) {
    auto start = Clock::now();
    body();
    double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    if (ns / kIterations < best) best = ns / kIterations;
  }
  return best;
}

[[gnu::noinline]] void HitLoop(EbbRef<Target> ref) {
  for (uint64_t i = 0; i < kIterations; ++i) {
    Launder(ref);
    ref->Work(i);
  }
}

[[gnu::noinline]] void VirtualLoop(VirtualBase* object) {
  for (uint64_t i = 0; i < kIterations; ++i) {
    Launder(object);
    object->Work(i);
  }
}

[[gnu::noinline]] void DirectLoop(Target* object) {
  for (uint64_t i = 0; i < kIterations; ++i) {
    Launder(object);
    object->Work(i);
  }
}

[[gnu::noinline]] void FarLoop(EbbRef<Target> ref, uint64_t iterations) {
  for (uint64_t i = 0; i < iterations; ++i) {
    Launder(ref);
    ref->Work(i);
  }
}

// First access of `refs` on a core that has its table already: one miss
// each (registry lookup, rep construction, install).
double MissNs(const std::vector<EbbRef<Leaf>>& refs, int core) {
  double ns = 0;
#ifdef FOX_BENCH_ON_RUNTIME
  // On the fox runtime (native or hosted): the measurement runs as an event
  // on core `core`; main blocks until it is done.
  auto done = std::make_shared<fox::Promise<void>>();
  auto finished = done->GetFuture();
  fox::event::SpawnRemote(core, [&, done] {
#else
  std::thread t([&] {
    fox::testing::SetCurrentCore(core);
#endif
    EbbRef<Target> warm = Target::Create();
    warm->Work(0);  // allocates this core's table outside the timing
    auto start = Clock::now();
    for (EbbRef<Leaf> ref : refs) {
      Launder(ref);
      ref->Work(1);
    }
    ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / refs.size();
    fox::ebb::Destroy(warm);
#ifdef FOX_BENCH_ON_RUNTIME
    done->SetValue();
  });
  finished.Block();
#else
    fox::ebb::EnterQuiescence();
  });
  t.join();
#endif
  return ns;
}

// Hands out ids beyond the direct table, for the far-map figure.
class FarSource : public fox::ebb::IdRangeSource {
 public:
  fox::Result<fox::ebb::IdRange> AcquireRange(uint32_t count) override {
    return fox::ebb::IdRange{fox::EbbId{1u << 24}, count};
  }
};

}  // namespace

int main() {
  EbbRef<Target> ref = Target::Create();
  ref->Work(0);  // install core 0's rep: the loops below only hit
  Target* direct = ref.Get();
  auto virtual_object = std::make_unique<VirtualTarget>();

  double hit = 1e30, virt = 1e30, dir = 1e30;
  for (int round = 0; round < 4; ++round) {  // interleaved, against drift
    hit = std::min(hit, BestNsPerCall([&] { HitLoop(ref); }));
    virt = std::min(virt, BestNsPerCall([&] { VirtualLoop(virtual_object.get()); }));
    dir = std::min(dir, BestNsPerCall([&] { DirectLoop(direct); }));
  }

  constexpr int kMissEbbs = 20000;
#ifdef FOX_BENCH_ON_RUNTIME
  const int kMissCores = fox::core::Online() - 1;
  if (kMissCores < 1) {
    std::printf("ebb bench: needs 2+ cores\n");
    return 2;
  }
#else
  constexpr int kMissCores = 4;
#endif
  std::vector<EbbRef<Leaf>> leaves;
  for (int i = 0; i < kMissEbbs; ++i) leaves.push_back(Leaf::Create());
  double miss = 0;
  for (int core = 1; core <= kMissCores; ++core) miss += MissNs(leaves, core) / kMissCores;

  FarSource far_source;
  fox::ebb::IdAllocator far_ids(&far_source);
  EbbRef<Target> far = Target::CreateAt(*far_ids.Allocate());
  far->Work(0);
  constexpr uint64_t kFarIterations = kIterations / 20;
  auto start = Clock::now();
  FarLoop(far, kFarIterations);
  double far_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kFarIterations;

  std::printf("ebb.hit_call %.2f ns\n", hit);
  std::printf("ebb.virtual_call %.2f ns\n", virt);
  std::printf("ebb.direct_call %.2f ns\n", dir);
  std::printf("ebb.miss %.0f ns\n", miss);
  std::printf("ebb.far_call %.1f ns\n", far_ns);
  std::printf("ebb.hit_vs_virtual_ratio %.2f x\n", hit / virt);

  for (EbbRef<Leaf> leaf : leaves) fox::ebb::Destroy(leaf);
  fox::ebb::Destroy(ref);
  fox::ebb::Destroy(far);
  fox::ebb::QuiescentPoint();
  return 0;
}
