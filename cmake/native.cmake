# Native images. Every image = the kernel objects + one application, linked
# twice so the image carries its own symbol table (boot/gen_symtab.py).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_program(FOX_LLD ld.lld REQUIRED)

add_library(fox_kernel OBJECT
  ${FOX_KERNEL_COMMON}
  kernel/x86_64/boot.S
  kernel/x86_64/isr.S
  kernel/x86_64/syscall_entry.S
  kernel/common/event/context.cc
  kernel/common/event/context_x86_64.S
  kernel/common/event/loop.cc
  kernel/x86_64/trampoline.S
  kernel/x86_64/acpi.cc
  kernel/x86_64/clock_gettime.cc
  kernel/x86_64/cpu_init.cc
  kernel/x86_64/event_platform.cc
  kernel/x86_64/exit_device.cc
  kernel/x86_64/gdt.cc
  kernel/x86_64/interrupts.cc
  kernel/x86_64/ioapic.cc
  kernel/x86_64/lapic.cc
  kernel/x86_64/main.cc
  kernel/x86_64/memory.cc
  kernel/x86_64/multiboot.cc
  kernel/x86_64/paging.cc
  kernel/x86_64/panic.cc
  kernel/x86_64/pci.cc
  kernel/x86_64/percpu.cc
  kernel/x86_64/random.cc
  kernel/x86_64/rtc.cc
  kernel/x86_64/runtime.cc
  kernel/x86_64/sas.cc
  kernel/x86_64/serial.cc
  kernel/x86_64/smp.cc
  kernel/x86_64/symbols.cc
  kernel/x86_64/syscall.cc
  kernel/x86_64/tsc.cc
  kernel/x86_64/virtio_net.cc
)
target_sources(fox_kernel PRIVATE
  ebb/errors.cc ebb/id_allocator.cc ebb/local_table.cc ebb/quiescence.cc ebb/registry.cc ebb/stats.cc
  ebb/loop_hooks.cc ebb/local_table_window.cc)
target_include_directories(fox_kernel PUBLIC kernel/include ebb/include)
# The Ebb translation table sits at a fixed address whose pages differ per
# core (kernel/include/fox/core_window.h; the hook is ebb/local_table_window.cc).
target_compile_definitions(fox_kernel PUBLIC FOX_EBB_TABLE_ADDRESS=0xFFFFFFFF80000000ull)

include(cmake/lwip.cmake)

# The active-message transport: the platform-neutral core (net/CMakeLists.txt:
# fox_net_core) and its native driver (NIC interrupt path, net/am*.cc).
include(net/CMakeLists.txt)
add_library(fox_am OBJECT net/am.cc net/am_native.cc ebb/global_id_map.cc ebb/messenger.cc ebb/fragments.cc)
target_include_directories(fox_am PRIVATE net)
target_link_libraries(fox_am PRIVATE fox_kernel fox_net_core)

set(FOX_LINKER_SCRIPT ${CMAKE_SOURCE_DIR}/kernel/x86_64/linker.ld)
set(FOX_RUNTIME_LIBS
  ${FOX_GCC_DIR}/libstdc++.a ${FOX_GCC_DIR}/libgcc_eh.a ${FOX_GCC_DIR}/libgcc.a ${FOX_MUSL_LIB})

# fox_add_app(NAME sources...): builds ${NAME}.elf, a bootable image whose
# main() is the application's.
function(fox_add_app name)
  add_library(${name}_objs OBJECT ${ARGN})
  target_link_libraries(${name}_objs PRIVATE fox_kernel fox_lwip fox_net_core)
  set(out ${CMAKE_BINARY_DIR}/${name}.elf)
  set(pass1 ${CMAKE_BINARY_DIR}/${name}.pass1.elf)
  set(symtab ${CMAKE_BINARY_DIR}/${name}.symtab)
  set(link ${FOX_LLD} -static -nostdlib --gc-sections --eh-frame-hdr -z max-page-size=4096
           -z noexecstack -T ${FOX_LINKER_SCRIPT}
           # libstdc++ (built for glibc) decides whether threads exist from the
           # weak symbol __pthread_key_create, and reaches sched_yield weakly:
           # without these, std::mutex would not lock across cores and
           # std::this_thread::yield would call address 0.
           -u __pthread_key_create -u sched_yield
           $<TARGET_OBJECTS:fox_kernel> $<TARGET_OBJECTS:fox_lwip> $<TARGET_OBJECTS:fox_net_core>
           $<TARGET_OBJECTS:fox_am> $<TARGET_OBJECTS:${name}_objs>
           --start-group ${FOX_RUNTIME_LIBS} --end-group)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${link} -o ${pass1}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py ${pass1} ${symtab}.bin ${symtab}.S
    COMMAND ${CMAKE_C_COMPILER} --target=x86_64-unknown-none-elf -c ${symtab}.S -o ${symtab}.o
    COMMAND ${link} ${symtab}.o -o ${out}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py --check ${pass1} ${out}
    DEPENDS fox_kernel fox_lwip fox_net_core fox_am ${name}_objs $<TARGET_OBJECTS:fox_kernel>
            $<TARGET_OBJECTS:fox_lwip> $<TARGET_OBJECTS:fox_net_core> $<TARGET_OBJECTS:fox_am>
            $<TARGET_OBJECTS:${name}_objs>
            ${FOX_LINKER_SCRIPT} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py
    COMMAND_EXPAND_LISTS
    COMMENT "Linking fox image ${name}.elf")
  add_custom_target(${name} ALL DEPENDS ${out})
endfunction()

add_subdirectory(apps)
add_subdirectory(tests/vm)
add_subdirectory(tests/cluster)
add_subdirectory(tests/ebb_suite)
add_subdirectory(tests/bench/native)
