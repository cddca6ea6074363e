# Hosted build: unit tests (GoogleTest), fuzzers (libFuzzer), and the CTest
# table that boots native images in QEMU.
find_package(GTest REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
include(GoogleTest)
enable_testing()

set(FOX_NATIVE_DIR "${CMAKE_SOURCE_DIR}/build/native" CACHE PATH "native build directory")

# The platform-neutral kernel code, built twice: with ASan+UBSan for unit
# tests, and with coverage instrumentation as well for the fuzzers.
include(net/CMakeLists.txt)  # FOX_NET_CORE_SOURCES: the AM frame codec and reliable channel
set(FOX_HOST_SOURCES
  ${FOX_KERNEL_COMMON}
  ${FOX_NET_CORE_SOURCES}
  kernel/x86_64/multiboot.cc  # pure parsing, no privileged instructions
  ebb/fragments.cc            # large-message reassembly, pure logic
  tests/unit/host_platform.cc)
set(FOX_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=all)
add_library(fox_common STATIC ${FOX_HOST_SOURCES})
target_include_directories(fox_common PUBLIC kernel/include kernel net/include ebb/include)
target_compile_options(fox_common PUBLIC ${FOX_SANITIZE})
target_link_options(fox_common PUBLIC -fsanitize=address,undefined)
add_library(fox_common_fuzz STATIC ${FOX_HOST_SOURCES})
target_include_directories(fox_common_fuzz PUBLIC kernel/include kernel net/include ebb/include)
target_compile_options(fox_common_fuzz PUBLIC ${FOX_SANITIZE} -fsanitize=fuzzer-no-link)

# The hosted platform: the fox API on Linux threads (kernel/linux). Programs
# keep their own main(); --wrap=main lets the runtime start the cores first.
add_library(fox_hosted STATIC
  ${FOX_KERNEL_COMMON}
  kernel/common/event/context.cc
  kernel/common/event/context_x86_64.S
  kernel/common/event/loop.cc
  kernel/linux/platform.cc
  kernel/linux/boot_args.cc
  kernel/linux/sas.cc
  kernel/linux/start.cc
  ${FOX_NET_CORE_SOURCES}
  net/am.cc
  net/am_hosted.cc
  ebb/global_id_map.cc
  ebb/messenger.cc
  ebb/fragments.cc
  ebb/errors.cc ebb/id_allocator.cc ebb/local_table.cc ebb/quiescence.cc ebb/registry.cc ebb/stats.cc
  ebb/local_table_hosted.cc ebb/loop_hooks.cc)
target_include_directories(fox_hosted PUBLIC kernel/include ebb/include net/include PRIVATE net)
target_link_options(fox_hosted INTERFACE -Wl,--wrap=main)
target_link_options(fox_hosted INTERFACE -rdynamic)  # function names in std::terminate's backtraces (dladdr)
target_link_libraries(fox_hosted PUBLIC pthread)

# The Ebb model's unit tests: threads stand in for cores through a test shim
# (tests/unit/ebb_test_cores.cc, ebb_test_threads.cc), so they link the ebb
# sources directly. The same cases run on the fox runtime from tests/ebb_suite.
add_executable(ebb_tests
  ebb/errors.cc ebb/id_allocator.cc ebb/local_table.cc ebb/quiescence.cc ebb/registry.cc ebb/stats.cc
  ebb/local_table_hosted.cc
  tests/unit/ebb_id_test.cc tests/unit/ebb_lifetime_test.cc tests/unit/ebb_multicore_test.cc
  tests/unit/ebb_ref_test.cc tests/unit/ebb_shared_test.cc tests/unit/ebb_test_cores.cc tests/unit/ebb_test_threads.cc
  tests/unit/ebb_test_util.cc)
target_include_directories(ebb_tests PRIVATE kernel/include ebb/include tests/unit)
target_compile_options(ebb_tests PRIVATE ${FOX_SANITIZE})
target_link_options(ebb_tests PRIVATE -fsanitize=address,undefined)
target_link_libraries(ebb_tests PRIVATE GTest::gtest GTest::gtest_main pthread)
gtest_discover_tests(ebb_tests TEST_PREFIX unit.ebb. PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

add_subdirectory(tests/unit)
add_subdirectory(tests/fuzz)
add_subdirectory(tests/bench)
add_subdirectory(tests/ebb_suite)
# The platform-neutral half of the in-VM suite, as a Linux program.
add_executable(hosted_vmtest tests/vm/vmtest_main.cc tests/vm/runtime_tests.cc tests/vm/core_tests.cc tests/vm/ebb_tests.cc
  tests/vm/sas_tests.cc)
target_link_libraries(hosted_vmtest PRIVATE fox_hosted)
# The cluster tests' node program on the hosted runtime (native: tests/cluster).
add_executable(am_node_hosted tests/cluster/am_node.cc)
target_link_libraries(am_node_hosted PRIVATE fox_hosted)
include(tests/vm/tests.cmake)
include(tests/cluster/tests.cmake)
