// The static ids of fox's own system Ebbs (DESIGN.md, "Layers and folders").
// A subsystem adding a static Ebb adds its name here, so that the
// static_assert below proves all of them distinct in every build.
#pragma once

#include "fox/ebb/ebb_id.h"

namespace fox::ebb {

inline constexpr EbbId kGlobalIdMapId = StaticId("fox.GlobalIdMap");
inline constexpr EbbId kMessengerId = StaticId("fox.Messenger");
inline constexpr EbbId kRpcId = StaticId("fox.Rpc");
inline constexpr EbbId kNodeAllocatorId = StaticId("fox.NodeAllocator");
inline constexpr EbbId kFileSystemId = StaticId("fox.FileSystem");
inline constexpr EbbId kDhtId = StaticId("fox.Dht");
inline constexpr EbbId kFailureDetectorId = StaticId("fox.FailureDetector");
inline constexpr EbbId kApgasRuntimeId = StaticId("fox.apgas.Runtime");
inline constexpr EbbId kPlaceManagerId = StaticId("fox.apgas.PlaceManager");
inline constexpr EbbId kResilientFinishId = StaticId("fox.apgas.ResilientFinish");
inline constexpr EbbId kTeamId = StaticId("fox.apgas.Team");

static_assert(StaticIdsDistinct({"fox.GlobalIdMap", "fox.Messenger", "fox.Rpc", "fox.NodeAllocator", "fox.FileSystem",
                                 "fox.Dht", "fox.FailureDetector", "fox.apgas.Runtime", "fox.apgas.PlaceManager",
                                 "fox.apgas.ResilientFinish", "fox.apgas.Team"}),
              "two system Ebb names share a static id: rename one");

}  // namespace fox::ebb
