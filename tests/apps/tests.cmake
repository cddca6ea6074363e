# The resilient iterative applications (apps/, on apgas/include/fox/apgas/
# iterative.h): each app's answer on hosted places and on QEMU nodes, and
# through a place killed during a step, a checkpoint and a restore
# (fox.kill_at), with a spare (non-shrinking) and without (shrinking). Each
# app checks its answer against the same steps at place 0 alone ("the same
# as the run at one place"); the expected answer is also written here, so
# hosted places and nodes must agree with each other.

# iterative_app_tests(APP ANSWER ARGS...): APP's suite on hosted places,
# for each executor: the answer (ANSWER, a regex on place 0's output) and
# the check against one place; a spare takes the dead place's index when
# step 5 fails (the checkpoint after 4 steps restored, steps 4.. done again:
# 21 in all); place 2 dies inside the checkpoint after 4 steps (abandoned:
# the one after 0 steps restored, 24 steps); the spare dies in the restore
# (the group shrinks to places 0 and 1, which restore again); no spare: the
# group shrinks and the survivors take place 2's blocks; no spare and
# shrink=0: a clear error, no hang. ARGS: the app's arguments (20 steps).
# SPMD_ONLY: the app has the SPMD executor alone (executor=spmd is passed).
function(iterative_app_tests app answer)
  cmake_parse_arguments(A "SPMD_ONLY" "" "" ${ARGN})
  set(same "0:${app}: the same as the run at one place")
  set(executors global spmd)
  if(A_SPMD_ONLY)
    set(executors spmd)
  endif()
  foreach(ex ${executors})
    set(t hosted.${app}_${ex})
    add_test(NAME ${t} COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120
      --expect ${answer} --expect ${same}
      --expect "0:${app}: .* 20 steps .* 2 checkpoints .* 0 failures, 0 restores .* active places at the end: 0 1 2$"
      $<TARGET_FILE:${app}> ${A_UNPARSED_ARGUMENTS} executor=${ex})
    add_test(NAME ${t}_kill_step COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
      --args fox.spares=1 --args fox.kill_at=2:step:5 --killed 2
      --expect ${answer} --expect ${same} --expect "2:apgas: place 2 dies in step 5"
      --expect "0:${app}: .* 21 steps .* 1 failures, 1 restores .* active places at the end: 0 1 3$"
      $<TARGET_FILE:${app}> ${A_UNPARSED_ARGUMENTS} every=4 executor=${ex})
    add_test(NAME ${t}_kill_checkpoint COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
      --args fox.spares=1 --args fox.kill_at=2:checkpoint:4 --killed 2
      --expect ${answer} --expect ${same} --expect "2:apgas: place 2 dies in checkpoint 4"
      --expect "0:${app}: .* 24 steps .* 1 failures, 1 restores .* active places at the end: 0 1 3$"
      $<TARGET_FILE:${app}> ${A_UNPARSED_ARGUMENTS} every=4 executor=${ex})
    add_test(NAME ${t}_kill_restore COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
      --args fox.spares=1 --args fox.kill_at=2:step:5,3:restore:1 --killed 2 --killed 3
      --expect ${answer} --expect ${same} --expect "3:apgas: place 3 dies in restore 1"
      --expect "0:${app}: .* 21 steps .* 2 failures, 2 restores .* active places at the end: 0 1$"
      $<TARGET_FILE:${app}> ${A_UNPARSED_ARGUMENTS} every=4 executor=${ex})
    add_test(NAME ${t}_shrink COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
      --args fox.kill_at=2:step:7 --killed 2
      --expect ${answer} --expect ${same}
      --expect "0:${app}: .* 23 steps .* 1 failures, 1 restores .* active places at the end: 0 1 3$"
      $<TARGET_FILE:${app}> ${A_UNPARSED_ARGUMENTS} every=4 executor=${ex})
    add_test(NAME ${t}_no_spare COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120
      --args fox.kill_at=2:step:5 --killed 2 --expect-exit 0:1
      --expect "0:${app}: place 2 died and cannot be replaced \\(no spare left, shrink=0\\)"
      --expect "0:apgas: the program failed: .*place 2 is dead"
      $<TARGET_FILE:${app}> ${A_UNPARSED_ARGUMENTS} every=4 shrink=0 executor=${ex})
    set_tests_properties(${t} ${t}_kill_step ${t}_kill_checkpoint ${t}_kill_restore ${t}_shrink ${t}_no_spare
      PROPERTIES LABELS hosted TIMEOUT 180)
  endforeach()
