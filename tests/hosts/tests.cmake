# Issue 44: fox across several hosts. Each "host" is a network namespace with a
# hostname of its own on a bridge of the test's, managed by Slurm (Debian's
# slurmctld, slurmd, munge) configured in the test's directory
# (tests/hosts/slurm_hosts.py). Root; skipped (77) without it.
add_test(NAME hosts.slurm_hosts COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/hosts/slurm_hosts.py --hosts 3)
set_tests_properties(hosts.slurm_hosts PROPERTIES LABELS cluster TIMEOUT 300 SKIP_RETURN_CODE 77)
# fox cluster up inside a 3-host allocation: nodes spread over the hosts (agents
# started by srun), the ring, pi with a node killed, memcached with a node on
# each host, fox logs, down and the allocation's end leaving nothing.
add_test(NAME hosts.fox_across_hosts
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/hosts/fox_across_hosts.py
                 --fox ${CMAKE_SOURCE_DIR}/build/bin/fox)
set_tests_properties(hosts.fox_across_hosts PROPERTIES LABELS cluster TIMEOUT 900 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK qemu_tcg ENVIRONMENT "FOX_BUILD=${CMAKE_SOURCE_DIR}/build")
# fox cluster up --hosts over ssh (no Slurm): every host runs Dropbear with the
# test's key (root's home the test's directory, in the daemons' mount
# namespaces only). Root; skipped (77) without it.
add_test(NAME hosts.fox_over_ssh
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/hosts/fox_over_ssh.py
                 --fox ${CMAKE_SOURCE_DIR}/build/bin/fox)
set_tests_properties(hosts.fox_over_ssh PROPERTIES LABELS cluster TIMEOUT 600 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK qemu_tcg ENVIRONMENT "FOX_BUILD=${CMAKE_SOURCE_DIR}/build")
# A host's agent driven as the supervisor drives it, on this host: every boot
# ends in one exit (an image not on the host, a malformed boot, a boot QEMU
# refuses, a boot superseding a running one). Root; skipped (77) without it.
add_test(NAME hosts.host_agent_boots
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/hosts/host_agent_boots.py)
set_tests_properties(hosts.host_agent_boots PROPERTIES LABELS cluster TIMEOUT 300 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK qemu_tcg ENVIRONMENT "FOX_BUILD=${CMAKE_SOURCE_DIR}/build")
