// The kernel's own `fox.*` boot arguments, and the table every layer's
// registrations make (cmdline.h, FOX_BOOT_ARG): net/, ebb/ and apgas/
// register theirs in their own boot_args.cc.
#include "fox/boot_args.h"
#include "fox/cmdline.h"

// The linker's bounds of the section FOX_BOOT_ARG fills (weak: a program
// that registered nothing has an empty table).
extern "C" const fox::BootArgSpec __start_fox_boot_args[] __attribute__((weak));
extern "C" const fox::BootArgSpec __stop_fox_boot_args[] __attribute__((weak));

namespace fox {

FOX_BOOT_ARG(log, "fox.log", BootArgKind::kEnum, "debug|info|warn|error", 0, 0, "console log level (default info)");
FOX_BOOT_ARG(stack, "fox.stack", BootArgKind::kSize, nullptr, 64 << 10, 1ull << 30,
             "stack size of the application's main (default 1M)", true);
FOX_BOOT_ARG(kcores, "fox.kcores", BootArgKind::kUInt, nullptr, 1, 256,
             "number of kernel cores (default 1); the other cores are application cores", true);
FOX_BOOT_ARG(
    idle, "fox.idle", BootArgKind::kEnum, "mwait|hlt|auto", 0, 0,
    "how idle cores wait: MONITOR/MWAIT on a doorbell, HLT + wake-up IPI, or auto (MWAIT where the CPU has it)", true);
FOX_BOOT_ARG(profile, "fox.profile", BootArgKind::kUInt, nullptr, 2, 8192,
             "sample the kernel cores HZ times a second (a power of two) and print where they spent their time at exit",
             true);
FOX_BOOT_ARG(smp_deaf, "fox.smp_deaf", BootArgKind::kUInt, nullptr, 1, 255,
             "for tests: the N-th processor after the boot one (MADT order) is not sent its SIPI, as one that does not "
             "answer: the cores after it are numbered down",
             true);

std::span<const BootArgSpec> BootArgSpecs() {
  if (__start_fox_boot_args == nullptr || __stop_fox_boot_args == nullptr) return {};
  return {__start_fox_boot_args, __stop_fox_boot_args};
}

}  // namespace fox
