# fox_add_app(NAME [NATIVE_ONLY] [BENCH] sources...): an application, built for both
# platforms from the same sources (DESIGN.md "Frontend and jobs"):
#   native build  ${NAME}.elf, a bootable node image whose main() is the
#                 application's: fox_kernel + fox_lwip + fox_net + fox_ebb + fox_apgas +
#                 the app, linked twice so the image carries its own symbol
#                 table (boot/gen_symtab.py); ${NAME}_objs holds the app's objects
#   hosted build  the Linux program ${NAME} (fox_hosted; place 0 of a job runs
#                 as one), unless NATIVE_ONLY
# BENCH: its own image only for benchmarks, built by the target bench_images
# (make bench), not by all: no test boots it, and each image's links cost CI.
# Apps with a hosted program (not NATIVE_ONLY) also join the pool image
# fox.elf (fox_add_pool_image below): their sources are compiled once more
# with `main` renamed fox_app_main_NAME, so their main must be
# `int main(int argc, char** argv)` and must return a value, and their
# globals must not collide (keep them in an anonymous namespace).
#
# Every image and hosted program carries the build id (boot/build_id.py):
# a hash of the sources, which the frontend compares before a job.
set(FOX_BUILD_ID_CC ${CMAKE_BINARY_DIR}/fox_build_id.cc)
add_custom_target(fox_build_id ALL
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/build_id.py ${FOX_BUILD_ID_CC}
  BYPRODUCTS ${FOX_BUILD_ID_CC}
  COMMENT "Build id of the sources" VERBATIM)
add_library(fox_build_id_obj OBJECT ${FOX_BUILD_ID_CC})
add_dependencies(fox_build_id_obj fox_build_id)

if(FOX_NATIVE)
  find_program(FOX_LLD ld.lld REQUIRED)
  set(FOX_LINKER_SCRIPT ${CMAKE_SOURCE_DIR}/kernel/x86_64/linker.ld)
  set(FOX_RUNTIME_LIBS
    ${FOX_GCC_DIR}/libstdc++.a ${FOX_GCC_DIR}/libgcc_eh.a ${FOX_GCC_DIR}/libgcc.a ${FOX_MUSL_LIB})
  set(FOX_IMAGE_LIBS fox_kernel fox_lwip fox_net fox_ebb fox_apgas fox_build_id_obj)
endif()

