// The table of every `fox.*` boot argument. A key is added here when the code
// that honours it lands, never before: an accepted argument must do something.
#include "fox/boot_args.h"
#include "fox/cmdline.h"

namespace fox {

const BootArgSpec kBootArgSpecs[] = {
    {"fox.log", BootArgKind::kEnum, "debug|info|warn|error", 0, 0, "console log level (default info)"},
    {"fox.stack", BootArgKind::kSize, nullptr, 64 << 10, 1ull << 30,
     "stack size of the application's main (default 1M)"},
    {"fox.kcores", BootArgKind::kUInt, nullptr, 1, 256,
     "number of kernel cores (default 1); the other cores are application cores"},
    {"fox.idle", BootArgKind::kEnum, "mwait|hlt|auto", 0, 0,
     "how idle cores wait: MONITOR/MWAIT on a doorbell, HLT + wake-up IPI, or auto (MWAIT where the CPU has it)"},
    {"fox.node", BootArgKind::kUInt, nullptr, 0, 0x7FFFFFFF, "this node's id in its job (given by the frontend)"},
    {"fox.ip", BootArgKind::kIpv4Prefix, nullptr, 0, 0,
     "static IPv4 address and prefix length, A.B.C.D/NN (default: DHCP)"},
    {"fox.gw", BootArgKind::kIpv4, nullptr, 0, 0,
     "IPv4 gateway A.B.C.D (with fox.ip; with DHCP, used if the server offers none)"},
    {"fox.job", BootArgKind::kUInt, nullptr, 1, 0x7FFFFFFFFFFFFFFFull,
     "job id carried by every active-message frame (default 1)"},
    {"fox.key", BootArgKind::kString, nullptr, 0, 0,
     "job key for the frame MAC, 32 hex digits (default: a development key from the job id)"},
    {"fox.amport", BootArgKind::kUInt, nullptr, 1, 65535, "UDP port of the active-message transport (default 7700)"},
    {"fox.peers", BootArgKind::kString, nullptr, 0, 0,
     "active-message peers, ID@A.B.C.D[:PORT],... (more join at run time)"},
    {"fox.aggregate", BootArgKind::kEnum, "on|off", 0, 0,
     "aggregate small active messages into full frames (default on)"},
    {"fox.probe_ms", BootArgKind::kUInt, nullptr, 10, 60'000,
     "membership: the period in ms in which a node probes one peer (default 150; emulated clusters: longer)"},
    {"fox.suspect_ms", BootArgKind::kUInt, nullptr, 100, 600'000,
     "membership: ms a suspected peer has to refute it before it is declared dead (default 1000)"},
    {"fox.join_ms", BootArgKind::kUInt, nullptr, 1'000, 3'600'000,
     "membership: ms a peer never heard from has to join before it is declared dead (default 60000)"},
    {"fox.finish", BootArgKind::kEnum, "none|place0|optimistic", 0, 0,
     "APGAS jobs: the finish mode, the same at every place (default none; apgas/runtime.h)"},
    {"fox.spares", BootArgKind::kUInt, nullptr, 0, 1024,
     "APGAS jobs: how many of the job's places are spares (the last ones; PlaceManager's default)"},
    {"fox.joining", BootArgKind::kEnum, "0|1", 0, 0,
     "1: this node joins a job that runs already (the frontend grows it): apps join their Dht instead of "
     "starting it"},
    {"fox.dht_cores", BootArgKind::kUInt, nullptr, 1, 256,
     "the Dht's shards lie on the first N kernel cores (default: all of them; ebb/include/fox/ebb/dht.h)"},
    {"fox.app", BootArgKind::kString, nullptr, 0, 0,
     "the app the pool image (fox.elf, every app) starts: its name (given by the frontend)"},
    {"fox.profile", BootArgKind::kUInt, nullptr, 2, 8192,
     "sample the kernel cores HZ times a second (a power of two) and print where they spent their time at exit"},
    {"fox.smp_deaf", BootArgKind::kUInt, nullptr, 1, 255,
     "for tests: the N-th processor after the boot one (MADT order) is not sent its SIPI, as one that does not "
     "answer: the cores after it are numbered down"},
};
const size_t kNumBootArgSpecs = sizeof kBootArgSpecs / sizeof kBootArgSpecs[0];

// Applied once at boot (cores, idle mode, main's stack, the interface, the
// node and its key, the profiler): a pool node taking a job without a reboot keeps them.
const char* const kBootTimeArgs[] = {"fox.stack", "fox.kcores", "fox.idle", "fox.smp_deaf", "fox.node",
                                     "fox.ip",    "fox.gw",     "fox.key",  "fox.profile",  nullptr};

}  // namespace fox
