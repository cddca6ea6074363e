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
#                  [HOST_AFTER "node:regex" or "all:regex"] [UNTIL_HOST]
#                  [DHCP]                           nodes get no fox.ip (a host command serves DHCP)
#                  [KILLED node...]                 killed by a host command: status not checked
#                  [LOCAL]                          boot/hub.py on 127.0.0.1, no namespace: runs without root
#                  [PEERS]                          every node gets fox.peers naming them all
#                  [EXIT status|I:status]          every (not killed) node's exit status (0), or node I's
#                  [EXPECT "node:regex"...] [REJECT "node:regex"...])
function(fox_cluster_test name)
  cmake_parse_arguments(T "UNTIL_HOST;DHCP;LOCAL;PEERS" "NODES;IMAGE;ARGS;NETEM;IMPAIR;TIMEOUT;HOST_AFTER;NIC;EXIT;SMP" "EXPECT;REJECT;HOST_CMD;KILLED" ${ARGN})
  if(NOT T_IMAGE)
    set(T_IMAGE vmtest)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  set(cmd ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/cluster.py --nodes ${T_NODES}
          --image ${FOX_NATIVE_DIR}/${T_IMAGE}.elf "--append=${T_ARGS}" --timeout ${T_TIMEOUT})
  if(T_NIC)
    list(APPEND cmd --nic ${T_NIC})
  endif()
  if(T_SMP)
    list(APPEND cmd --smp ${T_SMP})
  endif()
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
  if(T_DHCP)
    list(APPEND cmd --dhcp)
  endif()
  if(T_LOCAL)
    list(APPEND cmd --local)
  endif()
  if(T_PEERS)
    list(APPEND cmd --peers)
  endif()
  if(DEFINED T_EXIT)
    list(APPEND cmd --expect-exit ${T_EXIT})
  endif()
  foreach(k ${T_KILLED})
    list(APPEND cmd --killed ${k})
  endforeach()
  foreach(e ${T_EXPECT})
    list(APPEND cmd --expect-node ${e})
  endforeach()
  foreach(e ${T_REJECT})
    list(APPEND cmd --reject-node ${e})
  endforeach()
  # CTest's limit leaves the harness time to remove what it made.
  math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
  foreach(accel tcg kvm)
    add_test(NAME cluster.${name}.${accel} COMMAND ${cmd} --accel ${accel})
    set_tests_properties(cluster.${name}.${accel} PROPERTIES LABELS cluster SKIP_RETURN_CODE 77
                         TIMEOUT ${ctest_timeout} RESOURCE_LOCK qemu_${accel})
  endforeach()
endfunction()

# The default job (`make run`: apps/ring on three nodes joined by the hub on
# 127.0.0.1, no root needed): id ranges from node 0's GlobalIdMap, a token
# around the ring through the Messenger, goodbyes, every node exits 0. The
# switch neither loses nor duplicates: a duplicate a node receives is a
# retransmission that was not needed (the RTO floor, am_endpoint.h).
fox_cluster_test(default_job NODES 3 IMAGE ring LOCAL PEERS ARGS "-- laps=50" TIMEOUT 120
  EXPECT "0:ring: 3 nodes joined, with disjoint job-wide Ebb id ranges"
         "0:ring: 50 laps around 3 nodes: median lap [0-9.]+ us" "0:ring: every node said goodbye: job done"
         "1:ring: node 1: done, saying goodbye" "2:ring: node 2: done, saying goodbye"
  REJECT "0:am stats: duplicates_received" "1:am stats: duplicates_received" "2:am stats: duplicates_received")
# Alone: the duplicates it rejects are what an unimpaired network gives, not
# what five other emulated machines on the same two cores do to the timers.
set_tests_properties(cluster.default_job.tcg cluster.default_job.kvm PROPERTIES RUN_SERIAL TRUE)
# A node of the job killed mid-job: the others notice (phi accrual) and fail
# the job with status 1 instead of waiting forever.
fox_cluster_test(default_job_node_dies NODES 3 IMAGE ring PEERS ARGS "-- laps=1000000" TIMEOUT 120 EXIT 1
  KILLED 2 HOST_AFTER "0:ring: 3 nodes joined" HOST_CMD "sh tests/cluster/kill_node.sh 2"
  EXPECT "0:ring: node 0: node 2 died: the job fails" "1:ring: node 1: node 2 died: the job fails")

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

