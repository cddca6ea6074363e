# The APGAS runtime (apgas/): tests/apgas/apgas_node.cc at every place.
# Hosted: places are Linux processes on 127.0.0.1 (no root, no QEMU).
# Native: places are QEMU nodes joined by the hub on 127.0.0.1 (no root).
# A hosted test in every finish mode (fox.finish, apgas/runtime.h):
# hosted.NAME (none), hosted.NAME_place0, hosted.NAME_optimistic.
function(apgas_hosted_test name)
  foreach(mode none place0 optimistic)
    set(test hosted.${name})
    if(NOT mode STREQUAL none)
      set(test hosted.${name}_${mode})
    endif()
    add_test(NAME ${test} COMMAND ${FOX_HOSTED_NODES} --args fox.finish=${mode} ${ARGN})
    set_tests_properties(${test} PROPERTIES LABELS hosted TIMEOUT 180)
  endforeach()
endfunction()

apgas_hosted_test(apgas_basic --nodes 4 --timeout 120
  --expect "0:apgas: fan-out to 4 places, 4 messages back before the finish returned"
  --expect "0:apgas: fan-out fan-out: 16 activities back at place 0"
  --expect "0:apgas: finish gathered 4 exceptions" --expect "0:apgas: basic: PASS"
  --expect "0:apgas: global: 4 remote updates through a GlobalRef, 4 PlaceLocal objects: PASS"
  --expect "0:apgas: team of 4 places: barrier, allreduce, broadcast, agree: 4 of 4 right"
  $<TARGET_FILE:apgas_node> basic global team)

# A place dies (exits) inside a fan-out: the finish names it, and only it,
# once the detector declares it dead; everything else ran.
apgas_hosted_test(apgas_kill --nodes 4 --timeout 120 --killed 2
  --expect "0:apgas: place 2 died inside a fan-out: DeadPlaceException named it, 0 other exceptions, 3 of 3 activities back"
  --expect "0:apgas: at\\(dead place 2\\) threw DeadPlaceException" --expect "0:apgas_node: done"
  $<TARGET_FILE:apgas_node> basic kill,2)

# Orphans of a place that dies: every activity it sent before dying ends
# before the finish returns (happens-before invariance).
apgas_hosted_test(apgas_orphans --nodes 4 --timeout 120 --killed 3
  --expect "0:apgas: orphans of dead place 3: [0-9]+ of 3 ended before the finish returned, 0 after. DeadPlaceException named it"
  $<TARGET_FILE:apgas_node> orphans,3)

# The home of two finishes (one nested in the other) dies while their
# activities run elsewhere: the enclosing finish (the root at place 0, or one
# at place 1) adopts them and returns only after they all ended (modes place0
# and optimistic; mode none does not adopt: runtime.h).
# A place dies at a random moment inside rounds where every place's fan-out
# has its own finish: the dead place's finish is adopted by the round's.
foreach(mode place0 optimistic)
  add_test(NAME hosted.apgas_random_kill_nested_${mode} COMMAND ${FOX_HOSTED_NODES} --nodes 4 --timeout 120 --killed 3
    --args fox.finish=${mode}
    --expect "0:apgas: random kill of place 3 after 300 ms in nested rounds: [0-9]+ whole rounds, then a round with [0-9]+ of 16 leaves back, 0 after its finish returned, 0 other exceptions"
    $<TARGET_FILE:apgas_node> random_kill,3,300,nested)
  set_tests_properties(hosted.apgas_random_kill_nested_${mode} PROPERTIES LABELS hosted TIMEOUT 180)
endforeach()
foreach(mode place0 optimistic)
  add_test(NAME hosted.apgas_home_kill_${mode} COMMAND ${FOX_HOSTED_NODES} --nodes 4 --timeout 120 --killed 2
    --args fox.finish=${mode}
    --expect "0:apgas: finishes homed at dead place 2: 6 of 6 of their activities ended before the root finish returned, 0 after. DeadPlaceException named it, 0 other exceptions"
    $<TARGET_FILE:apgas_node> home_kill,2)
  add_test(NAME hosted.apgas_home_kill_via_${mode} COMMAND ${FOX_HOSTED_NODES} --nodes 4 --timeout 120 --killed 2
    --args fox.finish=${mode}
    --expect "0:apgas: finishes homed at dead place 2: 6 of 6 of their activities ended before place 1's finish returned, 0 after. DeadPlaceException named it, 0 other exceptions"
    $<TARGET_FILE:apgas_node> home_kill,2,1)
  set_tests_properties(hosted.apgas_home_kill_${mode} hosted.apgas_home_kill_via_${mode} PROPERTIES LABELS hosted TIMEOUT 180)
