// libFuzzer: the memcached protocol session (apps/memcached), text and binary
// (the stream's first byte picks, as for a real connection), over a
// LocalStore. Input: an options byte (value limit, store size, output
// limit), a byte seeding the chunk sizes, then the client's byte stream.
// The stream is played twice: fed whole and fed in pseudo-random chunks.
// Checks: no crash or sanitizer report; no stall (every round feeds,
// answers or ends); input and output buffers within the session's bounds;
// binary output is a sequence of well-formed responses and text output
// ends a line; both plays answer the same bytes (partial frames change
// nothing) unless a text line is longer than kMaxTextLineBytes (a long
// get's keys are answered as they arrive, so a bad key late in it is
// refused after some values went out: that output depends on the chunks).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "fox/memcached/local_store.h"
#include "fox/memcached/protocol.h"
#include "fox/memcached/session.h"

using namespace fox::memcached;

namespace {

constexpr Time kNow = 1'700'000'000;

// A failed check names itself before the trap libFuzzer reports.
#define CHECK(condition)                                                                          \
  do {                                                                                            \
    if (!(condition)) {                                                                           \
      std::fprintf(stderr, "fuzz_memcached: check failed: %s (line %d)\n", #condition, __LINE__); \
      __builtin_trap();                                                                           \
    }                                                                                             \
  } while (0)

struct Play {
  std::string output;
  bool closed = false;
};

// xorshift: chunk sizes 1..64 from the seed byte (0: the whole stream).
struct Chunker {
  uint32_t state;
  size_t Next(size_t left) {
    if (state == 0) return left;
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return 1 + state % 64;
  }
};

Play Run(std::string_view stream, const Session::Options& options, const LocalStore::Options& store_options,
         uint32_t seed) {
  LocalStore store(store_options);
  Session session(options);
  Chunker chunker{seed};
  Play play;
  // A response bigger than any one request's answer: one item (value and
  // its header) or the stats block.
  const size_t output_bound = options.output_limit + options.max_value_bytes + 4096;
  // Each round feeds a byte or more, or answers a request or more (each
  // request takes a byte or more of the stream).
  const size_t max_rounds = 4 * stream.size() + 64;
  size_t rounds = 0;
  for (;;) {
    CHECK(++rounds <= max_rounds);  // else no progress: a stall
    size_t offer = std::min(stream.size(), chunker.Next(stream.size()));
    size_t space = session.InputSpace();
    size_t taken = session.Feed(stream.data(), offer);
    CHECK(taken <= offer && (session.closing() || taken <= space));
    stream.remove_prefix(taken);
    Session::Step step = session.Run(store, kNow);
    CHECK(session.Output().size() <= output_bound);
    play.output.append(session.Output());
    session.Consume(session.Output().size());
    if (step == Session::Step::kClose) {
      play.closed = true;
      return play;
    }
    CHECK(step != Session::Step::kBusy && step != Session::Step::kRequest);  // Run answers all
    if (step == Session::Step::kNeedInput && stream.empty()) return play;
    // Waiting for input with input offered but none taken: the buffer is
    // full and the parser still wants more.
    CHECK(!(step == Session::Step::kNeedInput && offer > 0 && taken == 0));
  }
}

void CheckBinaryOutput(std::string_view out) {
  while (!out.empty()) {
    CHECK(out.size() >= kHeaderBytes);
    BinaryHeader h = DecodeHeader(reinterpret_cast<const uint8_t*>(out.data()));
    CHECK(h.magic == kResponseMagic && h.data_type == 0);
    CHECK(uint32_t{h.key_length} + h.extras_length <= h.body_length);
    CHECK(out.size() - kHeaderBytes >= h.body_length);
    out.remove_prefix(kHeaderBytes + h.body_length);
  }
}

bool HasLongLine(std::string_view stream) {
  size_t run = 0;
  for (char c : stream) {
    run = c == '\n' ? 0 : run + 1;
    if (run >= kMaxTextLineBytes) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint8_t config = data[0];
  uint32_t seed = data[1] | 0x100u;  // never 0: the second play is chunked
  std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);

  static constexpr size_t kValueLimits[] = {16, 100, 3000, kDefaultMaxValueBytes};
  static constexpr size_t kStoreLimits[] = {64, 1 << 20};
  static constexpr size_t kOutputLimits[] = {1, 256, 1 << 20};
  Session::Options options;
  options.max_value_bytes = kValueLimits[config & 3];
  options.output_limit = kOutputLimits[((config >> 3) & 3) % 3];
  LocalStore::Options store_options;
  store_options.max_value_bytes = options.max_value_bytes;
  store_options.max_bytes = kStoreLimits[(config >> 2) & 1];

  Play whole = Run(stream, options, store_options, 0);
  Play chunked = Run(stream, options, store_options, seed);
  bool binary = !stream.empty() && static_cast<uint8_t>(stream[0]) == kRequestMagic;
  if (binary) {
    CheckBinaryOutput(whole.output);
    CheckBinaryOutput(chunked.output);
  } else {
    CHECK(whole.output.empty() || whole.output.ends_with("\r\n"));
  }
  if (!binary && HasLongLine(stream)) return 0;
  CHECK(whole.output == chunked.output && whole.closed == chunked.closed);
  return 0;
}
