// A node has no frontend link (frontend_link.h): `fox run` starts place 0
// as a Linux process, and the nodes speak to it over the transport.
#include "fox/net/frontend_link.h"

namespace fox::frontend {

void OnStatusRequest(Function<void()>) {}
Result<void> Tell(std::string_view) { return Error::kUnsupported; }
Result<void> RequestNodes(uint32_t) { return Error::kUnsupported; }
void internal::WatchNotices(int) {}

}  // namespace fox::frontend