# Links ${name}.elf from FOX_IMAGE_LIBS and the given object libraries.
function(fox_link_image name)
  set(out ${CMAKE_BINARY_DIR}/${name}.elf)
  set(pass1 ${CMAKE_BINARY_DIR}/${name}.pass1.elf)
  set(symtab ${CMAKE_BINARY_DIR}/${name}.symtab)
  set(objects)
  foreach(lib ${FOX_IMAGE_LIBS} ${ARGN})
    list(APPEND objects $<TARGET_OBJECTS:${lib}>)
  endforeach()
  set(flags -static -nostdlib --gc-sections --eh-frame-hdr -z max-page-size=4096
            -z noexecstack -T ${FOX_LINKER_SCRIPT}
            # libstdc++ (built for glibc) decides whether threads exist from the
            # weak symbol __pthread_key_create, and reaches sched_yield weakly:
            # without these, std::mutex would not lock across cores and
            # std::this_thread::yield would call address 0.
            -u __pthread_key_create -u sched_yield)
  set(libs --start-group ${FOX_RUNTIME_LIBS} --end-group)
  set(lto_steps)
  set(link_objects ${objects})
  if(FOX_LTO)
    # The C and C++ objects are LLVM bitcode: one link-time optimisation of
    # the whole image, with the whole link's symbol resolution, emitted as
    # assembly and assembled once; both links below then take that object
    # (the two links must lay the image out alike, gen_symtab.py --check).
    set(lto_s ${CMAKE_BINARY_DIR}/${name}.lto.s)
    set(lto_o ${CMAKE_BINARY_DIR}/${name}.lto.o)
    set(lto_steps
      COMMAND ${FOX_LLD} ${flags} ${objects} ${libs} --lto-emit-asm -o ${lto_s}
      # (--no-warn: the DWARF file table of the merged module has files with
      # and without MD5 sums, which the assembler warns about)
      COMMAND ${CMAKE_C_COMPILER} --target=x86_64-unknown-none-elf -Wa,--no-warn -c ${lto_s} -o ${lto_o})
    set(link_objects ${lto_o})
    foreach(lib ${FOX_IMAGE_LIBS} ${ARGN})
      list(APPEND link_objects $<FILTER:$<TARGET_OBJECTS:${lib}>,INCLUDE,\\.S\\.obj$>)  # not bitcode
    endforeach()
  endif()
  set(link ${FOX_LLD} ${flags} ${link_objects} ${libs})
  add_custom_command(
    OUTPUT ${out}
    ${lto_steps}
    COMMAND ${link} -o ${pass1}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py ${pass1} ${symtab}.bin ${symtab}.S
    COMMAND ${CMAKE_C_COMPILER} --target=x86_64-unknown-none-elf -c ${symtab}.S -o ${symtab}.o
    COMMAND ${link} ${symtab}.o -o ${out}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py --check ${pass1} ${out}
    DEPENDS ${FOX_IMAGE_LIBS} ${ARGN} ${objects} ${FOX_LINKER_SCRIPT} ${CMAKE_SOURCE_DIR}/boot/gen_symtab.py
    COMMAND_EXPAND_LISTS
    COMMENT "Linking fox image ${name}.elf")
  if(FOX_IMAGE_FOR_BENCH)  # (fox_add_app's BENCH) built by `ninja bench_images` (make bench), not by all
    add_custom_target(${name} DEPENDS ${out})
    if(NOT TARGET bench_images)
      add_custom_target(bench_images)
    endif()
    add_dependencies(bench_images ${name})
  else()
    add_custom_target(${name} ALL DEPENDS ${out})
  endif()
endfunction()

#
# An app's own sources are compiled as its users' experts compile such code
# (the MPI peers of tests/bench/apps.py alike): -O3, and for the hosted
# program the build machine's instruction set (FOX_HOSTED_APP_MARCH, default
# native: hosted programs run where they are built; set it to x86-64 for
# programs carried to other machines). Node images keep the x86-64 baseline
# (the nodes' CPUs are not known at build time). Never fused multiply-adds
# (-ffp-contract=off): an instruction set with FMA would otherwise change
# the apps' bits between Linux places and nodes, which must agree.
set(FOX_HOSTED_APP_MARCH native CACHE STRING "-march for the apps' hosted programs (native, x86-64, ...)")
set(FOX_APP_FLAGS -O3 -ffp-contract=off)
function(fox_add_app name)
  cmake_parse_arguments(A "NATIVE_ONLY;BENCH" "" "" ${ARGN})
  if(NOT FOX_NATIVE)
    if(NOT A_NATIVE_ONLY)
      add_executable(${name} ${A_UNPARSED_ARGUMENTS} ${FOX_BUILD_ID_CC})
      add_dependencies(${name} fox_build_id)
      target_link_libraries(${name} PRIVATE fox_hosted)
      target_compile_options(${name} PRIVATE ${FOX_APP_FLAGS} -march=${FOX_HOSTED_APP_MARCH})
    endif()
    return()
  endif()
  if(A_BENCH)
    add_library(${name}_objs OBJECT EXCLUDE_FROM_ALL ${A_UNPARSED_ARGUMENTS})
  else()
    add_library(${name}_objs OBJECT ${A_UNPARSED_ARGUMENTS})
  endif()
  target_link_libraries(${name}_objs PRIVATE ${FOX_IMAGE_LIBS})
  target_compile_options(${name}_objs PRIVATE ${FOX_APP_FLAGS})
  set(FOX_IMAGE_FOR_BENCH ${A_BENCH})
  fox_link_image(${name} ${name}_objs)
  if(NOT A_NATIVE_ONLY)
    add_library(${name}_pool OBJECT ${A_UNPARSED_ARGUMENTS})
    target_link_libraries(${name}_pool PRIVATE ${FOX_IMAGE_LIBS})
    target_compile_options(${name}_pool PRIVATE ${FOX_APP_FLAGS})
    target_compile_definitions(${name}_pool PRIVATE main=fox_app_main_${name})
    set_property(GLOBAL APPEND PROPERTY FOX_POOL_APPS ${name})
  endif()