endforeach()

# Work stealing: at every place (4 cores each) the long activities, all
# spawned onto one core, are taken by the idle ones.
add_test(NAME hosted.apgas_balance COMMAND ${FOX_HOSTED_NODES} --nodes 2 --cores 4 --timeout 120
  --expect "0:apgas: place 1: 4 activities of 60 ms .* ran on [2-3] of 3 activity cores"
  --expect "0:apgas: work stealing: balanced at 2 of 2 places" --expect "0:apgas_node: done"
  --expect "0:apgas: delegates: 6 workers over 2 places, 240 of each operation on shared words: exact"
  $<TARGET_FILE:apgas_node> balance,60 delegate)
set_tests_properties(hosted.apgas_balance PROPERTIES LABELS hosted TIMEOUT 180)

# A place whose store comes up 500 ms after it joined (FOX_TEST_STORE_DELAY_MS):
# the activities place 0 sends it meanwhile wait (Runtime::Open) instead of
# finding the store not started ("busy").
add_test(NAME hosted.apgas_store_late COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
  --expect "0:apgas_node: done" $<TARGET_FILE:apgas_node> store)
set_tests_properties(hosted.apgas_store_late PROPERTIES LABELS hosted TIMEOUT 180 ENVIRONMENT FOX_TEST_STORE_DELAY_MS=500)

# Every place joined before place 0 awaits the joins (FOX_TEST_AWAIT_DELAY_MS:
# place 0 waits 500 ms first): the job runs (the joins' promise was once set
# before its future was taken, and place 0 died of FutureAlreadyRetrieved).
add_test(NAME hosted.apgas_joined_early COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120
  --expect "0:apgas: 3 places, finish mode" --expect "0:apgas_node: done" $<TARGET_FILE:apgas_node> store)
set_tests_properties(hosted.apgas_joined_early PROPERTIES LABELS hosted TIMEOUT 180 ENVIRONMENT FOX_TEST_AWAIT_DELAY_MS=500)

# A Team member dies: the survivors' collectives throw instead of hanging,
# and agree gives them all the same answer.
apgas_hosted_test(apgas_team_kill --nodes 4 --timeout 120 --killed 2
  --expect "0:apgas: team member 2 died: 3 of 3 survivors saw DeadPlaceException and agreed alike"
  $<TARGET_FILE:apgas_node> team_kill,2)
# The gatherer dies while it answers, having answered only some members:
# those hand its answer on, and every survivor agrees alike (no hang).
apgas_hosted_test(apgas_team_gatherer_kill --nodes 4 --timeout 120 --killed 1
  --expect "0:apgas: team gatherer 1 died while answering: 2 of 2 survivors agreed alike, then saw it dead"
  $<TARGET_FILE:apgas_node> team_gatherer_kill)

# ResilientStore (apgas/include/fox/apgas/store.h) on the job's Dht: the API,
# then a place killed at a moment it does not choose while it writes (Set2
# and Set in a loop): every Set2 whole, the keys a prefix, nothing appearing
# after the finish returned (happens-before invariance).
apgas_hosted_test(apgas_store --nodes 4 --timeout 120
  --expect "0:apgas: store: 4 places' keys read back, Set2 across places 1 and 2, delete, refusals: PASS"
  --expect "0:apgas_node: done"
  $<TARGET_FILE:apgas_node> store)
# PlaceManager: a spare replaces a dead place at its index and restores its
# state from the ResilientStore; without spares the group shrinks.
apgas_hosted_test(apgas_spares --nodes 4 --timeout 120 --killed 1 --killed 2 --args fox.spares=1
  --expect "0:apgas: place manager: place 2 died, spare 3 took index 2 and restored its slice from the store, 3 of 3 slices right, a manager that may not shrink threw DeadPlaceException\\(2\\), place 1 died and the group shrank to 0 3: PASS"
  --expect "0:apgas_node: done"
  $<TARGET_FILE:apgas_node> spares)
