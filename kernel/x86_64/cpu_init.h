#pragma once

namespace fox::cpu {
// Boot step for every core: x87/SSE on (the C library and compiler use SSE),
// write-protect honoured in ring 0.
void InitFeatures();
}  // namespace fox::cpu
