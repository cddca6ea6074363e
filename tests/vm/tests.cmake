# The table of in-VM tests (STYLE.md §10). Each row boots a native image in
# QEMU and checks its exit status and console. Every row runs twice: under
# TCG (vm.NAME.tcg) and under KVM (vm.NAME.kvm, skipped where KVM cannot run
# fox guests; boot/qemu_run.py says why).
#
# fox_vm_test(NAME IMAGE image [NODES n] [SMP n] [MEM mib] [ARGS "boot args"]
#             EXIT status [EXPECT regex...] [REJECT regex...] [CDROM iso] [TIMEOUT s])
# In ARGS, @LATE_MS@ becomes the timer lateness a row may tolerate under
# that accelerator: 60 ms under TCG (4 emulated cores sharing 2 host cores
# with other tests), 10 ms under KVM.
function(fox_vm_test name)
  cmake_parse_arguments(T "NO_DEBUG_EXIT" "IMAGE;SMP;MEM;ARGS;EXIT;CDROM;TIMEOUT;NODES;NET" "EXPECT;REJECT" ${ARGN})
  if(NOT T_SMP)
    set(T_SMP 1)
  endif()
  if(NOT T_MEM)
    set(T_MEM 128)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(cmd ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/qemu_run.py --smp ${T_SMP} --mem ${T_MEM}
          --timeout ${T_TIMEOUT} --expect-exit ${T_EXIT})
  if(T_CDROM)
    list(APPEND cmd --cdrom ${T_CDROM})
  else()
    list(APPEND cmd --image ${FOX_NATIVE_DIR}/${T_IMAGE}.elf "--append=${T_ARGS}")
  endif()
  if(T_NO_DEBUG_EXIT)
    list(APPEND cmd --no-debug-exit)
  endif()
  if(T_NET)
    list(APPEND cmd --net ${T_NET})
  endif()
  foreach(re ${T_EXPECT})
    list(APPEND cmd --expect ${re})
  endforeach()
  foreach(re ${T_REJECT})
    list(APPEND cmd --reject ${re})
  endforeach()
  set(late_tcg 60)
  set(late_kvm 10)
  foreach(accel tcg kvm)
    set(acmd ${cmd})
    list(TRANSFORM acmd REPLACE "@LATE_MS@" "${late_${accel}}")
    add_test(NAME vm.${name}.${accel} COMMAND ${acmd} --accel ${accel})
    # CTest's timeout is later than qemu_run's, so that a node that hangs
    # is reported by qemu_run with its console rather than killed silently.
    math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
    set_tests_properties(vm.${name}.${accel} PROPERTIES LABELS vm SKIP_RETURN_CODE 77
                         TIMEOUT ${ctest_timeout} RESOURCE_LOCK qemu_${accel})
  endforeach()
endfunction()

set(PANIC 125)  # fox::kExitPanic
set(USAGE 2)    # fox::kExitUsage

fox_vm_test(banner IMAGE vmtest ARGS "fox.log=info -- banner" EXIT 0
  EXPECT "I fox 0\\.1\\.0-\\S+ x86_64 \\| [0-9]+ cores \\([0-9]+ online, [0-9]+ kernel\\) \\| [0-9]+ MiB \\| qemu \\| boot args: fox\\.log=info -- banner"
         "vmtest banner: PASS" "fox: exit status 0"
  REJECT "I tsc: " "I lapic: " "I smp: ")
# The clock's and the cores' details are at debug level (a real serial port
# takes 87 us a byte); the banner stays at info.
fox_vm_test(banner_debug IMAGE vmtest SMP 2 ARGS "fox.log=debug -- banner" EXIT 0
  EXPECT "D tsc: [0-9]+\\.[0-9]+ MHz from " "D smp: 2 cores online: 1 kernel, 1 application"
         "I fox 0\\.1\\.0-\\S+ x86_64 \\| 2 cores \\(2 online, 1 kernel\\)" "vmtest banner: PASS")
fox_vm_test(hello IMAGE hello ARGS "-- world" EXIT 0 EXPECT "Hello from fox on world!")
# A program that never starts the network never sets up its NIC (nor scans
# the PCI bus for one): the NICs start with the network (the nic_* and net_*
# tests below).
fox_vm_test(hello_nic_untouched IMAGE hello NET user ARGS "-- world" EXIT 0 EXPECT "Hello from fox on world!"
  REJECT "virtio-net:")
# No static constructor builds the standard streams before main (4 ms of the
# boot under TCG): cereal's <iostream> is kept out (fox/apgas/serialization.h),
# and with --gc-sections an image that never calls ios_base::Init lacks it.
set(images "${FOX_NATIVE_DIR}/hello.elf ${FOX_NATIVE_DIR}/fox.elf")
add_test(NAME image.no_stream_init COMMAND sh -c
         "nm ${images} > /dev/null && ! nm ${images} | grep -q _ZNSt8ios_base4InitC")
# The platform's dynamic initialisers in a native image: ebb's loop hooks and
# libstdc++'s emergency exception pool only (the platform's globals are
# constant-initialised and never destroyed: CMakeLists.txt). A global with a
# constructor or destructor in the platform adds code to every boot before
# main; this prints it.
add_test(NAME image.static_initializers COMMAND sh -c
         "nm ${FOX_NATIVE_DIR}/hello.elf > /dev/null && ! nm ${FOX_NATIVE_DIR}/hello.elf | grep _GLOBAL__sub_I_ | grep -v -e _GLOBAL__sub_I_loop_hooks.cc -e _GLOBAL__sub_I_eh_alloc.cc")
# The boot path's size as QEMU translates it (boot/footprint.py): under TCG the
# boot's time is mostly translating each block the first time it runs, so a
# boot path that grows shows here before the noisy timings (make bench B=boot)
# can show it. From entry to main with 4 cores and 1 GiB at the time of
# writing: 1120-1230 blocks, 900-945 of them the boot core's (1210-1280 in
# earlier sessions, 1488 in a native build configured with -DFOX_LTO=OFF);
# how the other cores' start-up interleaves moves the count from run to run,
# and the bound leaves room for that and for small changes, not for a new
# subsystem started before main.
set(NATIVE_FOX_LTO ON)
if(EXISTS ${FOX_NATIVE_DIR}/CMakeCache.txt)
  load_cache(${FOX_NATIVE_DIR} READ_WITH_PREFIX NATIVE_ FOX_LTO)
