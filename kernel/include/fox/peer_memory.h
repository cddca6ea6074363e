// Reading another process's memory on the same machine: Linux's
// cross-memory attach (process_vm_readv), what MPI's shared-memory
// transports use for large messages (one copy, the receiver's). The
// Messenger (fox/ebb/messenger.h) sends a large message between hosted
// places on one host as the address of its bytes, which the receiver reads
// here. Natively there is no other process: Self() is 0 and Open fails
// (kUnsupported).
//
//   auto peer = peer_memory::Open(pid);          // once per peer
//   peer_memory::Read(*peer, address, buf, n);   // per message
//   peer_memory::Close(&*peer);
//
// A process id can be reused once its process ends: a handle is tied to
// the process that had the id when it was opened (a pidfd), and Read fails
// with kNotFound when that process has ended, whatever was read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/result.h"

namespace fox::peer_memory {

// This process's id, for peers on the same machine; 0 natively.
uint64_t Self();

// A process whose memory this one reads.
struct Peer {
  int handle = -1;  // the platform's (a pidfd)
  uint64_t pid = 0;
};

// A handle on process `pid`. kNotFound: no such process; kUnsupported:
// natively. Any context but interrupts.
Result<Peer> Open(uint64_t pid);

// Reads `length` bytes at `address` in `peer` into `out`. kNotFound: the
// process ended (before or during the read: the bytes are not its);
// kUnsupported: Linux does not let this process read that one (another
// user; Yama's ptrace_scope 2 or 3 without CAP_SYS_PTRACE); kInvalidArgument:
// the range is not mapped there or reads short. A copy: long for large
// ranges. Hosted places let their peers read them (PR_SET_PTRACER, for
// Yama's ptrace_scope 1, as MPI's processes do).
Result<void> Read(const Peer& peer, uint64_t address, void* out, size_t length);

void Close(Peer* peer);

}  // namespace fox::peer_memory