# ---- active messages (net/am.h): tests/cluster/am_node.cc on native nodes
# (am_node.elf) and on the hosted runtime (am_node_hosted, node 100 at the
# host side's 10.77.0.1). Every node knows every other from fox.peers.
set(am_peers "fox.peers=0@10.77.0.10,1@10.77.0.11,2@10.77.0.12,100@10.77.0.1")
set(am_hosted "FOX_ARGS='fox.node=100 ${am_peers}' $<TARGET_FILE:am_node_hosted>")

# 100,000 messages node 0 -> node 1 and 20,000 back, in order and exactly
# once, through a hub that loses, duplicates and reorders 5% of the AM frames;
# then 2 MB of puts written by node 1's interrupt-level handler into its SAS
# segment, checked byte for byte, and 2 MB of large messages (Messenger
# fragments, reassembled) the other way.
fox_cluster_test(am_stream_lossy NODES 2 IMAGE am_node TIMEOUT 240
  IMPAIR "loss=5 dup=5 reorder=5 seed=3 udp-port=7700"
  ARGS "${am_peers} -- 0:stream,1,100000 1:stream,0,20000 0:put,1,2000,1000 1:large,0,10,200000 0:many,1,500,10 1:many,0,500,10 0:quit,1"
  EXPECT "0:am: stream to node 1: 100000 of 100000 messages delivered in order, 0 errors"
         "0:am: 10 messages to each of 500 Ebbs on node 1: 500 Ebbs complete, 0 errors"
         "1:am: 10 messages to each of 500 Ebbs on node 0: 500 Ebbs complete, 0 errors"
         "1:am: 10 large messages of 200000 bytes to node 0: 10 received whole, 0 bad"
         "0:am: 2000 puts of 1000 bytes into node 1's SAS segment at 0x[0-9a-f]+: 0 bad bytes"
         "1:am: stream to node 0: 20000 of 20000 messages delivered in order, 0 errors"
         "1:am: stream from node 0: 100000 messages in order, 0 errors"
         "0:am: stream from node 1: 20000 messages in order, 0 errors")

# Nodes whose NICs have no MSI-X (legacy interface, INTx through the
# IOAPIC, level triggered), through the lossy hub: both directions at once.
fox_cluster_test(am_stream_intx NODES 2 IMAGE am_node TIMEOUT 240 NIC legacy-intx
  IMPAIR "loss=2 dup=2 reorder=2 seed=5 udp-port=7700"
  ARGS "${am_peers} -- 0:stream,1,50000 1:stream,0,50000 0:echo,1,500,1000 0:quit,1"
  EXPECT "0:virtio-net: device at 00:0[0-9a-f]\\.0 has no MSI-X: INTxA on IRQ 1?[0-9], level triggered"
         "0:am: stream to node 1: 50000 of 50000 messages delivered in order, 0 errors"
         "1:am: stream to node 0: 50000 of 50000 messages delivered in order, 0 errors"
         "0:am: 500 echoes from node 1, 0 bad")

# The same with the impairment injected by `tc netem` on every tap (skipped,
# with the reason, on kernels without sch_netem, like this project's CI
# machines; the hub variant above runs everywhere).
fox_cluster_test(am_stream_netem NODES 2 IMAGE am_node TIMEOUT 240
  NETEM "loss 5% duplicate 5% delay 1ms 1ms"
  ARGS "${am_peers} -- 0:stream,1,100000 0:quit,1"
  EXPECT "0:am: stream to node 1: 100000 of 100000 messages delivered in order, 0 errors"
         "1:am: stream from node 0: 100000 messages in order, 0 errors")

