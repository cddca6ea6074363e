// The APGAS test programs' check: a condition that must hold at this
// place, else the place prints what differs and exits 1 (the test fails
// naming it).
//
//   #define CHECK(...) FOX_APGAS_CHECK("team_ops", __VA_ARGS__)
//   CHECK(got == want, "%zu of %zu", got, want);
#pragma once

#include <cstdio>
#include <cstdlib>

#include "fox/apgas/apgas.h"

#define FOX_APGAS_CHECK(program, cond, ...)                                                   \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::printf("%s: place %u: check failed: %s: ", program, fox::apgas::here().id, #cond); \
      std::printf(__VA_ARGS__);                                                               \
      std::printf("\n");                                                                      \
      std::fflush(stdout);                                                                    \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
