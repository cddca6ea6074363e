# The fault campaign (tests/faults/campaign.py; `make faults` runs the whole
# one): a bounded form in `make test`, one run per app and kind with a fixed
# seed (replayable), hosted places through fox run. It fails on any wrong
# answer, hang or acknowledged memcached write lost.
add_test(NAME faults.campaign_bounded
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/faults/campaign.py --runs 1 --seed 42
          --apps pi,uts,kmeans,gups,bfs,mcphoton,memcached --kinds kill,pause,pause_long,rogue --deadline 120)
set_tests_properties(faults.campaign_bounded PROPERTIES LABELS hosted TIMEOUT 900 RUN_SERIAL TRUE
  PASS_REGULAR_EXPRESSION "faults: [0-9]+ runs, [0-9]+ faults, [0-9]+ correct, [0-9]+ documented errors, 0 wrong, 0 hangs, 0 writes lost")
