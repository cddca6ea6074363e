#include "profile.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "exit_device.h"
#include "fox/boot_args.h"
#include "fox/core.h"
#include "fox/exit.h"
#include "fox/log.h"
#include "interrupts.h"
#include "lapic.h"
#include "memory.h"
#include "percpu.h"
#include "rtc.h"
#include "symbols.h"

namespace fox::profile {
namespace {

constexpr size_t kMaxSamples = 32768;  // per core: 4 s at 8192 Hz, 16 s at the default 2048
constexpr int kMaxCores = 16;          // the kernel cores sampled
constexpr int kTop = 25;

struct CoreSamples {
  uint64_t* rips = nullptr;      // kMaxSamples, allocated at Start
  std::atomic<size_t> count{0};  // taken (may exceed kMaxSamples: those are dropped)
};
CoreSamples g_cores[kMaxCores];
int g_sampled = 0;  // kernel cores sampled
unsigned g_hz = 0;
uint8_t g_vector = 0;

// Interrupt context, on the core sampled.
void Record(int core, const interrupts::Frame* frame) {
  CoreSamples& c = g_cores[core];
  size_t i = c.count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) c.rips[i] = frame->rip;
}

bool OnIpi(interrupts::Frame* frame) {
  int core = core::Current();
  if (core < g_sampled) Record(core, frame);
  return true;
}

// Core 0, from the RTC's interrupt.
void OnTick(interrupts::Frame* frame) {
  Record(0, frame);
  for (int core = 1; core < g_sampled; ++core) lapic::SendIpi(percpu::Of(core)->apic_id, g_vector);
}

}  // namespace

void Start() {
  uint64_t hz = BootArgNumber("fox.profile", 0);
  if (hz == 0) return;
  if ((hz & (hz - 1)) != 0) {  // the range (2 to 8192) is the boot argument table's
    LOG_ERROR("boot: bad boot argument 'fox.profile=%llu': a power of two from 2 to 8192 (samples a second)",
              (unsigned long long)hz);
    LOG_ERROR("fox: exit status %d (bad boot arguments)", kExitUsage);
    exit_device::PowerOff(kExitUsage);
  }
  int sampled = std::min(core::KernelCores(), kMaxCores);
  for (int core = 0; core < sampled; ++core) {
    g_cores[core].rips = static_cast<uint64_t*>(memory::AllocPagesZeroed(kMaxSamples * sizeof(uint64_t)));
    if (g_cores[core].rips == nullptr) {
      LOG_WARN("profile: no memory for core %d's samples; sampling cores 0-%d", core, core - 1);
      sampled = core;
      break;
    }
  }
  if (sampled == 0) return;
  if (sampled > 1) {
    auto vector = interrupts::AllocateVector(OnIpi);
    if (!vector.ok()) {
      LOG_WARN("profile: no interrupt vector left; sampling core 0 only");
      sampled = 1;
    } else {
      g_vector = *vector;
    }
  }
  g_sampled = sampled;
  g_hz = unsigned(hz);
  // 32768 >> (rate - 1) Hz.
  int rate = 1;
  while ((32768u >> (rate - 1)) > hz) ++rate;
  rtc::SetTickHook(OnTick);
  if (auto r = rtc::StartPeriodicInterrupt(rate); !r.ok()) {
    LOG_WARN("profile: cannot start the RTC's periodic interrupt: %s", ErrorName(r.error()));
    rtc::SetTickHook(nullptr);
    g_sampled = 0;
    return;
  }
  LOG_INFO("profile: sampling kernel cores 0-%d at %u Hz", sampled - 1, g_hz);
}

void Report() {
  if (g_sampled == 0) return;
  rtc::SetTickHook(nullptr);
  rtc::StopPeriodicInterrupt();
  for (int core = 0; core < g_sampled; ++core) {
    CoreSamples& c = g_cores[core];
    size_t taken = c.count.load(std::memory_order_relaxed);
    size_t n = std::min(taken, kMaxSamples);
    // Each sample becomes its function's name (one pointer per function in
    // the image's table), then equal names are counted.
    uint64_t* names = c.rips;
    for (size_t i = 0; i < n; ++i) {
      uint64_t offset;
      names[i] = reinterpret_cast<uint64_t>(symbols::Lookup(names[i], &offset));
    }
    std::sort(names, names + n);
    struct Entry {
      size_t count;
      uint64_t name;
    };
    Entry top[kTop] = {};
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j < n && names[j] == names[i]) ++j;
      Entry e{j - i, names[i]};
      for (int k = 0; k < kTop; ++k) {
        if (e.count > top[k].count) std::swap(e, top[k]);
      }
      i = j;
    }
    LOG_INFO("profile: core %d: %zu samples at %u Hz%s", core, taken, g_hz,
             taken > kMaxSamples ? " (the first kept)" : "");
    for (const Entry& e : top) {
      if (e.count == 0) break;
      const char* name = e.name != 0 ? reinterpret_cast<const char*>(e.name) : "(no symbol)";
      size_t permille = e.count * 1000 / n;
      LOG_INFO("profile:   %3zu.%zu%% %6zu  %s", permille / 10, permille % 10, e.count, name);
    }
  }
}

}  // namespace fox::profile
