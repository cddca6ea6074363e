// The `fox.*` boot arguments of the runtime that runs a job's apps
// (cmdline.h, FOX_BOOT_ARG): the APGAS model's, and the two the frontend
// gives every app of a job (every app links this library: fox_hosted, and
// the images' FOX_IMAGE_LIBS).
#include "fox/cmdline.h"

// Hosted builds link fox_apgas as an archive: -Wl,-u of this
// (CMakeLists.txt) takes this file, which nothing calls.
extern "C" const char fox_apgas_boot_args = 0;

namespace fox::apgas {

FOX_BOOT_ARG(finish, "fox.finish", BootArgKind::kEnum, "none|place0|optimistic", 0, 0,
             "APGAS jobs: the finish mode, the same at every place (default none; apgas/runtime.h)");
FOX_BOOT_ARG(spares, "fox.spares", BootArgKind::kUInt, nullptr, 0, 1024,
             "APGAS jobs: how many of the job's places are spares (the last ones; PlaceManager's default)");
FOX_BOOT_ARG(joining, "fox.joining", BootArgKind::kEnum, "0|1", 0, 0,
             "1: this node joins a job that runs already (the frontend grows it): apps join their Dht instead of "
             "starting it");
FOX_BOOT_ARG(kill_at, "fox.kill_at", BootArgKind::kString, nullptr, 0, 0,
             "APGAS jobs, fault injection: PLACE:step|checkpoint|restore:N[,...] makes the place exit during that "
             "phase of an iterative executor (apgas/include/fox/apgas/iterative.h)");
FOX_BOOT_ARG(app, "fox.app", BootArgKind::kString, nullptr, 0, 0,
             "the app the pool image (fox.elf, every app) starts: its name (given by the frontend)");

}  // namespace fox::apgas