endif()
if(NATIVE_FOX_LTO)
  set(max_blocks 1420)
else()
  set(max_blocks 1650)
endif()
add_test(NAME image.boot_footprint COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/footprint.py
         ${FOX_NATIVE_DIR}/hello.elf --smp 4 --mem 1024 --max-blocks ${max_blocks} --top 15)
set_tests_properties(image.boot_footprint PROPERTIES LABELS vm TIMEOUT 150 RESOURCE_LOCK qemu_tcg)
# With one core the path is the same from run to run, and its instructions
# cost about as much to translate as its blocks (footprint.py): 851 blocks
# and 5020 instructions at the time of writing (5638 while the boot's page-
# table loops and ACPI checksum were unrolled and vectorised, 5140 while
# boot.S and paging::Init built the page tables).
if(NATIVE_FOX_LTO)
  add_test(NAME image.boot_footprint_1core COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/footprint.py
           ${FOX_NATIVE_DIR}/hello.elf --smp 1 --mem 1024 --max-blocks 960 --max-instructions 5450 --top 15)
  set_tests_properties(image.boot_footprint_1core PROPERTIES LABELS vm TIMEOUT 150 RESOURCE_LOCK qemu_tcg)
endif()
fox_vm_test(alloc_stress IMAGE vmtest ARGS "-- alloc_stress 2000000" MEM 256 EXIT 0 TIMEOUT 300
  EXPECT "alloc_stress: 2000000 operations \\([0-9]+ allocations\\), peak [0-9]+ live bytes, all contents verified")
fox_vm_test(alloc_oom IMAGE vmtest ARGS "-- alloc_oom" MEM 64 EXIT 0
  EXPECT "E heap: out of memory allocating 68719476736 bytes" "alloc_oom: [0-9]+ MiB allocated, freed, and allocated again")
fox_vm_test(exceptions IMAGE vmtest ARGS "-- exceptions" EXIT 0
  EXPECT "caught TestError 'depth 3' code 30" "vmtest exceptions: PASS")
fox_vm_test(rtti IMAGE vmtest ARGS "-- rtti" EXIT 0 EXPECT "vmtest rtti: PASS")
fox_vm_test(static_ctors IMAGE vmtest ARGS "-- static_ctors" EXIT 0
  EXPECT "vmtest static_ctors: PASS" "static destructor 7 ran")
fox_vm_test(thread_local IMAGE vmtest ARGS "-- thread_local" EXIT 0 EXPECT "vmtest thread_local: PASS")
fox_vm_test(stdlib IMAGE vmtest ARGS "-- stdlib" EXIT 0 EXPECT "iostream works: 12345" "vmtest stdlib: PASS")
# The sampling profiler (fox.profile, x86_64/profile.h): the clock test
# spins 20 ms on core 0 in fox::clock::NowNs's loop; the second kernel core
# is sampled through IPIs, the application cores not at all.
fox_vm_test(profile IMAGE vmtest SMP 4 ARGS "fox.kcores=2 fox.profile=4096 -- clock" EXIT 0
  EXPECT "I profile: sampling kernel cores 0-1 at 4096 Hz" "vmtest clock: PASS"
         "I profile: core 0: [0-9][0-9]+ samples at 4096 Hz" "I profile: +[0-9]+\\.[0-9]% +[0-9]+  (vmtest::Clock|fox::clock::NowNs)"
         "I profile: core 1: [0-9]+ samples at 4096 Hz" "fox: exit status 0"
  REJECT "profile: core 2")
fox_vm_test(profile_bad_rate IMAGE hello ARGS "fox.profile=1000" EXIT ${USAGE}
  EXPECT "bad boot argument 'fox.profile=1000': a power of two from 2 to 8192")
fox_vm_test(clock IMAGE vmtest SMP 4 ARGS "-- clock" EXIT 0
  EXPECT "system_clock on 4 cores at once: within [0-9]+ ms" "vmtest clock: PASS")
fox_vm_test(exit_code IMAGE vmtest ARGS "-- exit_code" EXIT 3
  EXPECT "static destructor 7 ran" "fox: exit status 3")
fox_vm_test(null_deref IMAGE vmtest ARGS "-- null_deref" EXIT ${PANIC}
  EXPECT "PANIC on core 0: page fault \\(vector 14, error 0\\) at 0x[0-9a-f]+ in vmtest::ReadThroughNull\\(int volatile\\*\\)"
         "read from address 0 .*null pointer dereference"
         "#1 +0x[0-9a-f]+ main\\+0x" "fox: exit status 125 \\(panic\\)")
fox_vm_test(stack_overflow IMAGE vmtest ARGS "-- stack_overflow" EXIT ${PANIC}
  EXPECT "PANIC on core 0: page fault .* in vmtest::Recurse\\(int\\)"
         "is the guard page below the main stack \\(stack overflow\\)")
fox_vm_test(terminate IMAGE vmtest ARGS "-- terminate" EXIT ${PANIC}
  EXPECT "terminate called after throwing an instance of 'std::runtime_error'"
         "PANIC on core 0: uncaught exception in std::terminate\\(\\)" "vmtest::ThrowUncaught\\(\\)")
# Whatever escapes main or an event is reported - type, what(), the
# backtrace of where it was thrown - and ends the node with status 125
# (kernel/common/terminate.h), never as a jump to address 0.
set(ESCAPE_REJECT "page fault" "abort\\(\\) called")
fox_vm_test(escape_main IMAGE vmtest ARGS "-- escape_main" EXIT ${PANIC}
  EXPECT "terminate called after throwing an instance of 'vmtest::EscapedFromMain'"
         "  what\\(\\):  nobody catches this in main"
         "PANIC on core 0: uncaught exception in std::terminate\\(\\)" "backtrace \\(where it was thrown\\):"
         "#0 +0x[0-9a-f]+ vmtest::ThrowFromMain\\(char const\\*\\)\\+0x" "#2 +0x[0-9a-f]+ main\\+0x"
         "fox: exit status 125 \\(panic\\)"
  REJECT ${ESCAPE_REJECT})
