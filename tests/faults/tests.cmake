# The fault campaign (tests/faults/campaign.py; `make faults` runs the whole
# one): a bounded form in `make test` with a fixed seed (replayable), hosted
# places through fox run: every app through a kill, and each kind of fault
# for one app or two (a full app-by-kind grid took 150 s of CI; `make
# faults` runs it). It fails on any wrong answer, hang or acknowledged
# memcached write lost.
add_test(NAME faults.campaign_bounded
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/faults/campaign.py --runs 1 --seed 42 --deadline 120
          --pairs pi:kill,pi:rogue,uts:pause,uts:pause_long,kmeans:kill_checkpoint,kmeans:kill_restore,gups:kill,bfs:kill,mcphoton:kill,memcached:kill,memcached:pause_long)
set_tests_properties(faults.campaign_bounded PROPERTIES LABELS hosted TIMEOUT 900 RUN_SERIAL TRUE
  PASS_REGULAR_EXPRESSION "faults: [0-9]+ runs, [0-9]+ faults, [0-9]+ correct, [0-9]+ documented errors, 0 wrong, 0 hangs, 0 writes lost")
