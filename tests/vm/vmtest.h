// The in-VM test image: `-- NAME` picks one test; each test prints what it
// checked and returns an exit status (0 = pass). tests/vm/tests.cmake is the
// table of runs (boot arguments, expected status and console lines).
#pragma once

#include <cstdio>
#include <cstdlib>

// Fails the test with a message naming the check.
#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::printf("CHECK FAILED: %s at %s:%d\n", #cond, __FILE__, __LINE__);         \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

namespace vmtest {
int Banner(int argc, char** argv);
int AllocStress(int argc, char** argv);
int AllocOom(int argc, char** argv);
int Exceptions(int argc, char** argv);
int Rtti(int argc, char** argv);
int StaticCtors(int argc, char** argv);
int ThreadLocal(int argc, char** argv);
int StdLib(int argc, char** argv);
int Clock(int argc, char** argv);
int NullDeref(int argc, char** argv);
int StackOverflow(int argc, char** argv);
int Terminate(int argc, char** argv);
int ExitCode(int argc, char** argv);
int Cores(int argc, char** argv);
int SpawnStorm(int argc, char** argv);
int Timers(int argc, char** argv);
int AppCoresQuiet(int argc, char** argv);
int Futures(int argc, char** argv);
int EventStackOverflow(int argc, char** argv);
int Sas(int argc, char** argv);
int SasReadOnlyWrite(int argc, char** argv);
}  // namespace vmtest