fox_vm_test(escape_main_plain IMAGE vmtest ARGS "-- escape_main plain" EXIT ${PANIC}
  EXPECT "terminate called after throwing an instance of 'vmtest::NotAnException'"
         "PANIC on core 0: uncaught exception in std::terminate\\(\\)" "#0 +0x[0-9a-f]+ vmtest::ThrowFromMain"
  REJECT ${ESCAPE_REJECT} "what\\(\\)")
# From an event on an application core (its thread's stack) and from one on
# core 0 (an event context's stack).
fox_vm_test(escape_event IMAGE vmtest SMP 2 ARGS "-- escape_event 1" EXIT ${PANIC}
  EXPECT "terminate called after throwing an instance of 'vmtest::EscapedFromEvent'"
         "  what\\(\\):  thrown by an event on core 1"
         "PANIC on core 1: uncaught exception in std::terminate\\(\\)" "backtrace \\(where it was thrown\\):"
         "#0 +0x[0-9a-f]+ vmtest::ThrowFromEvent\\(int\\)\\+0x" "fox::event::Loop::Loop_\\(\\)"
         "fox: exit status 125 \\(panic\\)"
  REJECT ${ESCAPE_REJECT})
fox_vm_test(escape_event_core0 IMAGE vmtest SMP 2 ARGS "-- escape_event 0" EXIT ${PANIC}
  EXPECT "  what\\(\\):  thrown by an event on core 0" "PANIC on core 0: uncaught exception in std::terminate\\(\\)"
         "#0 +0x[0-9a-f]+ vmtest::ThrowFromEvent\\(int\\)\\+0x"
  REJECT ${ESCAPE_REJECT})
fox_vm_test(bad_boot_arg IMAGE hello ARGS "fox.bogus=1" EXIT ${USAGE}
  EXPECT "E boot: unknown boot argument 'fox.bogus' \\(known: fox.aggregate, fox.amport, fox.app, fox.dht_cores, fox.finish, fox.gw, fox.idle, fox.ip, fox.job, fox.join_ms, fox.joining, fox.kcores, fox.key, fox.kill_at, fox.log, fox.node, fox.peers, fox.probe_ms, fox.profile, fox.smp_deaf, fox.spares, fox.stack, fox.suspect_ms\\)"
  REJECT "Hello from fox")
fox_vm_test(bad_boot_value IMAGE hello ARGS "fox.log=loud -- x" EXIT ${USAGE}
  EXPECT "bad boot argument 'fox.log=loud': expected one of debug\\|info\\|warn\\|error"
  REJECT "Hello from fox")
fox_vm_test(bad_boot_word IMAGE hello ARGS "console=ttyS0" EXIT ${USAGE}
  EXPECT "unexpected boot argument 'console=ttyS0'")
fox_vm_test(unknown_test IMAGE vmtest ARGS "-- no_such_test" EXIT ${USAGE} EXPECT "usage: -- TEST")
fox_vm_test(grub_iso CDROM ${CMAKE_SOURCE_DIR}/build/fox.iso EXIT 0 TIMEOUT 180
  EXPECT "\\| GRUB [0-9.]+" "Hello from fox on a compute node!")
fox_vm_test(small_memory IMAGE hello MEM 32 EXIT 0 EXPECT "Hello from fox")
# Without QEMU's debug-exit device the node powers off through ACPI (S5),
# as on real hardware; the status is then only on the console.
fox_vm_test(acpi_poweroff IMAGE hello ARGS "-- acpi" EXIT 0 NO_DEBUG_EXIT
  EXPECT "Hello from fox on acpi!" "fox: exit status 0")
# So does a node whose boot arguments are rejected (before, it halted for ever:
# the command line was checked before ACPI was read). QEMU must exit by itself.
fox_vm_test(acpi_poweroff_bad_boot_arg IMAGE hello ARGS "fox.log=loud -- x" EXIT ${USAGE} NO_DEBUG_EXIT TIMEOUT 60
  EXPECT "bad boot argument 'fox.log=loud'" "fox: exit status 2 \\(bad boot arguments\\)" REJECT "Hello from fox")
# The same for a rejection after ACPI and SMP start (fox.kcores).
fox_vm_test(acpi_poweroff_bad_kcores IMAGE hello SMP 2 ARGS "fox.kcores=3" EXIT ${USAGE} NO_DEBUG_EXIT TIMEOUT 60
  EXPECT "fox.kcores=3 but this node has 2 cores" "fox: exit status 2 \\(bad boot arguments\\)" REJECT "Hello from fox")

# Cores, roles, events (issue: native foundation II). Four cores.
fox_vm_test(cores IMAGE vmtest SMP 4 ARGS "-- cores 4 1" EXIT 0
  EXPECT "4 cores \\(4 online, 1 kernel\\)" "core 3 here \\(application, APIC id 3\\)" "vmtest cores: PASS")
fox_vm_test(cores_kcores2 IMAGE vmtest SMP 4 ARGS "fox.kcores=2 -- cores 4 2" EXIT 0
  EXPECT "4 cores \\(4 online, 2 kernel\\)" "core 1 here \\(kernel, APIC id 1\\)" "vmtest cores: PASS")
# A processor that does not answer (fox.smp_deaf=2: the second after the
# boot one is not sent its SIPI): after the 1 s wait the cores are numbered
# densely, the one after the gap moved down into it (core 2 is APIC id 3).
fox_vm_test(cores_deaf_processor IMAGE vmtest SMP 4 ARGS "fox.kcores=2 fox.smp_deaf=2 -- cores 3 2" EXIT 0
  EXPECT "smp: processor with APIC id 2 did not answer INIT-SIPI-SIPI within 1000 ms; continuing without it"
         "4 cores \\(3 online, 2 kernel\\)" "core 1 here \\(kernel, APIC id 1\\)"
         "core 2 here \\(application, APIC id 3\\)" "vmtest cores: PASS")