endfunction()

# apps/kmeans, 100000 points, k = 8, 20 steps.
set(KMEANS_ANSWER "0:kmeans: cost 33990390\\.346802 after 20 steps")
set(KMEANS_SAME "0:kmeans: the same as the run at one place")
iterative_app_tests(kmeans ${KMEANS_ANSWER} points=100000)
# Young's interval (every=0): checkpoints as often as a 1 s MTBF asks (two
# or more: the interval is shorter when steps are slower, as under the CI's
# load, where runs took 10 to 19), a kill in step 9 recovered.
add_test(NAME hosted.kmeans_young COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120
  --args fox.kill_at=2:step:9 --killed 2 --expect ${KMEANS_ANSWER} --expect ${KMEANS_SAME}
  --expect "0:kmeans: .* checkpoints at Young's interval"
  --expect "0:kmeans: .* ([2-9]|[1-9][0-9]+) checkpoints .*the last interval [1-9][0-9]* steps.* 1 failures, 1 restores"
  $<TARGET_FILE:kmeans> points=100000 every=0 mtbf=1 executor=spmd)
# apps/linreg, 100000 samples of 16 features, 20 steps: the error is the
# noise's variance (0.2^2 / 12).
iterative_app_tests(linreg "0:linreg: mean squared error 0\\.003336337 after 20 steps. \\|w - w\\*\\| 0\\.001237640")
fox_cluster_test(linreg NODES 3 IMAGE linreg LOCAL PEERS ARGS "-- executor=spmd" TIMEOUT 150
  EXPECT "0:linreg: mean squared error 0\\.003336337 after 20 steps. \\|w - w\\*\\| 0\\.001237640"
         "0:linreg: the same as the run at one place")

# apps/pagerank, 100000 vertices (20000 on QEMU nodes), 20 steps.
iterative_app_tests(pagerank "0:pagerank: rank checksum 3d1bec539ecae9c0 after 20 steps")
fox_cluster_test(pagerank NODES 3 IMAGE pagerank LOCAL PEERS ARGS "-- vertices=20000 executor=spmd" TIMEOUT 150
  EXPECT "0:pagerank: rank checksum 351002f57548cf9e after 20 steps"
         "0:pagerank: top vertices: 6838 \\(0\\.000297524\\) 13274 " "0:pagerank: the same as the run at one place")

add_test(NAME hosted.kmeans_bad_argument COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60
  --expect-exit 0:2 --expect-exit 1:2
  --expect "0:kmeans: bad argument 'executor=mpi': expected points=N \\(1\\.\\.67108864\\), .* executor=global\\|spmd, "
  $<TARGET_FILE:kmeans> executor=mpi)
set_tests_properties(hosted.kmeans_young hosted.kmeans_bad_argument PROPERTIES LABELS hosted TIMEOUT 180)

# On QEMU nodes: the same answer as on hosted places, and through a kill.
fox_cluster_test(kmeans NODES 3 IMAGE kmeans LOCAL PEERS ARGS "-- points=100000 executor=spmd" TIMEOUT 150
  EXPECT ${KMEANS_ANSWER} ${KMEANS_SAME})
fox_cluster_test(kmeans_kill NODES 4 IMAGE kmeans LOCAL PEERS KILLED 2 TIMEOUT 180
  ARGS "fox.spares=1 fox.kill_at=2:step:5 -- points=100000 every=4"
  EXPECT ${KMEANS_ANSWER} ${KMEANS_SAME} "0:kmeans: .* 21 steps .* 1 failures, 1 restores .* active places at the end: 0 1 3")