# Messages between Ebbs on native nodes and in a Linux process (the hosted
# runtime), both ways: echoes checked byte for byte, streams checked for
# order, and puts written by the receiving handler straight into a SAS
# segment by address (the same address on nodes and in the Linux process);
# the Linux side finishes by telling the nodes to quit.
fox_cluster_test(am_hosted_native NODES 2 IMAGE am_node TIMEOUT 180
  ARGS "${am_peers} -- 0:echo,100,300 1:stream,100,5000 0:put,100,500,1000 1:large,100,5,1000000 0:status,100"
  HOST_AFTER "1:am_node: ready"
  HOST_CMD "${am_hosted} 100:echo,0,300 100:echo,1,300,1000 100:stream,1,20000 100:stream,0,5000 100:put,1,1000,1400 100:large,0,5,1000000 100:status,1 100:sleep,500 100:quit,0,1"
  EXPECT "0:am: 300 echoes from node 100, 0 bad" "1:am: stream to node 100: 5000 of 5000 messages delivered in order"
         "1:am: stream from node 100: 20000 messages in order, 0 errors"
         "0:am: stream from node 100: 5000 messages in order, 0 errors"
         "0:am: 500 puts of 1000 bytes into node 100's SAS segment at 0x[0-9a-f]+: 0 bad bytes"
         "1:am: 5 large messages of 1000000 bytes to node 100: 5 received whole, 0 bad"
         "0:status\\| platform hosted" "0:status\\| peer.1 alive")

# A node killed mid-job (its QEMU gets SIGKILL) is declared dead by the
# others' phi accrual detectors within a bounded time (WaitDead's limit:
# 10 s), and sends to it fail from then on.
fox_cluster_test(am_node_dies NODES 3 IMAGE am_node TIMEOUT 120 KILLED 2
  ARGS "${am_peers} -- 2:echo,0,20 2:echo,1,20 2:sleep,60000 0:dead,2,10000 1:dead,2,10000 0:status_gone,2 0:status,1 0:quit,1"
  HOST_AFTER "2:am: 20 echoes from node 1" HOST_CMD "sh tests/cluster/kill_node.sh 2"
  EXPECT "0:am: node 2 declared dead after [0-9]+ ms" "1:am: node 2 declared dead after [0-9]+ ms"
         "0:am: status of node 2: peer dead" "0:status\\| platform native" "0:status\\| peer.0 alive")

# A death notice (what the frontend sends when a node's QEMU exits): node 0
# declares node 2 dead and tells the others. Node 2 is in fact alive and
# heartbeating, so only the notice can make node 1 declare it dead, which it
# must do well before a detector could (2 s; the detector needs ~2.7 s of
# silence). Fail-stop: node 2's next frame to a node that holds it dead is
# answered with a fence, and node 2 stops with status 3 (its exit status
# is the one not checked: KILLED).
fox_cluster_test(am_dead_notice NODES 3 IMAGE am_node TIMEOUT 120 KILLED 2
  ARGS "${am_peers} -- 0:echo,2,20 0:notify_dead,2 0:quit,1 1:dead,2,2000 2:sleep,3000 2:quit,2"
  EXPECT "0:am: told the job node 2 is dead" "1:am: node 2 declared dead after [0-9]+ ms"
         "1:am stats: dead_notices_received 1" "1:am_node: node 2 is dead"
         "2:am: the job declared this node dead \\(told by node [01]\\): it stops \\(fail-stop\\), status 3"
         "2:fox: exit status 3"
  REJECT "0:a stopped subscriber heard" "1:a stopped subscriber heard")

# Crafted bad frames from Linux (every DropReason the decoder and channel
# have, plus random bytes) to a live node, which must drop and count them and
# still serve a real peer (the hosted node) afterwards.
fox_cluster_test(am_bad_frames NODES 1 IMAGE am_node TIMEOUT 120
  ARGS "${am_peers} -- 0:sleep,1"
  HOST_AFTER "0:am_node: ready"
  HOST_CMD "python3 tests/cluster/am_bad_frames.py 10.77.0.10 0 --source 100 --rounds 20 && ${am_hosted} 100:echo,0,200 100:stream,0,2000 100:quit,0"
  EXPECT "0:am stats: dropped.bad_mac 20" "0:am stats: dropped.bad_magic 40" "0:am stats: dropped.bad_version 20"
         "0:am stats: dropped.wrong_job 20" "0:am stats: dropped.wrong_destination 20" "0:am stats: dropped.bad_flags 20"
         "0:am stats: dropped.bad_count 20" "0:am stats: dropped.record_overrun 20" "0:am stats: dropped.bad_padding 20"
         "0:am stats: dropped.out_of_window 20" "0:am stats: dropped.stale 20" "0:am stats: dropped.truncated 40"
         "0:am stats: dropped.bad_length 20"
         "0:am: stream from node 100: 2000 messages in order, 0 errors" "0:am_node: node 0 done, 0 errors")