# The first processor, which starts the others once it is set up, deaf: the
# boot core sends the others their SIPI 1 ms after the first one's.
fox_vm_test(cores_deaf_first IMAGE vmtest SMP 4 ARGS "fox.smp_deaf=1 -- cores 3 1" EXIT 0
  EXPECT "smp: processor with APIC id 1 did not answer" "4 cores \\(3 online, 1 kernel\\)"
         "core 1 here \\(application, APIC id 2\\)" "core 2 here \\(application, APIC id 3\\)" "vmtest cores: PASS")
fox_vm_test(cores_deaf_last IMAGE vmtest SMP 4 ARGS "fox.smp_deaf=3 -- cores 3 1" EXIT 0
  EXPECT "smp: processor with APIC id 3 did not answer" "4 cores \\(3 online, 1 kernel\\)"
         "core 2 here \\(application, APIC id 2\\)" "vmtest cores: PASS")
fox_vm_test(spawn_storm IMAGE vmtest SMP 4 MEM 1024 ARGS "-- spawn_storm 250000" EXIT 0 TIMEOUT 300
  EXPECT "spawn_storm: 4000000 cross-core events in [0-9]+ ms, counts exact")
# A pool node's agent takes a job without a reboot (fox::ReplaceBootArgs).
fox_vm_test(replace_boot_args IMAGE vmtest ARGS "fox.job=3 fox.kcores=1 -- replace_boot_args" EXIT 0
  EXPECT "replace: refused: fox.kcores=2: the node booted with 1" "replace: refused: fox.node=5: the node booted with no fox.node"
         "replace: refused: .*fox.bogus" "replace: fox.job=7 fox.app=ring, main gets 3 arguments: a bb"
         "vmtest replace_boot_args: PASS")
# Work stealing (event::SpawnShared): the three application cores share
# work queued at one of them; core 0 is outside the group.
fox_vm_test(steal IMAGE vmtest SMP 4 MEM 1024 ARGS "-- steal 24 5 20000" EXIT 0 TIMEOUT 300
  EXPECT "steal: 24 tasks of 5 ms queued at core 1 ran on [23] of 3 cores" "ran exactly once each"
         "steal: 12 blocking tasks ran on [23] cores, 0 resumed elsewhere" "vmtest steal: PASS")
# Tolerance: a timer fires no earlier than asked and at most @LATE_MS@ late
# (a CI run once saw 30 ms under TCG with the host busy).
fox_vm_test(timers IMAGE vmtest SMP 4 ARGS "-- timers @LATE_MS@" EXIT 0
  EXPECT "timers on core 0 \\(kernel\\)" "timers on core 1 \\(application\\)" "vmtest timers: PASS")
# The banner, printed by core 1 while main starts, comes before main's output,
# the entry-to-main line right after it, and a program that ends first loses
# nothing; then the console's hold (serial::HoldFor) that keeps that order,
# on its own.
fox_vm_test(banner_before_main_output IMAGE hello SMP 4 ARGS "-- world" EXIT 0
  EXPECT "I fox 0\\.1\\.0-\\S+ x86_64 \\| 4 cores [^\\n]*\\n[^\\n]*I boot: entry to main took [0-9]+ us\\r?\\n[\\s\\S]*Hello from fox on world![\\s\\S]*fox: exit status 0")
fox_vm_test(console_hold IMAGE vmtest SMP 2 ARGS "-- console_hold" EXIT 0
  EXPECT "console_hold: the holder's line\\r?\\nconsole_hold: core 0, held back\\r?\\nconsole_hold: core 0, x{5000}"
         "vmtest console_hold: PASS")
fox_vm_test(console_hold_exit IMAGE vmtest SMP 2 ARGS "-- console_hold_exit" EXIT 0
  EXPECT "console_hold_exit: the holder's line\\r?\\nconsole_hold_exit: core 0's last line\\r?\\n[\\s\\S]*fox: exit status 0")
fox_vm_test(app_cores_quiet IMAGE vmtest SMP 4 ARGS "-- app_quiet 300" EXIT 0
  EXPECT "core 1 \\(application\\): 0 interrupts" "core 3 \\(application\\): 0 interrupts" "vmtest app_quiet: PASS")
# EventMutex: waiters spin, then block their event; exact under contention.
fox_vm_test(event_mutex IMAGE vmtest SMP 4 ARGS "-- event_mutex 4 400" EXIT 0 TIMEOUT 120
  EXPECT "event_mutex: 4 events on each of 4 cores, 6400 sections of 6400 counted, 0 overlaps, [1-9][0-9]* waits blocked"
         "vmtest event_mutex: PASS")
fox_vm_test(futures IMAGE vmtest SMP 4 ARGS "-- futures" EXIT 0
  EXPECT "futures: 2000 delegates from each of 4 cores to the next, counts exact" "vmtest futures: PASS")
fox_vm_test(ebb IMAGE vmtest SMP 4 ARGS "-- ebb" EXIT 0
  EXPECT "ebb: 4 reps from 1 root on 4 cores" "destroyed Ebb refused on every core" "vmtest ebb: PASS")
fox_vm_test(sleep IMAGE vmtest SMP 2 ARGS "-- sleep" EXIT 0 EXPECT "other events ran meanwhile: 1" "vmtest sleep: PASS")
fox_vm_test(event_stack_overflow IMAGE vmtest SMP 2 ARGS "-- event_stack_overflow" EXIT ${PANIC}
  EXPECT "PANIC on core 0: page fault .* in vmtest::\\(anonymous namespace\\)::DeepEvent\\(int\\)"
         "is the guard page below an event stack \\(stack overflow\\)" "the frame above repeats [0-9]+ more times")
# Idle (fox.idle): HLT woken by an IPI, or MWAIT on a doorbell line woken by
# a plain write. QEMU's TCG offers MONITOR/MWAIT but runs MWAIT as a pause
# on several CPUs (and faults on its interrupt-break extension): there an
# idle core polls its doorbell for 1 ms, then halts and needs the IPI. KVM
# usually hides MONITOR/MWAIT, and the mwait rows then check the fallback.
set(IDLE_MWAIT_LOG "I idle: MWAIT on a per-core doorbell line|W idle: fox.idle=mwait, but this CPU has no MONITOR/MWAIT: falling back to HLT")
fox_vm_test(idle_wake_hlt IMAGE vmtest SMP 4 ARGS "fox.idle=hlt -- idle_wake hlt 50" EXIT 0
  EXPECT "I idle: HLT, woken by IPI \\(fox.idle=hlt\\)"
         "idle_wake: HLT, 50 spawns to sleeping core 1: 50 wake-ups, 0 by doorbell alone, 50 by IPI, 50 interrupts taken \\(50 on the wake-up vector\\)"
         "vmtest idle_wake: PASS")
