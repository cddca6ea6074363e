# Cluster tests: several nodes in a network namespace of their own (bridge +
# taps, made and removed by boot/cluster.py). Label `cluster`; they need root
# (CAP_NET_ADMIN) and are skipped (exit 77) without it.
#
# fox_cluster_test(NAME NODES n [IMAGE img] [ARGS "boot args"] [NETEM "..."]
#                  [EXPECT "node:regex"...] [TIMEOUT s])
function(fox_cluster_test name)
  cmake_parse_arguments(T "" "NODES;IMAGE;ARGS;NETEM;TIMEOUT" "EXPECT" ${ARGN})
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
  foreach(e ${T_EXPECT})
    list(APPEND cmd --expect-node ${e})
  endforeach()
  foreach(accel tcg kvm)
    add_test(NAME cluster.${name}.${accel} COMMAND ${cmd} --accel ${accel})
    set_tests_properties(cluster.${name}.${accel} PROPERTIES LABELS cluster SKIP_RETURN_CODE 77
                         TIMEOUT ${T_TIMEOUT} RESOURCE_LOCK qemu_${accel})
  endforeach()
endfunction()

# Three nodes reach each other through the bridge (virtio-net, taps).
fox_cluster_test(l2_exchange NODES 3 ARGS "-- l2_exchange 3"
  EXPECT "0:l2: node 0 heard 0x6 of 0x6" "1:l2: node 1 heard 0x5 of 0x5" "2:l2: node 2 heard 0x3 of 0x3")
# The same through 20% loss and duplication injected on every tap.
fox_cluster_test(l2_exchange_lossy NODES 2 ARGS "-- l2_exchange 2" NETEM "loss 20% duplicate 10% delay 2ms 1ms"
  EXPECT "0:l2: node 0 heard 0x2 of 0x2" "1:l2: node 1 heard 0x1 of 0x1")
