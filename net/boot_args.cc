// The network's `fox.*` boot arguments (cmdline.h, FOX_BOOT_ARG): the
// node's address (lwip/config.cc), its id and key in its job, and the
// active-message transport and membership (am_config.cc).
#include "fox/cmdline.h"

// Hosted builds link fox_net as an archive: -Wl,-u of this (CMakeLists.txt)
// takes this file, which nothing calls.
extern "C" const char fox_net_boot_args = 0;

namespace fox::net {

FOX_BOOT_ARG(node, "fox.node", BootArgKind::kUInt, nullptr, 0, 0x7FFFFFFF,
             "this node's id in its job (given by the frontend)", true);
FOX_BOOT_ARG(ip, "fox.ip", BootArgKind::kIpv4Prefix, nullptr, 0, 0,
             "static IPv4 address and prefix length, A.B.C.D/NN (default: DHCP)", true);
FOX_BOOT_ARG(gw, "fox.gw", BootArgKind::kIpv4, nullptr, 0, 0,
             "IPv4 gateway A.B.C.D (with fox.ip; with DHCP, used if the server offers none)", true);
FOX_BOOT_ARG(job, "fox.job", BootArgKind::kUInt, nullptr, 1, 0x7FFFFFFFFFFFFFFFull,
             "job id carried by every active-message frame (default 1)");
FOX_BOOT_ARG(key, "fox.key", BootArgKind::kString, nullptr, 0, 0,
             "job key for the frame MAC, 32 hex digits (default: a development key from the job id)", true);
FOX_BOOT_ARG(amport, "fox.amport", BootArgKind::kUInt, nullptr, 1, 65535,
             "UDP port of the active-message transport (default 7700)");
FOX_BOOT_ARG(peers, "fox.peers", BootArgKind::kString, nullptr, 0, 0,
             "active-message peers, ID@A.B.C.D[:PORT],... (more join at run time)");
FOX_BOOT_ARG(aggregate, "fox.aggregate", BootArgKind::kEnum, "on|off", 0, 0,
             "aggregate small active messages into full frames (default on)");
FOX_BOOT_ARG(probe_ms, "fox.probe_ms", BootArgKind::kUInt, nullptr, 10, 60'000,
             "membership: the period in ms in which a node probes one peer (default 150; emulated clusters: longer)");
FOX_BOOT_ARG(suspect_ms, "fox.suspect_ms", BootArgKind::kUInt, nullptr, 100, 600'000,
             "membership: ms a suspected peer has to refute it before it is declared dead (default 1000)");
FOX_BOOT_ARG(join_ms, "fox.join_ms", BootArgKind::kUInt, nullptr, 1'000, 3'600'000,
             "membership: ms a peer never heard from has to join before it is declared dead (default 60000)");

}  // namespace fox::net