fox_vm_test(idle_wake_mwait IMAGE vmtest SMP 4 ARGS "fox.idle=mwait -- idle_wake mwait 200" EXIT 0
  EXPECT "${IDLE_MWAIT_LOG}"
         "idle_wake: MWAIT, 200 spawns to sleeping core 1: 200 wake-ups, [1-9][0-9]* by doorbell alone, ([0-9]+) by IPI, \\1 interrupts taken|idle_wake: this CPU has no MONITOR/MWAIT, fox.idle=mwait fell back to HLT"
         "vmtest idle_wake: PASS")
# The default: MWAIT where it exists (under TCG: an adaptive poll, then HLT;
# spawns right after the core went to sleep end its poll), else HLT.
fox_vm_test(idle_wake_auto IMAGE vmtest SMP 4 ARGS "-- idle_wake auto 200" EXIT 0
  EXPECT "I idle: MWAIT on a per-core doorbell line|I idle: HLT, woken by IPI \\(fox.idle=auto: no MONITOR/MWAIT\\)"
         "idle_wake: MWAIT, 200 spawns to sleeping core 1: 200 wake-ups, [1-9][0-9]* by doorbell alone, ([0-9]+) by IPI, \\1 interrupts taken|idle_wake: HLT, 200 spawns to sleeping core 1: 200 wake-ups, 0 by doorbell alone"
         "vmtest idle_wake: PASS")
foreach(idle hlt mwait)
  fox_vm_test(spawn_storm_idle_${idle} IMAGE vmtest SMP 4 MEM 1024 ARGS "fox.idle=${idle} -- spawn_storm 250000" EXIT 0 TIMEOUT 300
    EXPECT "spawn_storm: 4000000 cross-core events in [0-9]+ ms, counts exact")
  fox_vm_test(timers_idle_${idle} IMAGE vmtest SMP 4 ARGS "fox.idle=${idle} -- timers @LATE_MS@" EXIT 0
    EXPECT "timers on core 0 \\(kernel\\)" "timers on core 1 \\(application\\)" "vmtest timers: PASS")
  fox_vm_test(app_cores_quiet_idle_${idle} IMAGE vmtest SMP 4 ARGS "fox.idle=${idle} -- app_quiet 300" EXIT 0
    EXPECT "core 1 \\(application\\): 0 interrupts" "core 3 \\(application\\): 0 interrupts" "vmtest app_quiet: PASS")
endforeach()
fox_vm_test(bad_idle_value IMAGE hello ARGS "fox.idle=poll" EXIT ${USAGE}
  EXPECT "bad boot argument 'fox.idle=poll': expected one of mwait\\|hlt\\|auto" REJECT "Hello from fox")
fox_vm_test(bad_kcores_zero IMAGE hello SMP 2 ARGS "fox.kcores=0" EXIT ${USAGE}
  EXPECT "bad boot argument 'fox.kcores=0': expected an integer from 1 to 256")
fox_vm_test(bad_kcores_word IMAGE hello SMP 2 ARGS "fox.kcores=two" EXIT ${USAGE}
  EXPECT "bad boot argument 'fox.kcores=two'")
fox_vm_test(bad_kcores_too_many IMAGE hello SMP 2 ARGS "fox.kcores=3" EXIT ${USAGE}
  EXPECT "fox.kcores=3 but this node has 2 cores" REJECT "Hello from fox")
fox_vm_test(ebb_table IMAGE vmtest SMP 4 ARGS "-- ebb_table" EXIT 0
  EXPECT "ebb_table: table at 0xffffffff80000000 on 4 cores, 4 distinct pages" "vmtest ebb_table: PASS")
fox_vm_test(sas IMAGE vmtest SMP 4 MEM 2048 ARGS "-- sas" EXIT 0
  EXPECT "sas: segment at 0x[0-9a-f]+, collision with 'collide-[0-9]+' refused" "vmtest sas: PASS")
fox_vm_test(sas_readonly_write IMAGE vmtest SMP 4 ARGS "-- sas_readonly_write" EXIT ${PANIC}
  EXPECT "PANIC on core 3: page fault" "write to address 0x[0-9a-f]+ \\(protection violation"
         "is SAS segment 'fox.test.frozen' \\(read-only\\)")

# The same neutral tests in the hosted build (kernel/linux): FOX_CORES
# threads as cores. Label `hosted`. PROGRAM: another hosted program than
# hosted_vmtest.
function(fox_hosted_test name)
  cmake_parse_arguments(T "" "CORES;EXIT;TIMEOUT;PROGRAM" "ARGS;EXPECT" ${ARGN})
  if(NOT T_PROGRAM)
    set(T_PROGRAM hosted_vmtest)
  endif()
  set(cmd ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/boot/host_run.py --cores ${T_CORES}
          --expect-exit ${T_EXIT} --timeout 120)
  foreach(re ${T_EXPECT})
    list(APPEND cmd --expect ${re})
  endforeach()
  add_test(NAME hosted.${name} COMMAND ${cmd} -- $<TARGET_FILE:${T_PROGRAM}> ${T_ARGS})
  set_tests_properties(hosted.${name} PROPERTIES LABELS hosted TIMEOUT 180)
endfunction()

# Uncaught exceptions (tests/vm/escape_tests.cc) are neutral tests too.
target_sources(hosted_vmtest PRIVATE ${CMAKE_CURRENT_LIST_DIR}/escape_tests.cc)

fox_hosted_test(cores CORES 4 ARGS cores 4 4 EXIT 0 EXPECT "core 3 here" "vmtest cores: PASS")
fox_hosted_test(spawn_storm CORES 4 ARGS spawn_storm 250000 EXIT 0
  EXPECT "spawn_storm: 4000000 cross-core events in [0-9]+ ms, counts exact")
