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
inline constexpr EbbId kBuddyStoreId = StaticId("fox.apgas.BuddyStore");
inline constexpr EbbId kDelegateId = StaticId("fox.apgas.Delegate");
// The Dht's shards (dht.h): messages about a key go to its shard's id.
inline constexpr EbbId kDhtShardIds[] = {
    StaticId("fox.Dht.0"),  StaticId("fox.Dht.1"),  StaticId("fox.Dht.2"),  StaticId("fox.Dht.3"),
    StaticId("fox.Dht.4"),  StaticId("fox.Dht.5"),  StaticId("fox.Dht.6"),  StaticId("fox.Dht.7"),
    StaticId("fox.Dht.8"),  StaticId("fox.Dht.9"),  StaticId("fox.Dht.10"), StaticId("fox.Dht.11"),
    StaticId("fox.Dht.12"), StaticId("fox.Dht.13"), StaticId("fox.Dht.14"), StaticId("fox.Dht.15")};

static_assert(StaticIdsDistinct({"fox.GlobalIdMap",
                                 "fox.Messenger",
                                 "fox.Rpc",
                                 "fox.NodeAllocator",
                                 "fox.FileSystem",
                                 "fox.Dht",
                                 "fox.FailureDetector",
                                 "fox.apgas.Runtime",
                                 "fox.apgas.PlaceManager",
                                 "fox.apgas.ResilientFinish",
                                 "fox.apgas.Team",
                                 "fox.apgas.BuddyStore",
                                 "fox.apgas.Delegate",
                                 "fox.Dht.0",
                                 "fox.Dht.1",
                                 "fox.Dht.2",
                                 "fox.Dht.3",
                                 "fox.Dht.4",
                                 "fox.Dht.5",
                                 "fox.Dht.6",
                                 "fox.Dht.7",
                                 "fox.Dht.8",
                                 "fox.Dht.9",
                                 "fox.Dht.10",
                                 "fox.Dht.11",
                                 "fox.Dht.12",
                                 "fox.Dht.13",
                                 "fox.Dht.14",
                                 "fox.Dht.15"}),
              "two system Ebb names share a static id: rename one");

}  // namespace fox::ebb
