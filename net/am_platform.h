// Internal: what the AM driver (am.cc) needs from each platform
// (am_native.cc: the NIC; am_hosted.cc: a UDP socket).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/net/am.h"

namespace fox::am::internal {

// A peer's address as the endpoint keeps it: IPv4 (host order) and port.
inline uint64_t MakeAddress(uint32_t ip, uint16_t port) { return uint64_t(ip) << 16 | port; }
inline uint32_t AddressIp(uint64_t a) { return uint32_t(a >> 16); }
inline uint16_t AddressPort(uint64_t a) { return uint16_t(a); }

// ---- provided by the platform ----

// Opens the datagram service on `config.port`. Event context.
Result<void> PlatformOpen(const Config& config);
// Puts one datagram on the wire. Called with the transport lock held, from
// any core, in event or delivery context; must not block or allocate.
// False: cannot send now (the channel keeps the frame).
bool PlatformTransmit(uint64_t address, const uint8_t* frame, size_t length);
// A peer was added: the native side resolves its MAC address ahead of time.
void PlatformPeerAdded(uint64_t address);
// Frames to `address` that PlatformTransmit dropped for want of its link
// address, now known: they were all transmitted before the time returned
// (0: none were dropped, or the address is still unknown). Any context.
uint64_t PlatformDroppedBefore(uint64_t address);
// Adds the platform's counters.
void PlatformStats(Stats* stats);

// ---- provided by the driver ----

// One received datagram carrying an AM frame, in delivery context (the
// transport lock not held).
void Deliver(const uint8_t* bytes, size_t length, uint64_t from_address);
// A link address that PlatformTransmit lacked is known now: the pump
// retransmits at once what was dropped for want of it (PlatformDroppedBefore).
// Any context.
void LinkResolved();

}  // namespace fox::am::internal