fox_hosted_test(steal CORES 4 ARGS steal 24 5 20000 EXIT 0
  EXPECT "steal: 24 tasks of 5 ms queued at core 1 ran on [23] of 3 cores" "ran exactly once each"
         "steal: 12 blocking tasks ran on [23] cores, 0 resumed elsewhere" "vmtest steal: PASS")
fox_hosted_test(timers CORES 2 ARGS timers 20 EXIT 0 EXPECT "vmtest timers: PASS")
# FOX_PARENT_PID (fox run's places, kernel/linux/start.cc): malformed, or naming a process that
# is not the parent (2, the kernel's kthreadd): refused with status 2 and why, before main.
foreach(case "1x|bad FOX_PARENT_PID='1x': expected a process id" "2|the command that started this place (pid 2) is gone")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 value)
  list(GET parts 1 message)
  add_test(NAME hosted.parent_pid_${value}
    COMMAND sh -c "out=$(FOX_PARENT_PID=${value} \"$0\" cores 1 1 2>&1); s=$?; echo \"$out\"; echo \"status $s\"; [ $s = 2 ] && printf '%s' \"$out\" | grep -qF \"$1\"" $<TARGET_FILE:hosted_vmtest> "${message}")
  set_tests_properties(hosted.parent_pid_${value} PROPERTIES LABELS hosted TIMEOUT 60)
endforeach()
fox_hosted_test(event_mutex CORES 4 ARGS event_mutex 4 400 EXIT 0
  EXPECT "event_mutex: 4 events on each of 4 cores, 6400 sections of 6400 counted, 0 overlaps, [1-9][0-9]* waits blocked"
         "vmtest event_mutex: PASS")
fox_hosted_test(futures CORES 4 ARGS futures EXIT 0
  EXPECT "futures: 2000 delegates from each of 4 cores to the next, counts exact" "vmtest futures: PASS")
# SAS segments in a Linux program: the same name gives the same address as on
# the nodes (mmap at that address), shared by every core.
fox_hosted_test(sas CORES 2 ARGS sas EXIT 0
  EXPECT "sas: segment at 0x[0-9a-f]+, collision with 'collide-[0-9]+' refused" "vmtest sas: PASS")
fox_hosted_test(ebb CORES 4 ARGS ebb EXIT 0 EXPECT "ebb: 4 reps from 1 root on 4 cores" "vmtest ebb: PASS")
fox_hosted_test(exceptions CORES 1 ARGS exceptions EXIT 0 EXPECT "vmtest exceptions: PASS")
fox_hosted_test(exit_code CORES 2 ARGS exit_code EXIT 3 EXPECT "static destructor 7 ran")
fox_hosted_test(thread_local CORES 1 ARGS thread_local EXIT 0 EXPECT "vmtest thread_local: PASS")
# Uncaught exceptions: the same report as on a node and status 125, not
# libstdc++'s abort (134).
fox_hosted_test(escape_main CORES 1 ARGS escape_main EXIT 125
  EXPECT "terminate called after throwing an instance of 'vmtest::EscapedFromMain'"
         "  what\\(\\):  nobody catches this in main"
         "PANIC on core 0: uncaught exception in std::terminate\\(\\)" "backtrace \\(where it was thrown\\):"
         "#0 +0x[0-9a-f]+ vmtest::ThrowFromMain\\(char const\\*\\)\\+0x")
fox_hosted_test(escape_main_plain CORES 1 ARGS escape_main plain EXIT 125
  EXPECT "terminate called after throwing an instance of 'vmtest::NotAnException'"
         "PANIC on core 0: uncaught exception in std::terminate\\(\\)")
fox_hosted_test(escape_event CORES 2 ARGS escape_event 1 EXIT 125
  EXPECT "terminate called after throwing an instance of 'vmtest::EscapedFromEvent'"
         "  what\\(\\):  thrown by an event on core 1"
         "PANIC on core 1: uncaught exception in std::terminate\\(\\)"
         "#0 +0x[0-9a-f]+ vmtest::ThrowFromEvent\\(int\\)\\+0x")

# The ebb/ GoogleTest suite, case for case as unit.ebb.* runs it on host
# threads, on the fox runtime with four real cores (tests/ebb_suite): in a
# native node and hosted. The count pins the number of cases.
fox_vm_test(ebb_suite IMAGE ebb_suite SMP 4 MEM 256 EXIT 0 TIMEOUT 180
  EXPECT "ebb_suite: core 0 runs the tests, cores 1\\.\\.3 race in them" "\\[  PASSED  \\] 41 tests\\."
  REJECT "\\[  FAILED  \\]")
fox_hosted_test(ebb_suite PROGRAM hosted_ebb_suite CORES 4 EXIT 0
  EXPECT "ebb_suite: core 0 runs the tests, cores 1\\.\\.3 race in them" "\\[  PASSED  \\] 41 tests\\.")

# Networking: the virtio-net driver against QEMU's restricted user network.
fox_vm_test(nic_arp IMAGE vmtest SMP 4 NET user ARGS "-- nic_arp" EXIT 0
  EXPECT "virtio-net: nic0 at 00:0[0-9a-f]\\.0, MAC 52:54:00:12:34:56, modern interface" "nic: gateway 10.0.2.2 is at 52:55:0a:00:02:02"
         "vmtest nic_arp: PASS")
# The same through the legacy (virtio 0.9.5, I/O port) interface.
fox_vm_test(nic_arp_legacy IMAGE vmtest SMP 2 NET user-legacy ARGS "-- nic_arp" EXIT 0
  EXPECT "virtio-net: nic0 at 00:0[0-9a-f]\\.0, MAC 52:54:00:12:34:56, legacy interface"
         "nic: gateway 10.0.2.2 is at 52:55:0a:00:02:02" "vmtest nic_arp: PASS")

# lwIP (net/lwip) against QEMU's restricted user network: DHCP, ICMP, and
# TCP/UDP through lwIP's loopback (the network reaches nothing beyond its
# gateway). Each runs well under 10 s under TCG.
fox_vm_test(net_dhcp IMAGE vmtest SMP 2 NET user ARGS "-- net_dhcp" EXIT 0 TIMEOUT 60
  EXPECT "I net: DHCP lease 10\\.0\\.2\\.15/255\\.255\\.255\\.0 from 10\\.0\\.2\\.2, gateway 10\\.0\\.2\\.2"
         "dhcp: a second Start: the same interface; with a static address: refused" "dhcp: idle second on core 0: [0-9]+ interrupts" "vmtest net_dhcp: PASS")