# Input files (input=FILE, apps/common/input.h): the generated inputs
# written as files (tests/apps/points.py, edges.py, the generators' own
# arithmetic), so that reading them must give the generated answers; place
# 0 serves the files (the FileSystem Ebb), the others read their blocks'
# splits from it. Odd block counts put split boundaries inside lines.
set(APP_INPUTS ${CMAKE_CURRENT_BINARY_DIR}/app_inputs)
add_test(NAME apps.input_files COMMAND sh -c "mkdir -p ${APP_INPUTS} && \
${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/points.py ${APP_INPUTS}/points.csv 100000 && \
${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/edges.py ${APP_INPUTS}/edges.txt 20000")
set_tests_properties(apps.input_files PROPERTIES FIXTURES_SETUP app_inputs LABELS hosted)
add_test(NAME hosted.kmeans_input COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
  --args fox.spares=1 --args fox.kill_at=2:step:5 --killed 2
  --expect "0:kmeans: 100000 points of 4 dimensions" --expect ${KMEANS_ANSWER} --expect ${KMEANS_SAME}
  --expect "0:kmeans: .* 21 steps .* 1 failures, 1 restores .* active places at the end: 0 1 3$"
  $<TARGET_FILE:kmeans> input=points.csv blocks=97 every=4 executor=spmd)
add_test(NAME hosted.pagerank_input COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120
  --args fox.kill_at=1:step:5 --killed 1
  --expect "0:pagerank: 20000 vertices, the edges of .*edges.txt"
  --expect "0:pagerank: rank checksum 351002f57548cf9e after 20 steps" --expect "0:pagerank: the same as"
  --expect "0:pagerank: .* 1 failures, 1 restores .* active places at the end: 0 2$"
  $<TARGET_FILE:pagerank> input=${APP_INPUTS}/edges.txt blocks=1001 every=4)
# Bad files: a clear error at place 0, exit status 1, no hang.
add_test(NAME hosted.kmeans_input_missing COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60 --expect-exit 0:1
  --expect "0:apgas: the program failed: .*cannot read no-such-points.csv: no such file"
  $<TARGET_FILE:kmeans> input=no-such-points.csv)
add_test(NAME hosted.pagerank_input_unsorted COMMAND sh -c "printf '0 1\\n1 0\\n0 2\\n' > unsorted.txt && exec \
${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cluster/hosted_nodes.py --nodes 2 --timeout 60 --expect-exit 0:1 \
--expect '0:apgas: the program failed: .*unsorted.txt: byte 8: the edges of vertex 0 are not on consecutive lines' \
$<TARGET_FILE:pagerank> input=unsorted.txt")
set_tests_properties(hosted.kmeans_input hosted.pagerank_input hosted.kmeans_input_missing
  hosted.pagerank_input_unsorted PROPERTIES LABELS hosted TIMEOUT 180 FIXTURES_REQUIRED app_inputs
  WORKING_DIRECTORY ${APP_INPUTS})
# On QEMU nodes (fox run, place 0 a Linux process): cluster.frontend.app_input.
# A node as place 0 has no files to serve: a clear error.
fox_cluster_test(kmeans_input_node0 NODES 2 IMAGE kmeans LOCAL PEERS TIMEOUT 150 EXIT 0:1
  ARGS "-- input=points.csv"
  EXPECT "0:apgas: the program failed: .*cannot read points.csv: the file server has no files")

# apps/lulesh: LULESH 2.0's Sedov problem (SPMD executor), 8 subdomains
# of 5^3 (LULESH -s 10's mesh) capped at 20 iterations through the suite,
# then whole (231 iterations), and 27 subdomains of 10^3 over 3 places:
# LULESH's published figures for -s 30 (932 iterations, origin energy
# 2.025075e+05). Subdomains per place: 8 over 3 places (3, 3, 2), 27 over
# 4, and 1 over 3 (two places hold none).
set(LULESH_20 "0:lulesh: iteration count 20, final origin energy 1\\.622358e\\+05 ")
iterative_app_tests(lulesh ${LULESH_20} SPMD_ONLY size=5 domains=2 iterations=20)
add_test(NAME hosted.lulesh_whole COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
  --args fox.spares=1 --args fox.kill_at=1:checkpoint:100 --killed 1
  --expect "0:lulesh: iteration count 231, final origin energy 2\\.720531e\\+04 "
  --expect "0:lulesh: the same as the run at one place" --expect "0:lulesh: .* 1 failures, 1 restores .* 0 3 2$"
  $<TARGET_FILE:lulesh> size=5 domains=2 every=50)
