// The one name for a node of a job, everywhere (transport, Messenger, Ebbs,
// APGAS places): a number the frontend hands out and never reuses.
#pragma once

#include <cstdint>

namespace fox {

using NodeId = uint32_t;

}  // namespace fox
