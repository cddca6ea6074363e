# The `fox` frontend (boot/fox) driven as a user would, by
# tests/frontend/frontend_test.py: rootless clusters of QEMU nodes joined by
# the switch on 127.0.0.1, place 0 of each job a Linux process. Label
# `cluster`; no root needed. Each scenario checks that nothing it made is left
# (supervisor, QEMUs, place 0, state directory) and removes it if it is.
foreach(scenario lifecycle kill_during_job supervisor_killed run_interrupted two_clusters consecutive_jobs run_temporary wrong_key build_id iso
                memcached_job)
  add_test(NAME cluster.frontend.${scenario}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/frontend/frontend_test.py ${scenario}
                   --fox ${CMAKE_SOURCE_DIR}/build/bin/fox)
  set_tests_properties(cluster.frontend.${scenario} PROPERTIES LABELS cluster TIMEOUT 600 RESOURCE_LOCK qemu_tcg
                       ENVIRONMENT "FOX_ACCEL=tcg;FOX_BUILD=${CMAKE_SOURCE_DIR}/build")
endforeach()
# No QEMU: argument checking only.
add_test(NAME cluster.frontend.bad_arguments
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/frontend/frontend_test.py bad_arguments
                 --fox ${CMAKE_SOURCE_DIR}/build/bin/fox)
set_tests_properties(cluster.frontend.bad_arguments PROPERTIES LABELS cluster TIMEOUT 120)
# Issue 14: 64 nodes of 64 MiB on this host (the ring with 0 deaths, a pause
# below the suspicion timeout survived, a hang detected by all 63 survivors
# within the membership's bound). Alone: 64 QEMUs starve any test beside them.
# And what `make run NODES=32` runs.
foreach(scenario scale64 run32)
  add_test(NAME cluster.frontend.${scenario}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/frontend/frontend_test.py ${scenario}
                   --fox ${CMAKE_SOURCE_DIR}/build/bin/fox)
  set_tests_properties(cluster.frontend.${scenario} PROPERTIES LABELS cluster TIMEOUT 900 RUN_SERIAL TRUE
                       ENVIRONMENT "FOX_ACCEL=tcg;FOX_BUILD=${CMAKE_SOURCE_DIR}/build")
endforeach()