add_test(NAME hosted.lulesh_s30 COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 1 --timeout 300
  --expect "0:lulesh: 27 subdomains of 10\\^3 elements \\(a mesh of 30\\^3\\)"
  --expect "0:lulesh: iteration count 932, final origin energy 2\\.025075e\\+05 "
  $<TARGET_FILE:lulesh> size=10 domains=3 every=200 check=0)
add_test(NAME hosted.lulesh_uneven COMMAND ${FOX_HOSTED_NODES} --nodes 4 --cores 2 --timeout 120
  --args fox.kill_at=3:step:7 --killed 3 --expect "0:lulesh: the same as the run at one place"
  --expect "0:lulesh: iteration count 30, " --expect "0:lulesh: .* 1 failures, 1 restores .* 0 1 2$"
  $<TARGET_FILE:lulesh> size=3 domains=3 iterations=30 every=5)
add_test(NAME hosted.lulesh_idle_places COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120
  --expect "0:lulesh: iteration count 72, final origin energy " --expect "0:lulesh: the same as the run at one place"
  $<TARGET_FILE:lulesh> size=5 domains=1)
add_test(NAME hosted.lulesh_bad_argument COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60 --expect-exit 0:2
  --expect-exit 1:2 --expect "0:lulesh: bad argument 'domains=0': expected size=N \\(1\\.\\.200\\), domains=N \\(1\\.\\.16\\)"
  $<TARGET_FILE:lulesh> domains=0)
set_tests_properties(hosted.lulesh_whole hosted.lulesh_s30 hosted.lulesh_uneven hosted.lulesh_idle_places
  hosted.lulesh_bad_argument PROPERTIES LABELS hosted TIMEOUT 300)
# On QEMU nodes: the answer of hosted places, and through a kill.
fox_cluster_test(lulesh NODES 3 IMAGE lulesh LOCAL PEERS ARGS "-- size=5 domains=2" TIMEOUT 200
  EXPECT "0:lulesh: iteration count 231, final origin energy 2\\.720531e\\+04 \\(0x1\\.a9153f2a46606p\\+14\\)"
         "0:lulesh: the same as the run at one place")
fox_cluster_test(lulesh_kill NODES 4 IMAGE lulesh LOCAL PEERS KILLED 2 TIMEOUT 200
  ARGS "fox.spares=1 fox.kill_at=2:step:5 -- size=5 domains=2 iterations=20 every=4"
  EXPECT ${LULESH_20} "0:lulesh: the same as the run at one place"
         "0:lulesh: .* 21 steps .* 1 failures, 1 restores .* active places at the end: 0 1 3")

# apps/gups, HPCC RandomAccess on a GlobalArray and asynchronous delegates
# (issue 42): verification finds every word back (delegates are atomic at
# the word's home), aggregated (the default), one update per batch and in
# large batches; a place killed during the updates ends the run with the
# DeadPlaceException that names it (gups is not resilient), exit status 1.
set(GUPS_VERIFIED "0:gups: verification: 0 errors in 65536 words \\(0\\.0000%\\): PASSED")
add_test(NAME hosted.gups COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 120
  --expect "0:gups: table 2\\^16 words over 3 places, 262144 updates by 3 workers in .* \\(batches of 1408 bytes\\)"
  --expect ${GUPS_VERIFIED} $<TARGET_FILE:gups> log2=16)
add_test(NAME hosted.gups_one_per_batch COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120
  --expect "0:gups: .* \\(batches of 32 bytes\\)" --expect "0:gups: verification: 0 errors in 16384 words"
  $<TARGET_FILE:gups> log2=14 batch=0)
