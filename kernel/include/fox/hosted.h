// What only the hosted platform (Linux programs, kernel/linux) offers to the
// layers above: file descriptors in a core's event loop. Platform-specific
// code (net/am_hosted.cc) includes this; platform-neutral code must not.
#pragma once

namespace fox::hosted {

// Calls fn(arg) from core `core`'s loop whenever `fd` is readable and the
// core has nothing else to do (level-triggered, so until `fd` is drained).
// fn runs outside any event, like an interrupt handler: it should post work
// (event::InterruptTrigger::Fire), not do it. Up to 64 watches per process.
// Returns false if the table is full or epoll refuses the descriptor.
// Event context, any core.
bool WatchReadable(int core, int fd, void (*fn)(void*), void* arg);

}  // namespace fox::hosted
