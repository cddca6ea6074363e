// The native boot sequence (STYLE.md §3): boot.S enters long mode and calls
// KernelMain, which brings the subsystems up one after another and hands the
// boot core to the C library and the application's main.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "acpi.h"
#include "cpu.h"
#include "cpu_init.h"
#include "exit_device.h"
#include "fox/boot_args.h"
#include "fox/cmdline.h"
#include "fox/core.h"
#include "fox/exit.h"
#include "fox/format.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "gdt.h"
#include "interrupts.h"
#include "ioapic.h"
#include "lapic.h"
#include "smp.h"
#include "memory.h"
#include "multiboot.h"
#include "paging.h"
#include "percpu.h"
#include "profile.h"
#include "runtime.h"
#include "serial.h"
#include "symbols.h"
#include "syscall.h"
#include "tsc.h"

namespace fox {
namespace {

boot::BootInfo g_boot_info;
CommandLine g_cmdline;
percpu::CoreLocal g_boot_core;

// The loader's structures are below 4 GiB, which the boot page tables map.
void ParseBootInfo(uint32_t magic, uint32_t info) {
  boot::PhysWindow low_memory{reinterpret_cast<const uint8_t*>(0), 0, 4ull << 30};
  char error[160];
  auto r = boot::ParseBootInfo(magic, info, low_memory, &g_boot_info, error, sizeof error);
  if (!r.ok()) {
    Log(LogLevel::kError, "boot: %s", error);
    acpi::Init(nullptr);  // for the power-off: the BIOS areas may still hold the RSDP
    exit_device::PowerOff(kExitFailure);
  }
}

void ParseCommandLine() {
  auto r = g_cmdline.Parse(g_boot_info.cmdline, g_boot_info.cmdline_has_image);
  if (!r.ok()) {
    Log(LogLevel::kError, "boot: %s", g_cmdline.error());
    Log(LogLevel::kError, "fox: exit status %d (bad boot arguments)", kExitUsage);
    exit_device::PowerOff(kExitUsage);
  }
  if (const char* level = g_cmdline.Get("fox.log")) SetLogLevel(*ParseLogLevel(level));
}

// The boot's line at info level. The clock, the APIC timer and the cores are
// logged at debug level (on a real machine's serial port every byte holds the
// boot core for 87 us at 115200 baud); the idle mode, when it is chosen during
// the boot (no hypervisor, or fox.idle=hlt), still logs at info. The NICs log
// their lines when the network starts.
void PrintBanner() {
  char args[512];
  g_cmdline.Describe(args, sizeof args);
  Log(LogLevel::kInfo, "fox %s x86_64 | %d cores (%d online, %d kernel) | %llu MiB | %s | boot args: %s", FOX_VERSION,
      core::Present(), core::Online(), core::KernelCores(), (unsigned long long)(memory::UsableBytes() >> 20),
      g_boot_info.loader[0] ? g_boot_info.loader : (g_boot_info.protocol == 1 ? "multiboot1" : "multiboot2"),
      args[0] ? args : "(none)");
}

void StartCores() {
  auto r = smp::StartCores(int(g_cmdline.GetNumber("fox.kcores", 1)));
  if (!r.ok()) {
    Log(LogLevel::kError, "fox: exit status %d (bad boot arguments)", kExitUsage);
    exit_device::PowerOff(kExitUsage);
  }
}

void Check(Result<void> r, const char* step) {
  if (!r.ok()) Panic("boot: %s failed: %s", step, ErrorName(r.error()));
}

// TSC at the end of each boot step, logged (fox.log=debug) once the clock
// is calibrated: where boot time goes. The steps in the order they end.
enum Step : int {
  kStepCpu,
  kStepBootInfo,
  kStepAcpi,
  kStepCmdline,
  kStepMemory,
  kStepDevices,
  kStepSmpStart,
  kStepMainStack,
  kStepClock,
  kStepIdle,
  kStepFirstEvent,  // the boot core's event loop runs
  kStepSmpCollect,
  kNumSteps
};
constexpr const char* kStepNames[kNumSteps] = {"cpu",    "boot info", "acpi",        "cmdline",
                                               "memory", "devices",   "smp start",   "main stack",
                                               "clock",  "idle",      "first event", "smp collect"};
uint64_t g_step_tsc[kNumSteps];
// One store: under an emulator every instruction of the boot is translated
// once, and a mark is inlined at each of the steps (a mark that counted its
// own index took 139 of the boot's 5600 instructions).
template <Step s>
void Mark() {
  g_step_tsc[s] = x86::Rdtsc();
}
void LogStepTimes() {
  uint64_t prev = tsc::EntryTsc();
  for (int i = 0; i < kNumSteps; ++i) {
    LOG_DEBUG("boot: %-12s %6llu us", kStepNames[i], (unsigned long long)(tsc::TicksToNs(g_step_tsc[i] - prev) / 1000));
    prev = g_step_tsc[i];
  }
}

}  // namespace
}  // namespace fox