add_test(NAME hosted.gups_large_batches COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120
  --expect "0:gups: .* \\(batches of 65536 bytes\\)" --expect ${GUPS_VERIFIED} $<TARGET_FILE:gups> log2=16 batch=65536)
add_test(NAME hosted.gups_kill COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 150
  --kill-when "2:0:gups: table 2\\^22 words" --expect-exit 0:1
  --expect "0:gups: a place died: .*place 2.*: the table is lost \\(gups is not resilient\\)"
  $<TARGET_FILE:gups> log2=22)
add_test(NAME hosted.gups_bad_argument COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60 --expect-exit 0:2
  --expect-exit 1:2 --expect "0:gups: bad argument 'log2=40': expected log2=N \\(4\\.\\.36\\), batch=N .* or check=on\\|off"
  $<TARGET_FILE:gups> log2=40)
set_tests_properties(hosted.gups hosted.gups_one_per_batch hosted.gups_large_batches hosted.gups_kill
  hosted.gups_bad_argument PROPERTIES LABELS hosted TIMEOUT 180)
fox_cluster_test(gups NODES 2 SMP 2 IMAGE gups LOCAL PEERS ARGS "-- log2=16" TIMEOUT 150
  EXPECT "0:gups: table 2\\^16 words over 2 places, 262144 updates by 2 workers in " ${GUPS_VERIFIED})

# apps/uts, Unbalanced Tree Search on lifeline-based global load balancing
# (apgas/glb.h; issue 42): UTS's T1 counted over the places is the
# benchmark's count and the count of place 0 alone, with one core and with
# several cores per place (a worker per core); on QEMU nodes a smaller tree
# of the same family. A place killed during the search: not resilient, the
# DeadPlaceException that names it, exit status 1; resilient (epochs of
# 200 ms, each saved), the exact count after the place died mid-search (its
# workers restored elsewhere from the last saved epoch; fox.kill_at ends it
# at the start of an epoch): T1 with depth 11
# has 16,526,523 nodes (place 0 alone counts as many).
set(UTS_T1 "0:uts: t1 tree \\(geometric, depth 10, b 4, seed 19\\): 4130071 nodes over")
add_test(NAME hosted.uts COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120 --expect "${UTS_T1} 3 places"
  --expect "0:uts: counted alone at place 0: 4130071 nodes .*: the same count" $<TARGET_FILE:uts> tree=t1)
add_test(NAME hosted.uts_cores COMMAND ${FOX_HOSTED_NODES} --nodes 2 --cores 3 --timeout 120
  --expect "${UTS_T1} 2 places" --expect "0:uts: .*: the same count" $<TARGET_FILE:uts> tree=t1 n=64)
add_test(NAME hosted.uts_kill COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 150
  --kill-when "2:0:apgas: 3 places" --expect-exit 0:1
  --expect "0:uts: a place died during the search: .*place 2.*: its work is lost" $<TARGET_FILE:uts> tree=t1l)
add_test(NAME hosted.uts_resilient COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120
  --expect "${UTS_T1} 3 places" --expect "0:uts: resilient: [0-9]+ epochs of 200 ms, [0-9]+ saves .*, 0 places lost"
  $<TARGET_FILE:uts> tree=t1 resilient=on epoch_ms=200 check=off)
add_test(NAME hosted.uts_resilient_kill COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 150
  --args fox.kill_at=2:step:3 --killed 2
  --expect "0:glb: restored from epoch 3 after 1 places lost"
  --expect "0:uts: t1 tree \\(geometric, depth 11, b 4, seed 19\\): 16526523 nodes over 3 places"
  --expect "0:uts: resilient: .* 1 places lost, 1 restores"
  $<TARGET_FILE:uts> tree=t1 depth=11 resilient=on epoch_ms=200 trace=on check=off)
add_test(NAME hosted.uts_bad_argument COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60 --expect-exit 0:2
  --expect-exit 1:2 --expect "0:uts: bad argument 'tree=t9': expected tree=t1\\|t1l\\|t1xl, " $<TARGET_FILE:uts> tree=t9)