# The GlobalIdMap Ebb's network half: node 0 serves it; a native node and a
# Linux process each take 600 job-wide Ebb ids (AllocateId over ranges from
# the map), publish their ranges in the map and check them disjoint from the
# other's, read back through the map.
fox_cluster_test(am_global_id_map NODES 2 IMAGE am_node TIMEOUT 120
  ARGS "${am_peers} -- 1:idmap,600,100"
  HOST_AFTER "1:am_node: ready"
  HOST_CMD "${am_hosted} 100:idmap,600,1 100:sleep,300 100:quit,0,1"
  EXPECT "1:idmap: node 1: 600 job-wide ids in [0-9]+ ranges, none in node 100's [0-9]+ ranges"
         "0:am_node: node 0 done, 0 errors")

# TCP echo from a Linux client (Python, in the namespace) to lwIP on a node:
# three connections at once, 200 KB each, every byte back in order.
fox_cluster_test(tcp_echo_linux_client NODES 1 IMAGE am_node TIMEOUT 120
  ARGS "${am_peers} -- 0:tcp_echo,7,3"
  HOST_AFTER "0:tcp_echo: listening on port 7"
  HOST_CMD "python3 tests/cluster/tcp_echo_client.py 10.77.0.10 7 3 200000"
  EXPECT "0:tcp_echo: 3 connections, 600000 bytes echoed")

# DHCP inside the namespace: the nodes have no fox.ip and take their
# addresses (the plan's, by MAC) from tests/cluster/dhcp_server.py on the host
# side, then talk active messages to each other at those addresses.
fox_cluster_test(am_dhcp NODES 2 IMAGE am_node TIMEOUT 120 DHCP
  ARGS "${am_peers} -- 0:echo,1,100 0:quit,1"
  HOST_CMD "python3 tests/cluster/dhcp_server.py $FOX_HOST_IF --count 2"
  EXPECT "0:I net: DHCP lease 10\\.77\\.0\\.10/255\\.255\\.255\\.0 from 10\\.77\\.0\\.1" "1:I net: DHCP lease 10\\.77\\.0\\.11/"
         "0:am: 100 echoes from node 1, 0 bad")

# The memcached app on a fox node (lwIP TCP 11211), driven by stock clients
# from the namespace: every memccapable test (text and binary; its quit tests
# need a FIN after the answer, not lwIP's reset for unread data) and the
# pymemcache conversation. Two kernel cores: the Dht's shards on both, the
# connections spread over both (cores=0; cores_check.py: 8 at once, counters
# summed).
fox_cluster_test(memcached_stock_clients NODES 1 IMAGE memcached TIMEOUT 200 UNTIL_HOST SMP 2 ARGS "fox.kcores=2 -- cores=0"
  HOST_AFTER "0:memcached: node 0 serving" EXPECT "0:dht: started on 1 nodes, r = 2, 16 shards on 2 cores"
  "0:memcached: node 0 serving on 10\\.77\\.0\\.10:11211 \\(the job's Dht, 32 MiB, connections on 2 cores\\)"
  HOST_CMD "python3 tests/memcached/conformance.py remote 10.77.0.10 11211 tests/memcached/pymemcache_check.py 2")

# The memcached app over the Dht on 4 fox nodes (r = 2), driven (once every
# node serves) from the namespace by stock clients
# (tests/memcached/dht_cluster.py): memccapable
# through node 1 (most keys' primaries are other nodes), flush_all, 100,000
# keys set with pymemcache through every node, node 3 SIGKILLed while a
# tenth of them are rewritten through the survivors, every key read back
# through a survivor other than the one that set it, and the survivors'
# copies counted until every key has r again.
fox_cluster_test(memcached_dht_failover NODES 4 IMAGE memcached PEERS TIMEOUT 500 UNTIL_HOST KILLED 3
  HOST_AFTER "all:memcached: node [0-9]+ serving"
  HOST_CMD "python3 tests/memcached/dht_cluster.py --nodes 10.77.0.10,10.77.0.11,10.77.0.12,10.77.0.13 --victim 3 --keys 100000"
  EXPECT "0:dht: node 3 died: ring epoch 1, 3 nodes" "1:dht: rebuild for ring epoch 1: [0-9]+ copies to new owners, 0 failed")

