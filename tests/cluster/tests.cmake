# Cluster tests: several nodes in a network namespace of their own, made and
# removed by boot/cluster.py (see its docstring for the address plan: node I
# is 10.77.0.(10+I), the host side 10.77.0.1). Label `cluster`; they need root
# (CAP_NET_ADMIN) and are skipped (exit 77) without it.
#
# fox_cluster_test(NAME NODES n [IMAGE img] [ARGS "boot args"] [TIMEOUT s]
#                  [NETEM "tc netem args"]          bridge + taps + netem (skips without sch_netem)
#                  [IMPAIR "loss=5 dup=5 ..."]      boot/hub.py instead of the bridge; the test
#                                                   fails unless every impairment asked for happened
#                  [HOST_CMD "sh command"...]       run in the namespace (env FOX_NODE<I>_IP, ...)
#                  [HOST_AFTER "node:regex"] [UNTIL_HOST]
#                  [EXPECT "node:regex"...])
function(fox_cluster_test name)
  cmake_parse_arguments(T "UNTIL_HOST" "NODES;IMAGE;ARGS;NETEM;IMPAIR;TIMEOUT;HOST_AFTER" "EXPECT;HOST_CMD" ${ARGN})
  if(NOT T_IMAGE)
    set(T_IMAGE vmtest)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  set(cmd ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/cluster.py --nodes ${T_NODES}
          --image ${FOX_NATIVE_DIR}/${T_IMAGE}.elf "--append=${T_ARGS}" --timeout ${T_TIMEOUT})
  if(T_NETEM)
    list(APPEND cmd "--netem=${T_NETEM}")
  endif()
  if(DEFINED T_IMPAIR OR "IMPAIR" IN_LIST T_KEYWORDS_MISSING_VALUES)  # IMPAIR "": the hub, unimpaired
    list(APPEND cmd "--impair=${T_IMPAIR}" --require-impairment)
  endif()
  foreach(h ${T_HOST_CMD})
    list(APPEND cmd "--host-cmd=${h}")
  endforeach()
  if(T_HOST_AFTER)
    list(APPEND cmd "--host-after=${T_HOST_AFTER}")
  endif()
  if(T_UNTIL_HOST)
    list(APPEND cmd --until-host)
  endif()
  foreach(e ${T_EXPECT})
    list(APPEND cmd --expect-node ${e})
  endforeach()
  # CTest's limit leaves the harness time to remove what it made.
  math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
  foreach(accel tcg kvm)
    add_test(NAME cluster.${name}.${accel} COMMAND ${cmd} --accel ${accel})
    set_tests_properties(cluster.${name}.${accel} PROPERTIES LABELS cluster SKIP_RETURN_CODE 77
                         TIMEOUT ${ctest_timeout} RESOURCE_LOCK qemu_${accel})
  endforeach()
endfunction()

# Three nodes reach each other through the bridge (virtio-net, taps).
fox_cluster_test(l2_exchange NODES 3 ARGS "-- l2_exchange 3"
  EXPECT "0:l2: node 0 heard 0x6 of 0x6" "1:l2: node 1 heard 0x5 of 0x5" "2:l2: node 2 heard 0x3 of 0x3")
# The same through 20% loss and duplication injected on every tap.
fox_cluster_test(l2_exchange_lossy NODES 2 ARGS "-- l2_exchange 2" NETEM "loss 20% duplicate 10% delay 2ms 1ms"
  EXPECT "0:l2: node 0 heard 0x2 of 0x2" "1:l2: node 1 heard 0x1 of 0x1")
# The same through the userspace hub (works without sch_netem): every frame
# between any two ports may be lost, duplicated, held behind the next one, and
# is delayed 1-3 ms; the hub's counters must show each of those happened.
fox_cluster_test(l2_exchange_hub_impaired NODES 3 ARGS "-- l2_exchange 3" TIMEOUT 90
  IMPAIR "loss=15 dup=10 reorder=10 delay=2 jitter=1 seed=7"
  EXPECT "0:l2: node 0 heard 0x6 of 0x6" "1:l2: node 1 heard 0x5 of 0x5" "2:l2: node 2 heard 0x3 of 0x3")

# Linux and lwIP ping each other. The node (net_static, static address from
# the harness's fox.ip) pings its gateway 10.77.0.2 with three 2 s tries; that
# address appears on the host side only after Linux's ICMP echo to the node
# got its replies, so both directions must work for the test to pass.
set(ping_then_gateway "python3 tests/cluster/icmp_ping.py $FOX_NODE0_IP --count 3 && ip addr add 10.77.0.2/24 dev $FOX_HOST_IF")
fox_cluster_test(ping_lwip NODES 1 ARGS "fox.gw=10.77.0.2 -- net_static" TIMEOUT 60
  HOST_AFTER "0:net: interface up" HOST_CMD "${ping_then_gateway}"
  EXPECT "0:I net: static address 10\\.77\\.0\\.10/255\\.255\\.255\\.0 gateway 10\\.77\\.0\\.2"
         "0:ping 10\\.77\\.0\\.2 \\(gateway\\): ok" "0:vmtest net_static: PASS")
# The same for two nodes through the hub's tap (no impairment).
fox_cluster_test(ping_lwip_hub NODES 2 ARGS "fox.gw=10.77.0.2 -- net_static" TIMEOUT 60 IMPAIR ""
  HOST_AFTER "1:net: interface up"
  HOST_CMD "python3 tests/cluster/icmp_ping.py $FOX_NODE0_IP --count 3 && python3 tests/cluster/icmp_ping.py $FOX_NODE1_IP --count 3 && ip addr add 10.77.0.2/24 dev $FOX_HOST_IF"
  EXPECT "0:ping 10\\.77\\.0\\.2 \\(gateway\\): ok" "1:ping 10\\.77\\.0\\.2 \\(gateway\\): ok")

# boot/hub.py on its own (fake nodes on the loopback; no QEMU, no root).
add_test(NAME cluster.hub_selftest COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cluster/hub_test.py)
set_tests_properties(cluster.hub_selftest PROPERTIES LABELS cluster TIMEOUT 60)
