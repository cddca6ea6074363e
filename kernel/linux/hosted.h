// Hosted platform internals shared by kernel/linux files.
#pragma once

#include <atomic>
#include <string_view>

#include "fox/core.h"
#include "fox/hosted.h"
#include "fox/result.h"

namespace fox::hosted {

struct CoreState {
  int epoll_fd = -1;
  int wake_fd = -1;                      // eventfd: other cores wake this one
  int timer_fd = -1;                     // timerfd: this core's next timer
  std::atomic<bool> has_watches{false};  // WatchReadable added a descriptor
  uint64_t last_poll_ns = 0;             // PollWhileBusy's last look (this core only)
};

extern CoreState g_cores[core::kMaxCores];

// WatchReadable: fox/hosted.h (the public half).
// Installs the boot arguments (boot_args.cc): FOX_ARGS at start-up.
Result<void> InstallBootArgs(std::string_view text, const char** error);

extern std::atomic<int> g_online;
extern int g_num_cores;
extern thread_local int t_core;

}  // namespace fox::hosted
