// Connects the Ebb model's quiescent points to the event loop (kernel/ sits
// below ebb/, so the loop only knows hooks; this file installs them).
#include "fox/ebb/lifetime.h"
#include "fox/event.h"
#include "internal.h"

namespace fox::ebb {
namespace {

// Before a core sleeps: what it retired (RetireLater) is sealed and freed
// as far as the reads in progress allow, so that an idle core does not keep
// the last values its shards replaced; then it holds no reps.
void BeforeSleep() {
  detail::RetiredBeforeSleep();
  EnterQuiescence();
}

const event::LoopHooks kHooks = {QuiescentPoint, BeforeSleep, ExitQuiescence};

struct Installer {
  Installer() { event::SetLoopHooks(&kHooks); }
};
Installer g_installer;

}  // namespace
}  // namespace fox::ebb

// Nothing calls into this file, so a static library would leave it out and
// the hooks would never be installed: ebb/CMakeLists.txt makes every hosted
// program ask for this symbol (-u), which brings the file in.
extern "C" const char fox_ebb_loop_hooks = 1;