extern "C" [[noreturn]] void KernelMain(uint32_t magic, uint32_t info) {
  using namespace fox;
  serial::Init();
  tsc::Init();
  cpu::InitFeatures();
  percpu::InitCore(&g_boot_core, 0, true);
  gdt::InitBootCore();
  interrupts::Init();
  // The APIC timer's calibration (one-shot mode) runs from here until the
  // idle mode is chosen, which ends it (the boot page tables map the APIC).
  lapic::InitCore();
  g_boot_core.apic_id = lapic::Id();
  Mark<kStepCpu>();
  ParseBootInfo(magic, info);
  Mark<kStepBootInfo>();
  // Before the command line: a node whose arguments are rejected powers off
  // through ACPI like any other exit (without QEMU's debug-exit device).
  acpi::Init(g_boot_info.has_rsdp_copy ? g_boot_info.rsdp_copy : nullptr);  // reads the BIOS data area in page 0
  Mark<kStepAcpi>();
  ParseCommandLine();
  Mark<kStepCmdline>();
  percpu::SetPresent(acpi::CountProcessors());
  // Cores are numbered among the MADT's processors; one more in case the
  // boot processor is missing from the table.
  Check(memory::Init(g_boot_info, core::Present() + 1), "memory");
  Mark<kStepMemory>();
  percpu::SetOnline(0, &g_boot_core);
  syscall::Init();
  ioapic::Init();
  interrupts::InstallSystemHandlers();
  Mark<kStepDevices>();
  // The NICs are found and started when the network first starts (the PCI
  // scan: the devices step went from ~0.36 to ~0.16 ms under TCG, fox.log=debug),
  // and the RTC is read when the wall clock is first asked for.
  StartCores();  // they start while this core goes on; collected (numbered, online) before main
  Mark<kStepSmpStart>();
  // The main stack and the boot core's event loop, which need no clock; the
  // other cores start meanwhile (on an emulator, about 1 ms after their
  // SIPI), and are collected in the loop's first event, after the clock and
  // the idle mode: the boot core would otherwise wait for them.
  runtime::PrepareMain(g_cmdline, [] {
    Mark<kStepFirstEvent>();
    smp::CollectCores();
    Mark<kStepSmpCollect>();
    profile::Start();  // samples every core online
    // The banner from another core while this one starts the C library and
    // main: what the other cores print meanwhile is kept back until it is out.
    auto print = [] {
      LogStepTimes();
      PrintBanner();
      runtime::BannerPrinted();
      serial::Release();
    };
    if (core::Online() == 1) {
      print();
    } else {
      serial::HoldFor(1);  // before the job starts: it releases the hold
      smp::StartBootJob(print);
    }
  });
  Mark<kStepMainStack>();
  // The TSC's calibration against the PIT needs 5 ms from tsc::Init: done
  // as late as the steps above allow (none of them reads the clock), so
  // that the boot does not wait for it.
  tsc::FinishCalibration();
  Mark<kStepClock>();
  cpu::ChooseIdle();
  Mark<kStepIdle>();
  if (symbols::Count() == 0) LOG_WARN("boot: image has no symbol table; backtraces show addresses only");
  runtime::RunMain();
}

namespace fox {
[[noreturn]] void Exit(int status) { std::exit(status); }
// The arguments in force: the boot's, or the last ReplaceBootArgs's (the
// earlier ones are kept, so that pointers into them stay valid).
CommandLine* g_active = &g_cmdline;

const char* BootArg(std::string_view key) { return g_active->Get(key); }
uint64_t BootArgNumber(std::string_view key, uint64_t fallback) { return g_active->GetNumber(key, fallback); }
int AppArgc() { return g_active->argc(); }
char** AppArgv() { return g_active->argv(); }

Result<void> ReplaceBootArgs(std::string_view text, const char** error) {
  static char why[160];
  auto next = std::make_unique<CommandLine>();
  auto refuse = [&](const char* fmt, auto... args) -> Result<void> {
    std::snprintf(why, sizeof why, fmt, args...);
    if (error != nullptr) *error = why;
    return Error::kInvalidArgument;
  };
  if (!next->Parse(text, false).ok()) return refuse("%s", next->error());
  for (const BootArgSpec& spec : BootArgSpecs()) {
    if (!spec.boot_time) continue;
    const char* key = spec.key;
    const char* was = g_active->Get(key);
    const char* now = next->Get(key);
    if ((was == nullptr) != (now == nullptr) || (was != nullptr && std::strcmp(was, now) != 0)) {
      return refuse("%s=%s: the node booted with %s%s (a reboot applies it)", key, now != nullptr ? now : "(none)",
                    was != nullptr ? "" : "no ", was != nullptr ? was : key);
    }
  }
  if (const char* level = next->Get("fox.log")) SetLogLevel(*ParseLogLevel(level));
  g_active = next.release();  // kept: pointers into it stay valid
  return Ok();
}
}  // namespace fox
