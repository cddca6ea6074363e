# Toolchain for fox compute-node images: clang/lld targeting bare x86-64.
#
# The C++ runtime is GCC's libstdc++/libsupc++/libgcc_eh (Debian's
# libstdc++-12-dev) over musl's libc.a (Debian's musl-dev). libstdc++ was built
# against glibc, so code is compiled with the glibc and libstdc++ headers (the
# ABI libstdc++.a expects) and linked with musl, which implements the glibc
# symbols libstdc++ uses; fox supplies the three musl lacks
# (kernel/x86_64/runtime.cc) and emulates the Linux system calls musl makes
# (kernel/x86_64/syscall.cc).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER clang)
set(CMAKE_CXX_COMPILER clang++)
set(CMAKE_ASM_COMPILER clang)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(FOX_GCC_DIR /usr/lib/gcc/x86_64-linux-gnu/12)
set(FOX_MUSL_LIB /usr/lib/x86_64-linux-musl/libc.a)

execute_process(COMMAND clang -print-resource-dir OUTPUT_VARIABLE FOX_CLANG_RESOURCE
                OUTPUT_STRIP_TRAILING_WHITESPACE)
set(_inc "-nostdinc -isystem /usr/include/c++/12 -isystem /usr/include/x86_64-linux-gnu/c++/12 \
-isystem ${FOX_CLANG_RESOURCE}/include -isystem /usr/include/x86_64-linux-gnu -isystem /usr/include")
set(_flags "--target=x86_64-unknown-none-elf -march=x86-64 -fno-pic -fno-pie -mcmodel=small \
-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-stack-protector -ffunction-sections \
-fdata-sections -D_GNU_SOURCE -DFOX_NATIVE=1")
set(CMAKE_C_FLAGS_INIT "${_flags} ${_inc}")
set(CMAKE_CXX_FLAGS_INIT "${_flags} ${_inc}")
set(CMAKE_ASM_FLAGS_INIT "--target=x86_64-unknown-none-elf")
