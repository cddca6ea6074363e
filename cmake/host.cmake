# Hosted build: unit tests (GoogleTest), fuzzers (libFuzzer), and the CTest
# table that boots native images in QEMU.
find_package(GTest REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
include(GoogleTest)
enable_testing()

set(FOX_NATIVE_DIR "${CMAKE_SOURCE_DIR}/build/native" CACHE PATH "native build directory")

# The platform-neutral kernel code, built twice: with ASan+UBSan for unit
# tests, and with coverage instrumentation as well for the fuzzers.
set(FOX_HOST_SOURCES
  ${FOX_KERNEL_COMMON}
  kernel/x86_64/multiboot.cc  # pure parsing, no privileged instructions
  tests/unit/host_platform.cc)
set(FOX_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=all)
add_library(fox_common STATIC ${FOX_HOST_SOURCES})
target_include_directories(fox_common PUBLIC kernel/include kernel)
target_compile_options(fox_common PUBLIC ${FOX_SANITIZE})
target_link_options(fox_common PUBLIC -fsanitize=address,undefined)
add_library(fox_common_fuzz STATIC ${FOX_HOST_SOURCES})
target_include_directories(fox_common_fuzz PUBLIC kernel/include kernel)
target_compile_options(fox_common_fuzz PUBLIC ${FOX_SANITIZE} -fsanitize=fuzzer-no-link)

add_subdirectory(tests/unit)
add_subdirectory(tests/fuzz)
add_subdirectory(tests/bench)
include(tests/vm/tests.cmake)