set_tests_properties(hosted.uts hosted.uts_cores hosted.uts_kill hosted.uts_resilient hosted.uts_resilient_kill
  hosted.uts_bad_argument PROPERTIES LABELS hosted TIMEOUT 180)
fox_cluster_test(uts NODES 2 SMP 2 IMAGE uts LOCAL PEERS ARGS "-- tree=t1 depth=8 check=on" TIMEOUT 150
  EXPECT "0:uts: t1 tree \\(geometric, depth 8, b 4, seed 19\\): [0-9]+ nodes over 2 places"
         "0:uts: counted alone at place 0: .*: the same count")
fox_cluster_test(uts_resilient_kill NODES 3 IMAGE uts LOCAL PEERS TIMEOUT 200 KILLED 2
  ARGS "fox.kill_at=2:step:2 -- tree=t1 resilient=on epoch_ms=100 trace=on check=on"
  EXPECT "0:glb: restored from epoch 2 after 1 places lost" "${UTS_T1} 3 places"
         "0:uts: resilient: .* 1 places lost, 1 restores" "0:uts: counted alone at place 0: .*: the same count")

# apps/bfs, Graph500's BFS (direction-optimizing, 1-D partition, Team
# exchanges; issue 42) on a scale-12 Kronecker graph: every tree validated
# as Graph500 validates it, and the same trees (vertices and edges reached,
# steps, depth sums) over 1 and 3 places, with 2 activity cores a place,
# and on QEMU nodes. A place killed during the searches: the
# DeadPlaceException that names it, exit status 1 (bfs is not resilient).
set(BFS_ROOT "0:bfs: root 3503: 3375 vertices and 65536 edges reached in 6 steps \\(3 bottom-up\\), depth sum 10130, .*: valid")
set(BFS_VALID "0:bfs: 4 roots: harmonic mean [0-9.]+ MTEPS .*: every tree valid")
add_test(NAME hosted.bfs COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120
  --expect "0:bfs: graph500 kronecker graph, scale 12, edgefactor 16: 4096 vertices, 65536 edges over 3 places"
  --expect ${BFS_ROOT} --expect "0:bfs: root 858: 3375 vertices .* depth sum 6749, .*: valid" --expect ${BFS_VALID}
  $<TARGET_FILE:bfs> scale=12 roots=4)
add_test(NAME hosted.bfs_one_place COMMAND ${FOX_HOSTED_NODES} --nodes 1 --timeout 120 --expect ${BFS_ROOT}
  --expect "0:bfs: root 858: 3375 vertices .* depth sum 6749, .*: valid" --expect ${BFS_VALID}
  $<TARGET_FILE:bfs> scale=12 roots=4)
add_test(NAME hosted.bfs_cores COMMAND ${FOX_HOSTED_NODES} --nodes 2 --cores 3 --timeout 120
  --expect "0:bfs: .* over 2 places \\(2 activity cores a place\\)" --expect ${BFS_ROOT} --expect ${BFS_VALID}
  $<TARGET_FILE:bfs> scale=12 roots=4)
add_test(NAME hosted.bfs_kill COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 150
  --kill-when "2:0:bfs: root " --expect-exit 0:1
  --expect "0:bfs: a place died: .*place 2.*: the graph is lost \\(bfs is not resilient\\)"
  $<TARGET_FILE:bfs> scale=18 roots=64)
add_test(NAME hosted.bfs_bad_argument COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60 --expect-exit 0:2
  --expect-exit 1:2 --expect "0:bfs: bad argument 'scale=31': expected scale=N \\(1\\.\\.30\\)"
  $<TARGET_FILE:bfs> scale=31)
set_tests_properties(hosted.bfs hosted.bfs_one_place hosted.bfs_cores hosted.bfs_kill hosted.bfs_bad_argument
  PROPERTIES LABELS hosted TIMEOUT 180)
