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
