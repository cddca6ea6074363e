# fox_add_app(NAME [NATIVE_ONLY] sources...): an application, built for both
# platforms from the same sources (DESIGN.md "Frontend and jobs"):
#   native build  ${NAME}.elf, a bootable node image whose main() is the
#                 application's: fox_kernel + fox_lwip + fox_net + fox_ebb + fox_apgas +
#                 the app, linked twice so the image carries its own symbol
#                 table (boot/gen_symtab.py); ${NAME}_objs holds the app's objects
#   hosted build  the Linux program ${NAME} (fox_hosted; place 0 of a job runs
#                 as one), unless NATIVE_ONLY
if(FOX_NATIVE)
  find_program(FOX_LLD ld.lld REQUIRED)
  set(FOX_LINKER_SCRIPT ${CMAKE_SOURCE_DIR}/kernel/x86_64/linker.ld)
  set(FOX_RUNTIME_LIBS
    ${FOX_GCC_DIR}/libstdc++.a ${FOX_GCC_DIR}/libgcc_eh.a ${FOX_GCC_DIR}/libgcc.a ${FOX_MUSL_LIB})
  set(FOX_IMAGE_LIBS fox_kernel fox_lwip fox_net fox_ebb fox_apgas)
endif()

function(fox_add_app name)
  cmake_parse_arguments(A "NATIVE_ONLY" "" "" ${ARGN})
  if(NOT FOX_NATIVE)
    if(NOT A_NATIVE_ONLY)
      add_executable(${name} ${A_UNPARSED_ARGUMENTS})
      target_link_libraries(${name} PRIVATE fox_hosted)
    endif()
    return()
  endif()
  add_library(${name}_objs OBJECT ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name}_objs PRIVATE ${FOX_IMAGE_LIBS})
  set(out ${CMAKE_BINARY_DIR}/${name}.elf)
  set(pass1 ${CMAKE_BINARY_DIR}/${name}.pass1.elf)
  set(symtab ${CMAKE_BINARY_DIR}/${name}.symtab)
  set(objects)
  foreach(lib ${FOX_IMAGE_LIBS} ${name}_objs)
    list(APPEND objects $<TARGET_OBJECTS:${lib}>)
  endforeach()
  set(link ${FOX_LLD} -static -nostdlib --gc-sections --eh-frame-hdr -z max-page-size=4096
           -z noexecstack -T ${FOX_LINKER_SCRIPT}
           # libstdc++ (built for glibc) decides whether threads exist from the
           # weak symbol __pthread_key_create, and reaches sched_yield weakly:
           # without these, std::mutex would not lock across cores and
           # std::this_thread::yield would call address 0.
           -u __pthread_key_create -u sched_yield
           ${objects}
           --start-group ${FOX_RUNTIME_LIBS} --end-group)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${link} -o ${pass1}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py ${pass1} ${symtab}.bin ${symtab}.S
    COMMAND ${CMAKE_C_COMPILER} --target=x86_64-unknown-none-elf -c ${symtab}.S -o ${symtab}.o
    COMMAND ${link} ${symtab}.o -o ${out}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py --check ${pass1} ${out}
    DEPENDS ${FOX_IMAGE_LIBS} ${name}_objs ${objects} ${FOX_LINKER_SCRIPT} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py
    COMMAND_EXPAND_LISTS
    COMMENT "Linking fox image ${name}.elf")
  add_custom_target(${name} ALL DEPENDS ${out})
endfunction()
