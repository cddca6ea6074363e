# The `fox` frontend (boot/fox) driven as a user would, by
# tests/frontend/frontend_test.py: rootless clusters of QEMU nodes joined by
# the switch on 127.0.0.1, place 0 of each job a Linux process. Label
# `cluster`; no root needed. Each scenario checks that nothing it made is left
# (supervisor, QEMUs, place 0, state directory) and removes it if it is.
function(fox_frontend_test scenario timeout)  # ARGN: more test properties
  add_test(NAME cluster.frontend.${scenario}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/frontend/frontend_test.py ${scenario}
                   --fox ${CMAKE_SOURCE_DIR}/build/bin/fox)
  set_tests_properties(cluster.frontend.${scenario} PROPERTIES LABELS cluster TIMEOUT ${timeout}
                       ENVIRONMENT "FOX_ACCEL=tcg;FOX_BUILD=${CMAKE_SOURCE_DIR}/build" ${ARGN})
endfunction()
foreach(scenario lifecycle kill_during_job supervisor_killed run_interrupted two_clusters consecutive_jobs run_temporary wrong_key build_id iso
                memcached_job memcached_gateway add_places memcached_grow app_input)
  fox_frontend_test(${scenario} 600 RESOURCE_LOCK qemu_tcg)
endforeach()
# Root: a namespace with a bridge, taps and dnsmasq (--bridge, --pxe), and
# fox pxe serve on a bridge of the test's own. Skipped (77) without root.
foreach(scenario bridge pxe pxe_serve)
  fox_frontend_test(${scenario} 600 RESOURCE_LOCK qemu_tcg SKIP_RETURN_CODE 77)
endforeach()
# No QEMU: argument checking only.
fox_frontend_test(bad_arguments 120)
# Issue 44: the supervisor's metrics and live view. One file per scenario; the
# two without a cluster run in seconds.
function(fox_frontend_program name script)  # ARGN: the script's arguments
  add_test(NAME cluster.frontend.${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/frontend/${script} ${ARGN})
endfunction()
fox_frontend_program(metrics_format metrics_format.py)
set_tests_properties(cluster.frontend.metrics_format PROPERTIES LABELS "unit;frontend" TIMEOUT 60)
fox_frontend_program(web_server web_server.py)
set_tests_properties(cluster.frontend.web_server PROPERTIES LABELS "unit;frontend" TIMEOUT 60)
# A real Prometheus scrapes a cluster; headless Chromium shows its live view.
# Skipped (77) when make deps has not installed them.
foreach(scenario prometheus_scrape live_view)
  fox_frontend_program(${scenario} ${scenario}.py --fox ${CMAKE_SOURCE_DIR}/build/bin/fox)
  set_tests_properties(cluster.frontend.${scenario} PROPERTIES LABELS cluster TIMEOUT 600 RESOURCE_LOCK qemu_tcg
                       SKIP_RETURN_CODE 77 ENVIRONMENT "FOX_ACCEL=tcg;FOX_BUILD=${CMAKE_SOURCE_DIR}/build")
endforeach()
# No QEMU: the control connection's sends to a supervisor slow to read.
fox_frontend_test(control_backpressure 120)
# No QEMU: places as Linux processes (fox run --hosted).
fox_frontend_test(hosted 300)
# Issue 14: 64 nodes of 64 MiB on this host (the ring with 0 deaths, a pause
# below the suspicion timeout survived, a hang detected by all 63 survivors
# within the membership's bound), and what `make run NODES=32` runs. Alone:
# so many QEMUs starve any test beside them.
fox_frontend_test(scale64 900 RUN_SERIAL TRUE)
fox_frontend_test(run32 900 RUN_SERIAL TRUE)
# Issue 40: the frontend type-checked by mypy (Debian's, make deps installs it;
# boot/mypy.ini): a call with the wrong arguments, an attribute of something
# that may be None, a container of the wrong type fail here. Seconds.
find_program(FOX_MYPY mypy)
if(FOX_MYPY)
  add_test(NAME cluster.frontend.type_check
           COMMAND ${FOX_MYPY} --config-file ${CMAKE_SOURCE_DIR}/boot/mypy.ini
                   --cache-dir ${CMAKE_BINARY_DIR}/mypy_cache ${CMAKE_SOURCE_DIR}/boot/fox
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/boot)
else()
  add_test(NAME cluster.frontend.type_check
           COMMAND sh -c "echo 'FAILED: no mypy (make deps installs it)'; exit 1")
endif()
set_tests_properties(cluster.frontend.type_check PROPERTIES LABELS "unit;frontend" TIMEOUT 120)
