// Connects the Ebb model's quiescent points to the event loop (kernel/ sits
// below ebb/, so the loop only knows hooks; this file installs them).
#include "fox/ebb/lifetime.h"
#include "fox/event.h"

namespace fox::ebb {
namespace {

const event::LoopHooks kHooks = {QuiescentPoint, EnterQuiescence, ExitQuiescence};

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