apgas_hosted_test(apgas_store_recover --nodes 3 --timeout 120 --killed 2
  --expect "0:apgas: store: place 2 died inside a Set2 \\(log and first key written\\): first key there, second there \\(rolled forward\\) when the finish returned"
  --expect "0:apgas_node: done"
  $<TARGET_FILE:apgas_node> store_recover,2)
foreach(ms 200 500)
  apgas_hosted_test(apgas_store_kill_${ms} --nodes 4 --timeout 120 --killed 2
    --expect "0:apgas: store: place 2 died writing after ${ms} ms: [1-9][0-9]* rounds written, 0 half Set2s, 0 keys past the first gap, [0-9]+ rounds 1.5 s later, DeadPlaceException alone"
    --expect "0:apgas_node: done"
    $<TARGET_FILE:apgas_node> store_kill,2,${ms})
endforeach()

# A place dies at a moment it does not choose, inside fan-out-fan-out rounds.
foreach(ms 150 400)
  apgas_hosted_test(apgas_random_kill_${ms} --nodes 4 --timeout 120 --killed 3
    --expect "0:apgas: random kill of place 3 after ${ms} ms: [0-9]+ whole rounds, then a round with [0-9]+ of 16 leaves back, 0 after its finish returned, 0 other exceptions"
    $<TARGET_FILE:apgas_node> random_kill,3,${ms})
endforeach()
# The same inside tree rounds (a binary tree of activities 5 levels deep).
apgas_hosted_test(apgas_random_kill_tree --nodes 4 --timeout 120 --killed 3
  --expect "0:apgas: random kill of place 3 after 300 ms in tree rounds: [0-9]+ whole rounds, then a round with [0-9]+ of 32 leaves back, 0 after its finish returned, 0 other exceptions"
  $<TARGET_FILE:apgas_node> random_kill,3,300,tree)

# Global arrays and delegate operations (global_memory.h, delegate.h):
# workers at every place contend on shared words, which end exact; refusals;
# and a place that dies while delegates go to it.
apgas_hosted_test(apgas_delegate --nodes 4 --timeout 120
  --expect "0:apgas: delegates: 12 workers over 4 places, 480 of each operation on shared words: exact"
  --expect "0:apgas: delegates: double add exact, out of range and destroyed arrays refused: PASS"
  $<TARGET_FILE:apgas_node> delegate)
apgas_hosted_test(apgas_delegate_kill --nodes 4 --timeout 120 --killed 2
  --expect "0:apgas: delegates to place 2, dead: DeadPlaceException named it, no other exception, 3 live blocks answer"
  $<TARGET_FILE:apgas_node> delegate_kill,2)

fox_cluster_test(apgas_basic NODES 3 IMAGE apgas_node LOCAL PEERS ARGS "-- basic global team" TIMEOUT 120
  EXPECT "0:apgas: fan-out to 3 places, 3 messages back before the finish returned"
         "0:apgas: fan-out fan-out: 9 activities back at place 0" "0:apgas: basic: PASS"
         "0:apgas: global: 3 remote updates through a GlobalRef, 3 PlaceLocal objects: PASS"
         "0:apgas: team of 3 places: barrier, allreduce, broadcast, agree: 3 of 3 right")
fox_cluster_test(apgas_random_kill NODES 3 IMAGE apgas_node LOCAL PEERS ARGS "-- random_kill,2,250" TIMEOUT 120 KILLED 2
  EXPECT "0:apgas: random kill of place 2 after 250 ms: [0-9]+ whole rounds, then a round with [0-9]+ of 9 leaves back, 0 after its finish returned, 0 other exceptions")
fox_cluster_test(apgas_store_kill NODES 3 IMAGE apgas_node LOCAL PEERS ARGS "-- store store_kill,2,1500" TIMEOUT 180 KILLED 2
  EXPECT "0:apgas: store: 3 places' keys read back, Set2 across places 1 and 2, delete, refusals: PASS"
         "0:apgas: store: place 2 died writing after 1500 ms: [1-9][0-9]* rounds written, 0 half Set2s, 0 keys past the first gap, [0-9]+ rounds 1.5 s later, DeadPlaceException alone")