fox_vm_test(net_ping IMAGE vmtest SMP 2 NET user ARGS "-- net_ping" EXIT 0 TIMEOUT 60
  EXPECT "ping 10\\.0\\.2\\.2 \\(gateway\\): ok" "ping 10\\.0\\.2\\.15 \\(this node, answered by lwIP\\): ok"
         "ping 10\\.0\\.2\\.99 \\(nobody\\): timed out" "vmtest net_ping: PASS")
fox_vm_test(net_ping_legacy IMAGE vmtest SMP 2 NET user-legacy ARGS "-- net_ping" EXIT 0 TIMEOUT 60
  EXPECT "virtio-net: nic0 at 00:0[0-9a-f]\\.0, MAC 52:54:00:12:34:56, legacy interface"
         "ping 10\\.0\\.2\\.2 \\(gateway\\): ok" "ping 10\\.0\\.2\\.15 \\(this node, answered by lwIP\\): ok"
         "ping 10\\.0\\.2\\.99 \\(nobody\\): timed out" "vmtest net_ping: PASS")
# Devices without MSI-X interrupt through their INTx pin (IOAPIC, level
# triggered): modern and legacy interfaces.
fox_vm_test(net_ping_intx IMAGE vmtest SMP 2 NET user-intx ARGS "-- net_ping" EXIT 0 TIMEOUT 60
  EXPECT "virtio-net: device at 00:0[0-9a-f]\\.0 has no MSI-X: INTxA on IRQ 1?[0-9], level triggered"
         "virtio-net: nic0 at 00:0[0-9a-f]\\.0, MAC 52:54:00:12:34:56, modern interface"
         "ping 10\\.0\\.2\\.2 \\(gateway\\): ok" "ping 10\\.0\\.2\\.15 \\(this node, answered by lwIP\\): ok"
         "ping 10\\.0\\.2\\.99 \\(nobody\\): timed out" "vmtest net_ping: PASS")
fox_vm_test(net_ping_legacy_intx IMAGE vmtest SMP 2 NET user-legacy-intx ARGS "-- net_ping" EXIT 0 TIMEOUT 60
  EXPECT "virtio-net: device at 00:0[0-9a-f]\\.0 has no MSI-X: INTxA on IRQ 1?[0-9], level triggered"
         "virtio-net: nic0 at 00:0[0-9a-f]\\.0, MAC 52:54:00:12:34:56, legacy interface"
         "ping 10\\.0\\.2\\.2 \\(gateway\\): ok" "ping 10\\.0\\.2\\.15 \\(this node, answered by lwIP\\): ok"
         "ping 10\\.0\\.2\\.99 \\(nobody\\): timed out" "vmtest net_ping: PASS")
fox_vm_test(net_static IMAGE vmtest SMP 2 NET user ARGS "-- net_static 10.0.2.20/24 10.0.2.2" EXIT 0 TIMEOUT 60
  EXPECT "I net: static address 10\\.0\\.2\\.20/255\\.255\\.255\\.0 gateway 10\\.0\\.2\\.2"
         "ping 10\\.0\\.2\\.2 \\(gateway\\): ok" "vmtest net_static: PASS")
fox_vm_test(net_static_boot_args IMAGE vmtest SMP 2 NET user ARGS "fox.ip=10.0.2.21/24 fox.gw=10.0.2.2 -- net_static"
  EXIT 0 TIMEOUT 60
  EXPECT "I net: static address 10\\.0\\.2\\.21/255\\.255\\.255\\.0 gateway 10\\.0\\.2\\.2" "vmtest net_static: PASS")
fox_vm_test(bad_ip_boot_arg IMAGE hello ARGS "fox.ip=10.0.2.15" EXIT ${USAGE}
  EXPECT "bad boot argument 'fox.ip=10\\.0\\.2\\.15': expected an IPv4 address and prefix length, A\\.B\\.C\\.D/NN"
  REJECT "Hello from fox")
fox_vm_test(net_tcp_loopback IMAGE vmtest SMP 2 NET user ARGS "-- net_tcp_loopback 1048576" EXIT 0 TIMEOUT 60
  EXPECT "tcp: connected 10\\.0\\.2\\.15:[0-9]+ -> 10\\.0\\.2\\.15:7 on core 1: ok"
         "tcp: 1048576 bytes echoed through lwIP loopback in [0-9]+ ms .*: verified"
         "tcp: server accepted 1, echoed 1048576 bytes, end: closed by peer" "tcp: connect to port 9: reset by peer"
         "vmtest net_tcp_loopback: PASS")
fox_vm_test(net_tcp_homes IMAGE vmtest SMP 2 NET user ARGS "-- net_tcp_homes" EXIT 0 TIMEOUT 60
  EXPECT "tcp: listener with home 2: invalid argument" "tcp: connection 3 answered 'core0:hello 3!'"
         "tcp: accepted on core 0: 2, on core 1: 2; handlers off their home: 0" "vmtest net_tcp_homes: PASS")
fox_vm_test(net_tcp_backpressure IMAGE vmtest SMP 2 NET user ARGS "-- net_tcp_backpressure" EXIT 0 TIMEOUT 60
  EXPECT "tcp: reader caught up: 524288 bytes verified" "vmtest net_tcp_backpressure: PASS")
fox_vm_test(net_udp_loopback IMAGE vmtest SMP 2 NET user ARGS "-- net_udp_loopback 500" EXIT 0 TIMEOUT 60
  EXPECT "udp: 500 of 500 datagrams echoed through lwIP loopback and verified" "vmtest net_udp_loopback: PASS")

# The default job's program (apps/ring) refuses bad arguments with status 2
# before touching the network.
fox_vm_test(ring_bad_argument IMAGE ring ARGS "fox.peers=0@10.0.2.15 -- laps=abc" EXIT 2
  EXPECT "ring: bad argument 'laps=abc' \\(expected laps=1\\.\\.1000000, ids=1\\.\\.65536, join=1\\.\\.3600 or pings=0\\.\\.1000000\\)")
