// The Ebbs' `fox.*` boot arguments (cmdline.h, FOX_BOOT_ARG).
#include "fox/cmdline.h"

// Hosted builds link fox_ebb as an archive: -Wl,-u of this (CMakeLists.txt)
// takes this file, which nothing calls.
extern "C" const char fox_ebb_boot_args = 0;

namespace fox::ebb {

FOX_BOOT_ARG(dht_cores, "fox.dht_cores", BootArgKind::kUInt, nullptr, 1, 256,
             "the Dht's shards lie on the first N kernel cores (default: all of them; ebb/include/fox/ebb/dht.h)");

#ifndef FOX_NATIVE  // nodes never read a peer's memory (fox/peer_memory.h)
FOX_BOOT_ARG(direct, "fox.direct", BootArgKind::kEnum, "on|off", 0, 0,
             "hosted places read each other's large messages out of memory when on one host (default on; "
             "ebb/include/fox/ebb/messenger.h)");
#endif

}  // namespace fox::ebb