fox_cluster_test(apgas_home_kill NODES 4 IMAGE apgas_node LOCAL PEERS ARGS "fox.finish=optimistic -- home_kill,2,1,9000" TIMEOUT 150 KILLED 2
  EXPECT "0:apgas: finishes homed at dead place 2: 6 of 6 of their activities ended before place 1's finish returned, 0 after. DeadPlaceException named it, 0 other exceptions")
fox_cluster_test(apgas_balance NODES 2 SMP 4 IMAGE apgas_node LOCAL PEERS ARGS "-- balance,60 delegate" TIMEOUT 150
  EXPECT "0:apgas: place 1: 4 activities of 60 ms .* ran on [23] of 3 activity cores"
         "0:apgas: delegates: 6 workers over 2 places, 240 of each operation on shared words: exact"
         "0:apgas: delegates: double add exact, out of range and destroyed arrays refused: PASS"
         "0:apgas: work stealing: balanced at 2 of 2 places")
fox_cluster_test(apgas_kill NODES 3 IMAGE apgas_node LOCAL PEERS ARGS "-- kill,1" TIMEOUT 120 KILLED 1
  EXPECT "0:apgas: place 1 died inside a fan-out: DeadPlaceException named it, 0 other exceptions, 2 of 2 activities back"
         "0:apgas: at\\(dead place 1\\) threw DeadPlaceException")

# A capture that cannot be serialized is a compile-time error with a readable
# message (the file must fail to compile, saying why).
add_test(NAME apgas.capture_not_serializable
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -I${CMAKE_SOURCE_DIR}/apgas/include
          -I${CMAKE_SOURCE_DIR}/ebb/include -I${CMAKE_SOURCE_DIR}/net/include -I${CMAKE_SOURCE_DIR}/kernel/include
          ${CMAKE_CURRENT_SOURCE_DIR}/bad_capture.cc)
set_tests_properties(apgas.capture_not_serializable PROPERTIES LABELS unit TIMEOUT 120
  PASS_REGULAR_EXPRESSION "a value sent to another place must be cereal-serializable or trivially copyable")

# apps/pi, the resilient Monte Carlo estimate: every chunk is counted once
# whichever place counts it, so the hits are the same on Linux and on nodes,
# with or without a death. pi_kill: place 2 is SIGKILLed from outside once a
# quarter of the chunks are in; its chunks are dealt again to the others.
add_test(NAME hosted.pi COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120
  --expect "0:pi: 3\\.140939400 from 15704697 hits of 20000000 samples \\(64 chunks over 3 places in 1 round; no place died\\)"
  $<TARGET_FILE:pi> samples=20000000 chunks=64)
add_test(NAME hosted.pi_kill COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 150
  --kill-when "2:0:pi: 64 of 256 chunks counted"
  --expect "0:pi: place 2 died; its chunks are dealt again"
  --expect "0:pi: 3\\.141561198 from 1570780599 hits of 2000000000 samples \\(256 chunks over 3 places in [2-9] rounds; [1-9][0-9]* chunks dealt again after the death of place 2\\)"
  $<TARGET_FILE:pi> samples=2000000000 chunks=256)
add_test(NAME hosted.pi_bad_argument COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60
  --expect-exit 0:2 --expect-exit 1:2
  --expect "0:pi: bad argument 'chunks=0': expected samples=N \\(1\\.\\.2\\^40\\), chunks=K \\(1\\.\\.2\\^20\\) or seed=S"
  $<TARGET_FILE:pi> chunks=0)
set_tests_properties(hosted.pi hosted.pi_kill hosted.pi_bad_argument PROPERTIES LABELS hosted TIMEOUT 180)
# (EXPECT is a CMake list: "." stands for the ";" of the line.)
fox_cluster_test(pi NODES 3 IMAGE pi LOCAL PEERS ARGS "-- samples=20000000 chunks=64" TIMEOUT 120
  EXPECT "0:pi: 3\\.140939400 from 15704697 hits of 20000000 samples \\(64 chunks over 3 places in 1 round. no place died\\)")