# A short or non-hexadecimal key is a usage error, never a crash (issue 10).
fox_vm_test(ring_short_key IMAGE ring ARGS "fox.key=zz fox.peers=0@10.0.2.15 -- laps=3" EXIT 2
  EXPECT "am: bad boot argument 'fox.key': expected 32 hexadecimal digits" REJECT "PANIC")
fox_vm_test(ring_bad_key IMAGE ring ARGS "fox.key=0011 fox.peers=0@10.0.2.15 -- laps=3" EXIT 2
  EXPECT "am: bad boot argument 'fox.key': expected 32 hexadecimal digits" REJECT "PANIC")
fox_vm_test(ring_without_peers IMAGE ring ARGS "-- laps=3" EXIT 2
  EXPECT "ring: no fox.peers: the job needs the list of its nodes")
# Alone (one node, QEMU's user network): joins itself and is done.
fox_vm_test(ring_alone IMAGE ring NET user ARGS "fox.peers=0@10.0.2.15 -- laps=3" EXIT 0 TIMEOUT 60
  EXPECT "ring: 1 nodes joined, with disjoint job-wide Ebb id ranges")

# Hosted nodes talking to each other over 127.0.0.1 (no root, no QEMU):
# three Linux processes of am_node; node 0 streams to node 1, echoes with
# node 2 and puts into both nodes' SAS segments (by address), all through
# the Messenger.
add_test(NAME hosted.am_nodes COMMAND ${FOX_HOSTED_NODES}
  --nodes 3 --timeout 120
  --expect "0:am: stream to node 1: 20000 of 20000 messages delivered in order, 0 errors"
  --expect "0:am: 200 echoes from node 2, 0 bad"
  --expect "0:am: 500 puts of 1400 bytes into node 2's SAS segment at 0x[0-9a-f]+: 0 bad bytes"
  --expect "0:am: 300 puts of 1000 bytes into node 1's SAS segment at 0x[0-9a-f]+: 0 bad bytes"
  --expect "1:am: stream from node 0: 20000 messages in order, 0 errors"
  --expect "0:am: 10 large messages of 300000 bytes to node 2: 10 received whole, 0 bad"
  --expect "0:am: large messages: 11 sent \\([1-9] direct\\), 0 received \\(0 direct\\), 0 dropped, 0 probes refused"
  --expect "2:am: large messages: 0 sent \\(0 direct\\), 11 received \\([1-9] direct\\), 0 dropped"
  --expect "0:am: 2000 local messages, the first handler blocked: others ran meanwhile: yes, 0 not run exactly once"
  --expect "1:am: 2000 local messages, the first handler blocked: others ran meanwhile: yes, 0 not run exactly once"
  --expect "0:am: 20 messages to each of 500 Ebbs on node 1: 500 Ebbs complete, 0 errors"
  --expect "2:am: 20 messages to each of 500 Ebbs on node 1: 500 Ebbs complete, 0 errors"
  --expect "1:am: 20 messages to each of 500 Ebbs on node 0: 500 Ebbs complete, 0 errors"
  --expect "0:am: rpc to node 2 left unanswered: timed out after [0-9]+ ms"
  $<TARGET_FILE:am_node_hosted> 0:rpc_timeout,2 0:blockers,2000 1:blockers,2000 0:stream,1,20000 0:echo,2,200,1000 0:put,2,500,1400
  0:put,1,300,1000 0:large,2,10,300000 0:many,1,500,20 2:many,1,500,20 1:many,0,500,20 0:quit,1,2)
set_tests_properties(hosted.am_nodes PROPERTIES LABELS hosted TIMEOUT 180)
# Large messages to a place that does not read its peers' memory
# (fox.direct=off): the sender's probe is refused and every message goes
# as fragments, whole and in order (the other hosted tests read directly).
add_test(NAME hosted.am_large_fragments COMMAND ${FOX_HOSTED_NODES}
  --nodes 2 --timeout 60 --node-args "1:fox.direct=off"
  --expect "0:am: 5 large messages of 300000 bytes to node 1: 5 received whole, 0 bad"
  --expect "0:am: large messages: 6 sent \\(0 direct\\), 0 received \\(0 direct\\), 0 dropped, 1 probes refused"
  --expect "1:am: large messages: 0 sent \\(0 direct\\), 6 received \\(0 direct\\), 0 dropped"
  $<TARGET_FILE:am_node_hosted> 0:large,1,5,300000 0:quit,1)
set_tests_properties(hosted.am_large_fragments PROPERTIES LABELS hosted TIMEOUT 90)
# A node started with another job key: each side drops the other's frames
# and says why, naming the sender (rate-limited), instead of failing silently.
add_test(NAME hosted.am_wrong_key COMMAND ${FOX_HOSTED_NODES}
  --nodes 2 --timeout 60 --node-args "1:fox.key=00112233445566778899aabbccddeeff"
  --expect "0:W am: dropping frames from 127\\.0\\.0\\.1:[0-9]+: MAC check failed: is fox.key the same on every node of the job\\?"
  --expect "1:W am: dropping frames from 127\\.0\\.0\\.1:[0-9]+: MAC check failed"
  $<TARGET_FILE:am_node_hosted> 0:sleep,1500 0:quit,1 1:sleep,1500 1:quit,0)
set_tests_properties(hosted.am_wrong_key PROPERTIES LABELS hosted TIMEOUT 90)
# A short key on Linux: the same clear message and status 2 as on a node,
# not an uncaught std::out_of_range (issue 10).
add_test(NAME hosted.am_short_key COMMAND sh -c
  "out=$(FOX_ARGS='fox.key=0011' \"$0\" 0:quit,0 2>&1); s=$?; echo \"$out\"; [ $s -eq 2 ] && echo \"$out\" | grep -q \"bad boot argument 'fox.key': expected 32 hexadecimal digits\""
  $<TARGET_FILE:am_node_hosted>)
set_tests_properties(hosted.am_short_key PROPERTIES LABELS hosted TIMEOUT 30)