# libFOX on the Dht (dht.h's Add/Take/WaitFor, dht_queue.h) under contention
# from 4 hosted nodes at once: a counter, counters 4 events on each core of
# every node add to (none lost), a semaphore whose takes wait at the
# primary for every node's posts, a task queue whose 400 tasks are each popped
# exactly once, waits that time out (tests/cluster/dht_node/sync.cc).
# The nodes suspect after 5 s of silence (not 1 s): CTest runs QEMU clusters
# beside this test, and a starved process is not a dead one.
# Nodes of 3 cores whose shards lie on 2 of them (fox.dht_cores=2: nodes 0
# and 1) or on all 3 (nodes 2 and 3): the nodes need not agree on that.
set(sync_expect)
foreach(n RANGE 0 3)
  if(n LESS 2)
    list(APPEND sync_expect --node-args "${n}:fox.dht_cores=2" --expect "${n}:dht: started on 4 nodes, r = 2, 16 shards on 2 cores")
  else()
    list(APPEND sync_expect --expect "${n}:dht: started on 4 nodes, r = 2, 16 shards on 3 cores")
  endif()
  list(APPEND sync_expect --node-args "${n}:fox.suspect_ms=5000"
    --expect "${n}:dht_sync: node ${n}: counter 400 after 4 nodes added 100 each"
    --expect "${n}:dht_sync: node ${n}: 4800 adds from 4 events on each of 3 cores of every node, none lost"
    --expect "${n}:dht_sync: node ${n}: took 100 of the semaphore, every node done, it holds 0"
    --expect "${n}:dht_sync: node ${n}: a waiting take woken by a post from each of 3 cores"
    --expect "${n}:dht_sync: node ${n}: popped 100 tasks, all 400 tasks of every node popped exactly once"
    --expect "${n}:dht_sync: node ${n}: a task a popper stranded counted ready again and popped"
    --expect "${n}:dht_sync: node ${n}: waits timed out as asked" --expect "${n}:dht_node: done")
endforeach()
add_test(NAME hosted.dht_sync COMMAND ${FOX_HOSTED_NODES}
  --nodes 4 --cores 3 --timeout 150 ${sync_expect} $<TARGET_FILE:dht_node_hosted> sync 100)
set_tests_properties(hosted.dht_sync PROPERTIES LABELS hosted TIMEOUT 200)
# The same on a node alone (r = 1), of 3 cores: every key has one owner, so
# a core writes another core's shard in place (dht/local.cc's WriteShared, under the
# shard's lock) while the semaphore's takes wait at the shard's core (which
# closes those writes: its posts must wake them there).
add_test(NAME hosted.dht_sync_alone COMMAND ${FOX_HOSTED_NODES}
  --nodes 1 --cores 3 --timeout 100
  --expect "0:dht: started on 1 nodes, r = 1, 16 shards on 3 cores"
  --expect "0:dht_sync: node 0: counter 100 after 1 nodes added 100 each"
  --expect "0:dht_sync: node 0: 1200 adds from 4 events on each of 3 cores of every node, none lost \\([1-9][0-9]* writes applied here to another core's shard\\)"
  --expect "0:dht_sync: node 0: took 100 of the semaphore, every node done, it holds 0"
  --expect "0:dht_sync: node 0: a waiting take woken by a post from each of 3 cores"
  --expect "0:dht_sync: node 0: popped 100 tasks, all 100 tasks of every node popped exactly once"
  --expect "0:dht_sync: node 0: a task a popper stranded counted ready again and popped"
  --expect "0:dht_sync: node 0: waits timed out as asked" --expect "0:dht_node: done"
  $<TARGET_FILE:dht_node_hosted> sync 100 1)
set_tests_properties(hosted.dht_sync_alone PROPERTIES LABELS hosted TIMEOUT 150)