# A 64 MiB ResilientStore value (store.cc: chunks of a Dht value's size):
# read back at another place, replaced (its chunks removed), and read back
# once its place is dead (tests/apgas/store_big.cc).
add_test(NAME hosted.apgas_store_big COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 150 --killed 1
  --expect "0:store_big: a 64 MiB value set at place 1 \\([0-9.]+ MB/s\\) read back whole at place 0"
  --expect "0:store_big: replaced by 100 bytes: 0 of its chunks left"
  --expect "0:store_big: dead place 1's 64 MiB value read back whole: PASS"
  $<TARGET_FILE:store_big> 64)
set_tests_properties(hosted.apgas_store_big PROPERTIES LABELS hosted TIMEOUT 180)
# Local copies (tests/apgas/store_local.cc): a place reads its own chunked
# values from memory, never stale after another place's Set2, also after
# a death; a dead place's from the Dht.
add_test(NAME hosted.apgas_store_local COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120 --killed 2
  --expect "0:store_local: place 1 read its v from its copy, place 2 read it from the Dht"
  --expect "0:store_local: after another place's Set2 place 1 read the new v"
  --expect "0:store_local: after place 2 died place 1 read its v from its copy, place 0 place 2's from the Dht: PASS"
  $<TARGET_FILE:store_local>)
set_tests_properties(hosted.apgas_store_local PROPERTIES LABELS hosted TIMEOUT 180)

# BuddyStore (tests/apgas/buddy_store.cc): each place's values at the
# place and its buddy; own values read locally; after a death the dead
# place's read from a backup and the survivors re-replicate, so that after
# a second death (the holder of the first one's backups) nothing is lost.
add_test(NAME hosted.apgas_buddy_store COMMAND ${FOX_HOSTED_NODES} --nodes 5 --cores 2 --timeout 120 --killed 2
  --killed 3
  --expect "0:buddy_store: every place read its own values locally, place 0 every place's remotely"
  --expect "0:buddy_store: place 2 died: its values read from a backup; place 1's sent to a new buddy"
  --expect "0:buddy_store: place 3 died too: both dead places' values read back whole: PASS"
  $<TARGET_FILE:buddy_store> 8388608)
set_tests_properties(hosted.apgas_buddy_store PROPERTIES LABELS hosted TIMEOUT 180)
# The same with values of 72 MiB: longer than a message, so each write and
# each read of another place's value travels in 32 MiB parts.
add_test(NAME hosted.apgas_buddy_store_parts COMMAND ${FOX_HOSTED_NODES} --nodes 5 --cores 2 --timeout 150 --killed 2
  --killed 3
  --expect "0:buddy_store: place 3 died too: both dead places' values read back whole: PASS"
  $<TARGET_FILE:buddy_store> 75497472)
set_tests_properties(hosted.apgas_buddy_store_parts PROPERTIES LABELS hosted TIMEOUT 200)
fox_cluster_test(apgas_buddy_store NODES 5 IMAGE buddy_store LOCAL PEERS ARGS "-- 100000" TIMEOUT 180 KILLED 2 3
  EXPECT "0:buddy_store: place 3 died too: both dead places' values read back whole: PASS")

# Team's collectives on 5 places (tests/apgas/team_ops.cc): broadcast,
# reduce, gather, scatter, alltoall, split, an allreduce of 2^20 doubles
# (8 MiB), an alltoall of 65 MiB values (more than the largest message:
# sent in pieces), barrier; then the last place dies inside an allreduce and every
# survivor's throws DeadPlaceException.
add_test(NAME hosted.apgas_team_ops COMMAND ${FOX_HOSTED_NODES} --nodes 5 --cores 2 --timeout 150 --killed 4
  --expect "0:team_ops: 5 of 5 places right. 4 of 4 survivors threw DeadPlaceException\\(4\\)"
  $<TARGET_FILE:team_ops> 1048576 65)
set_tests_properties(hosted.apgas_team_ops PROPERTIES LABELS hosted TIMEOUT 180)
fox_cluster_test(apgas_team_ops NODES 4 IMAGE team_ops LOCAL PEERS ARGS "-- 65536" TIMEOUT 150 KILLED 3
  EXPECT "0:team_ops: 4 of 4 places right. 3 of 3 survivors threw DeadPlaceException\\(3\\)")
