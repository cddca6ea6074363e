// The two platform hooks kernel/common needs, for host unit tests: the
// console captures output so tests can read it, the clock is a counter.
#include <cstdint>
#include <string>

#include "fox/clock.h"
#include "fox/console.h"

namespace fox::testing {
std::string g_console;
}

void fox::console::Write(const char* data, size_t n) { fox::testing::g_console.append(data, n); }

uint64_t fox::clock::NowNs() { return 1234567890123ull; }