endfunction()

# The pool image fox.elf (native build): every app added so far (but the
# NATIVE_ONLY ones), started by name from the boot argument fox.app=NAME.
# Its registry (fox_pool_apps.cc) is generated here; it also carries the
# marker "FOXAPPS:a,b,c;" the frontend reads to know the apps.
function(fox_add_pool_image)
  if(NOT FOX_NATIVE)
    return()
  endif()
  get_property(apps GLOBAL PROPERTY FOX_POOL_APPS)
  list(SORT apps)
  set(decls "")
  set(table "")
  set(libs "")
  foreach(app ${apps})
    string(APPEND decls "int fox_app_main_${app}(int, char**);\n")
    string(APPEND table "    {\"${app}\", fox_app_main_${app}},\n")
    list(APPEND libs ${app}_pool)
  endforeach()
  string(REPLACE ";" "," app_list "${apps}")
  set(registry ${CMAKE_BINARY_DIR}/fox_pool_apps.cc)
  file(WRITE ${registry}.new "// Generated by cmake/apps.cmake (fox_add_pool_image): the pool image's main.
#include <cstdio>
#include <cstring>

#include \"fox/boot_args.h\"

extern \"C\" const char fox_build_id[];
// The pool agent's (apps/agent): tells the frontend how a job it took ended.
extern \"C\" [[gnu::weak]] void fox_agent_job_ended(int status);
${decls}
namespace {
struct App {
  const char* name;
  int (*main)(int, char**);
};
constexpr App kApps[] = {
${table}};
[[gnu::used, gnu::retain]] const char kAppList[] = \"FOXAPPS:${app_list};\";
}  // namespace

// Runs the app fox.app names with the node's arguments; status 2 when it names none of them.
// An app that returns fox::kHandOver (the pool agent, given a job) has replaced the boot
// arguments (fox::ReplaceBootArgs): the app they name runs next, with their arguments; its
// status is told to the frontend by the agent before the node exits with it.
int main(int argc, char** argv) {
  for (bool handed = false;; handed = true) {
    const char* name = fox::BootArg(\"fox.app\");
    const App* found = nullptr;
    for (const App& app : kApps) {
      if (name != nullptr && std::strcmp(app.name, name) == 0) found = &app;
    }
    if (found == nullptr) {
      std::printf(\"fox: boot argument fox.app=%s names no app of this image (%s)\\n\", name ? name : \"(none)\", kAppList + 8);
      return 2;
    }
    std::printf(\"fox: pool image, app %s, build %s\\n\", name, fox_build_id + 11);
    std::fflush(stdout);
    int status = found->main(argc, argv);
    if (status != fox::kHandOver) {
      if (handed && fox_agent_job_ended != nullptr) fox_agent_job_ended(status);
      return status;
    }
    argc = fox::AppArgc();
    argv = fox::AppArgv();
  }
}
")
  configure_file(${registry}.new ${registry} COPYONLY)
  add_library(fox_pool_registry OBJECT ${registry})
  target_link_libraries(fox_pool_registry PRIVATE ${FOX_IMAGE_LIBS})
  fox_link_image(fox fox_pool_registry ${libs})
endfunction()
