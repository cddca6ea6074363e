// fox/peer_memory.h natively: a node is the only process on its machine.
#include "fox/peer_memory.h"

namespace fox::peer_memory {

uint64_t Self() { return 0; }
Result<Peer> Open(uint64_t) { return Error::kUnsupported; }
Result<void> Read(const Peer&, uint64_t, void*, size_t) { return Error::kUnsupported; }
void Close(Peer* peer) { *peer = Peer{}; }

}  // namespace fox::peer_memory