fox_cluster_test(bfs NODES 2 SMP 2 IMAGE bfs LOCAL PEERS ARGS "-- scale=12 roots=4" TIMEOUT 150
  EXPECT "0:bfs: .* over 2 places" ${BFS_ROOT} ${BFS_VALID})

# apps/mcphoton, Monte Carlo photon transport as a dataflow of tasks on the
# Dht's task queue (fox/apgas/dataflow.h; issue 42): the tallies are the
# same bits over 3 places, with 2 workers a place, when place 0 simulates
# every batch alone, on QEMU nodes (the same checksum as hosted: the
# transport's arithmetic is the same on both), and when a place is killed
# at the start or after its first batch (its tasks queued again and run
# elsewhere; checksum of the failure-free run).
set(MCPHOTON_SMALL "0:mcphoton: 100000 photons: .* \\(tally checksum ffa8c84d36be8b66\\)")
set(MCPHOTON_BIG "0:mcphoton: 2000000 photons: .* \\(tally checksum 8b56acd899958a72\\)")
add_test(NAME hosted.mcphoton COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120 --expect ${MCPHOTON_SMALL}
  --expect "0:mcphoton: dataflow: 19 tasks, 19 runs, 0 queued again" --expect "0:mcphoton: .*: the same tallies"
  $<TARGET_FILE:mcphoton> photons=100000 tasks=16 check=on)
add_test(NAME hosted.mcphoton_cores COMMAND ${FOX_HOSTED_NODES} --nodes 2 --cores 3 --timeout 120
  --expect ${MCPHOTON_SMALL} $<TARGET_FILE:mcphoton> photons=100000 tasks=16)
add_test(NAME hosted.mcphoton_kill COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 150
  --kill-when "2:0:mcphoton: slab" --expect ${MCPHOTON_BIG}
  --expect "0:mcphoton: dataflow: 73 tasks, [0-9]+ runs, [0-9]+ queued again after 1 places died"
  $<TARGET_FILE:mcphoton> photons=2000000 tasks=64)
add_test(NAME hosted.mcphoton_kill_mid COMMAND ${FOX_HOSTED_NODES} --nodes 3 --cores 2 --timeout 150
  --kill-when "1:1:mcphoton: place 1 ran batch" --expect ${MCPHOTON_BIG}
  --expect "0:mcphoton: dataflow: 73 tasks, [0-9]+ runs, [0-9]+ queued again after 1 places died"
  $<TARGET_FILE:mcphoton> photons=2000000 tasks=64 trace=on)
add_test(NAME hosted.mcphoton_bad_argument COMMAND ${FOX_HOSTED_NODES} --nodes 2 --timeout 60 --expect-exit 0:2
  --expect-exit 1:2 --expect "0:mcphoton: bad argument 'g=1': expected .*g=X \\(-0\\.99\\.\\.0\\.99\\)"
  $<TARGET_FILE:mcphoton> g=1)
set_tests_properties(hosted.mcphoton hosted.mcphoton_cores hosted.mcphoton_kill hosted.mcphoton_kill_mid
  hosted.mcphoton_bad_argument PROPERTIES LABELS hosted TIMEOUT 180)
fox_cluster_test(mcphoton NODES 2 SMP 2 IMAGE mcphoton LOCAL PEERS ARGS "-- photons=100000 tasks=16 check=on"
  TIMEOUT 200 EXPECT ${MCPHOTON_SMALL} "0:mcphoton: .*: the same tallies")
# The ring's round trips between its first two nodes (pings=P, make bench
# B=hosts), then its laps.
add_test(NAME hosted.ring_pings COMMAND ${FOX_HOSTED_NODES} --nodes 3 --timeout 120
  --expect "1:ring: 200 round trips between node 1 and node 2: median [0-9.]+ us, p10 [0-9.]+ us, p90 [0-9.]+ us$"
  --expect "0:ring: 10 laps around 3 nodes" --expect "0:ring: every node said goodbye: job done"
  ${CMAKE_BINARY_DIR}/apps/ring/ring laps=10 pings=200)
set_tests_properties(hosted.ring_pings PROPERTIES LABELS hosted TIMEOUT 150)
