#pragma once

namespace fox::serial {
// Programs COM1. Boot step 1: nothing may be logged before it.
void Init();
}  // namespace fox::serial
