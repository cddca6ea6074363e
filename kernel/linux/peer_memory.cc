// Reading a peer process's memory on Linux (fox/peer_memory.h):
// process_vm_readv, with a pidfd that tells whether the process read is
// still the one opened (a pid is reused only after its process ends, so a
// read followed by a pidfd that is not readable read the right process).
#include "fox/peer_memory.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace fox::peer_memory {
namespace {
// The process behind `fd` has ended.
bool Ended(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) != 0;  // readable (it ended), or an error: do not trust it
}
}  // namespace

uint64_t Self() { return uint64_t(getpid()); }

Result<Peer> Open(uint64_t pid) {
  if (pid == 0 || pid > uint64_t(INT32_MAX)) return Error::kInvalidArgument;
  int fd = int(syscall(SYS_pidfd_open, pid_t(pid), 0));
  if (fd < 0) return errno == ESRCH ? Error::kNotFound : Error::kUnsupported;
  return Peer{fd, pid};  // whether Linux lets this process read it, the first Read tells
}

Result<void> Read(const Peer& peer, uint64_t address, void* out, size_t length) {
  if (peer.handle < 0) return Error::kInvalidArgument;
  auto* to = static_cast<uint8_t*>(out);
  size_t done = 0;
  while (done < length) {  // process_vm_readv moves at most ~2 GiB a call
    iovec local{to + done, length - done};
    iovec remote{reinterpret_cast<void*>(address + done), length - done};
    ssize_t n = process_vm_readv(pid_t(peer.pid), &local, 1, &remote, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPERM) return Error::kUnsupported;
    if (n < 0) return errno == ESRCH ? Error::kNotFound : Error::kInvalidArgument;
    if (n == 0) return Error::kInvalidArgument;
    done += size_t(n);
  }
  if (Ended(peer.handle)) return Error::kNotFound;
  return {};
}

void Close(Peer* peer) {
  if (peer->handle >= 0) close(peer->handle);
  *peer = Peer{};
}

}  // namespace fox::peer_memory
