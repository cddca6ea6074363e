# Issue 44: fox across several hosts. Each "host" is a network namespace with a
# hostname of its own on a bridge of the test's, managed by Slurm (Debian's
# slurmctld, slurmd, munge) configured in the test's directory
# (tests/hosts/slurm_hosts.py). Root; skipped (77) without it.
add_test(NAME hosts.slurm_hosts COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/hosts/slurm_hosts.py --hosts 3)
set_tests_properties(hosts.slurm_hosts PROPERTIES LABELS cluster TIMEOUT 300 SKIP_RETURN_CODE 77)