# Fail-stop for a node declared dead while it still runs (am's fencing,
# tests/cluster/dht_node/zombie.cc): node 2 stops itself (SIGSTOP) and
# is declared dead; node 0 rewrites 300 keys on the survivors and resumes
# it; its read of a key it was the primary of never answers from its stale
# copy (read leases), its write is never acknowledged, and it stops with
# status 3; every key reads back new. Suspicion 3 s: a starved process beside QEMU tests is not
# a dead one.
set(zombie_args)
foreach(n RANGE 0 2)
  list(APPEND zombie_args --node-args "${n}:fox.suspect_ms=3000")
endforeach()
add_test(NAME hosted.dht_zombie COMMAND ${FOX_HOSTED_NODES}
  --nodes 3 --timeout 120 ${zombie_args} --expect-exit 2:3
  --expect "0:dht_zombie: set 300 keys: 0 failed"
  --expect "0:dht_zombie: node 2 declared dead [0-9]+ ms after it stopped itself"
  --expect "0:dht_zombie: every key rewritten on the survivors: 0 failed"
  --expect "0:dht_zombie: node 2 resumed, and ended"
  --expect "0:dht_zombie: 300 keys read back: 300 fresh, 0 stale, 0 missing; the zombie's write: not found"
  --expect "0:dht_node: done" --expect "1:dht_node: done"
  --expect "2:am: the job declared this node dead \\(told by node [01]\\): it stops \\(fail-stop\\), status 3"
  --reject "2:ACKNOWLEDGED" --reject "2:READ STALE"
  $<TARGET_FILE:dht_node_hosted> zombie 300)
set_tests_properties(hosted.dht_zombie PROPERTIES LABELS hosted TIMEOUT 180)

# The Dht (ebb/include/fox/ebb/dht.h) on hosted nodes on 127.0.0.1 (no
# root, no QEMU): node 0 sets 2000 keys and 4 values of 1 MiB, the last
# node is killed (SIGKILL), node 0 sets 200 keys meanwhile and reads every
# key back; after the rebuild each survivor holds every item. r = 2 on 3
# nodes, r = 3 on 4. Nodes of 3 cores: every node's requests are served by
# its shards on all 3 (dht.h, "Shards"). The nodes die with the script (PR_SET_PDEATHSIG),
# which kills them on any failure or timeout.
foreach(shape "3;2" "4;3")
  list(GET shape 0 nodes)
  list(GET shape 1 r)
  math(EXPR victim "${nodes} - 1")
  set(expect_survivors)
  foreach(n RANGE 1 ${victim})
    if(NOT n EQUAL victim)
      list(APPEND expect_survivors --expect "${n}:dht: node ${n} holds 2407 live items of 2407" --expect "${n}:dht_node: done"
        --expect "0:dht: node ${n}'s status report: dht.live 2407"
        --expect "${n}:dht: node ${n} served requests on 3 of 3 cores"
        --expect "${n}:dht: node ${n}: every replaced item freed")
    endif()
  endforeach()
  add_test(NAME hosted.dht_failover_r${r} COMMAND ${FOX_HOSTED_NODES}
    --nodes ${nodes} --cores 3 --timeout 150 --killed ${victim}
    --expect "0:dht: add, replace, cas, delete and bad sizes answered as memcached would"
    --expect "0:dht: ([0-9]+) malformed requests to the peers: \\1 answered invalid argument"
    --expect "0:dht: set 2000 keys and 4 values of 1 MiB through node 0: 0 failed"
    --expect "0:dht: 200 keys added while node ${victim} died: 0 failed; a counter added to 200 times reads 200"
    --expect "0:dht: node ${victim} killed: read 2204 of 2204 keys back from node 0, 0 missing, 0 wrong"
    --expect "0:dht: after the death: 200 more keys set \\(0 failed\\) and 200 read back"
    --expect "0:dht: node 0 holds 2407 live items of 2407 after the rebuild"
    --expect "0:dht: node 0 served requests on 3 of 3 cores \\([1-9][0-9]* gets read from another core's shard\\)"
    --expect "0:dht_node: done" ${expect_survivors}
    $<TARGET_FILE:dht_node_hosted> 0 ${victim} 2000 ${r})
  set_tests_properties(hosted.dht_failover_r${r} PROPERTIES LABELS hosted TIMEOUT 200)
endforeach()

# Rebalancing after a join (dht.h, "Joins"; tests/cluster/dht_node/join.cc):
# nodes 0-2 run the Dht, node 0 sets 3000 keys, node 3 joins while node 0
# sets 1500 more; every key reads back and every node holds each key
# it owns in the ring of 4, and none it does not (r = 2: 9200 copies). With
# kill, node 1 dies as the join starts: the join goes on in the ring of
# 0, 2 and 3, and nothing acknowledged is lost.
set(join_expect)
foreach(n RANGE 0 3)
  list(APPEND join_expect --expect "${n}:dht_join: node ${n}: holds ([0-9]+) of the \\1 keys it owns, 0 it does not own")
endforeach()
add_test(NAME hosted.dht_join COMMAND ${FOX_HOSTED_NODES}
  --nodes 4 --timeout 120 ${join_expect}
  --expect "0:dht_join: node 0: 4600 of 4600 keys read back after node 3 joined, 0 missing, 0 wrong"
  --expect "3:dht_join: node 3 joined in [0-9]+ ms, [1-9][0-9]* items streamed to it"
  $<TARGET_FILE:dht_node_hosted> join 3000)
list(REMOVE_AT join_expect 2 3)  # node 1's: it dies
add_test(NAME hosted.dht_join_kill COMMAND ${FOX_HOSTED_NODES}
  --nodes 4 --timeout 120 --killed 1 ${join_expect}
  --expect "0:dht_join: node 0: 4600 of 4600 keys read back after node 3 joined, 0 missing, 0 wrong"
  --expect "0:dht: node 1 died" --expect "3:dht: joined: ring epoch 2, 3 nodes"
  $<TARGET_FILE:dht_node_hosted> join 3000 kill)
set_tests_properties(hosted.dht_join hosted.dht_join_kill PROPERTIES LABELS hosted TIMEOUT 180)

# A second death before the first one's move settles (tests/cluster/dht_cascade.cc):
# 5 nodes, r = 3; node 1 dies, node 2 dies as it hears of it (before copying
# its share of the move); once the 3 survivors settle, each holds every key.
add_test(NAME hosted.dht_cascade COMMAND ${FOX_HOSTED_NODES}
  --nodes 5 --timeout 120 --killed 1 --killed 2
  --expect "0:dht_cascade: node 0: 2000 of 2000 keys read back after two deaths"
  --expect "0:dht: settled at ring epoch 2, 3 nodes"
  --expect "0:dht_cascade: node 0: done" --expect "3:dht_cascade: node 3: done" --expect "4:dht_cascade: node 4: done"
  $<TARGET_FILE:dht_cascade_hosted> 2000)
set_tests_properties(hosted.dht_cascade PROPERTIES LABELS hosted TIMEOUT 180)

# Tombstones are collected (dht.h, "Tombstones";
# tests/cluster/dht_node/tombstones.cc, grace 1 s): 2000 keys set and
# deleted on 3 nodes (r = 2), no tombstone left on any node within 20 s; half the keys set again start at
# version 1 and read back, the other half stay deleted, and each node holds
# exactly its copies of the first half.
set(tomb_expect)
foreach(n RANGE 0 2)
  list(APPEND tomb_expect --expect "${n}:dht_tombstones: node ${n}: no tombstone left: [0-9]+ collected here, 0 entries left"
                          --expect "${n}:dht_tombstones: node ${n}: holds ([0-9]+) keys, owns \\1, \\1 entries")
endforeach()
add_test(NAME hosted.dht_tombstones COMMAND ${FOX_HOSTED_NODES}
  --nodes 3 --timeout 120 ${tomb_expect}
  --expect "0:dht_tombstones: node 0: 2000 keys set and deleted: [1-9][0-9]* tombstones here, 0 live"
  --expect "0:dht_tombstones: node 0: 1000 keys set again at version 1 .0 failed., 1000 of 1000 read back. 1000 of 1000 deleted ones absent"
  $<TARGET_FILE:dht_node_hosted> tombstones 2000)
set_tests_properties(hosted.dht_tombstones PROPERTIES LABELS hosted TIMEOUT 180)
