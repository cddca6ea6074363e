// Session: one client connection's memcached conversation, as pure logic.
// Bytes from the TCP stream go in (Feed), responses come out (Output /
// Consume); in between, the session hands its caller one store operation at
// a time (Next) and encodes the caller's answer (Complete). Text or binary
// protocol is chosen by the connection's first byte (0x80: binary), as
// memcached does.
//
// Driving it (synchronously, over a Store):     or asynchronously:
//   accepted = session.Feed(bytes, n);           Next(now, &req) == kRequest:
//   session.Run(store, now);                       send req off; later, from
//   send session.Output(); session.Consume(k);     the completion: Complete(r)
//   close once closing() and Output() is empty     and call Next again
//
// Bounds: the input buffer holds at most one request (a command line or
// binary header, and a value up to max_value_bytes; a get line longer than
// kMaxTextLineBytes is taken key by key as it arrives); Feed takes only what
// fits (InputSpace), so a client streaming faster than the backend answers
// waits in TCP flow control. A value over the limit is answered at once and
// its bytes skipped as they arrive, never buffered. Output is not parsed
// past output_limit: Next returns kDrainOutput until the caller has sent
// (Consume) enough, so a client that never reads holds at most output_limit
// plus one response (one item, for a multi-key get: each key is its own
// request) in memory. Nothing throws on bad input: a refused request
// produces the protocol's error; a stream the session cannot follow (a line
// too long that is not a get, bad binary magic, inconsistent lengths)
// produces an error if the protocol has one, then closing().
//
// Context: any, one thread at a time per session; never blocks, never
// allocates more than the bounds above.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fox/memcached/protocol.h"
#include "fox/memcached/store.h"

namespace fox::memcached {

// A counter that one thread writes and any reads: relaxed atomic loads and
// stores (on x86 a plain add), so that another core may add it up for stats
// while its core counts.
class Count {
 public:
  Count(uint64_t value = 0) : value_(value) {}  // NOLINT: a number
  Count(const Count& other) : value_(other.get()) {}
  Count& operator=(const Count& other) {
    value_.store(other.get(), std::memory_order_relaxed);
    return *this;
  }
  Count& operator++() { return *this = get() + 1; }
  Count& operator--() { return *this = get() - 1; }
  uint64_t get() const { return value_.load(std::memory_order_relaxed); }
  operator uint64_t() const { return get(); }  // NOLINT: reads as a number

 private:
  std::atomic<uint64_t> value_;
};

// A server's counters, shared by the sessions one thread (core) serves.
struct Counters {
  Time start_time = 0;
  Count curr_connections;
  Count total_connections;
  Count cmd_get;  // keys asked for
  Count cmd_set;
  Count cmd_flush;
  Count cmd_touch;
  Count get_hits;
  Count get_misses;
  Count delete_hits;
  Count delete_misses;
  Count incr_hits;
  Count incr_misses;
  Count decr_hits;
  Count decr_misses;
  Count cas_hits;
  Count cas_misses;
  Count cas_badval;
  Count touch_hits;
  Count touch_misses;
  Count protocol_errors;  // requests refused as malformed

  // Calls f(a.x, b.x) for every counter `stats reset` zeroes (all but the
  // start time and the connections).
  template <typename F>
  static void EachResettable(Counters& a, const Counters& b, F f) {
    f(a.cmd_get, b.cmd_get), f(a.cmd_set, b.cmd_set), f(a.cmd_flush, b.cmd_flush), f(a.cmd_touch, b.cmd_touch);
    f(a.get_hits, b.get_hits), f(a.get_misses, b.get_misses);
    f(a.delete_hits, b.delete_hits), f(a.delete_misses, b.delete_misses);
    f(a.incr_hits, b.incr_hits), f(a.incr_misses, b.incr_misses);
    f(a.decr_hits, b.decr_hits), f(a.decr_misses, b.decr_misses);
    f(a.cas_hits, b.cas_hits), f(a.cas_misses, b.cas_misses), f(a.cas_badval, b.cas_badval);
    f(a.touch_hits, b.touch_hits), f(a.touch_misses, b.touch_misses), f(a.protocol_errors, b.protocol_errors);
  }
};

// The counters of a server that serves on several cores: the sessions of
// core c count into Of(c) (one writer each, no line shared between cores),
// `stats` reports Total(), and `stats reset` (Reset) makes the present sums
// the new zero. Total and Reset from any core at any time: a Total that
// races a Reset may mix the two (each counter is read once, never below 0).
class CoreCounters {
 public:
  CoreCounters(int cores, Time start_time);
  int cores() const { return cores_; }
  Counters* Of(int core) { return &slots_[core].counters; }
  Counters Total() const;
  void Reset();

 private:
  struct alignas(64) Slot {
    Counters counters;
  };
  Counters Sums() const;
  int cores_;
  Time start_time_;
  std::unique_ptr<Slot[]> slots_;
  Counters zero_;  // the sums at the last Reset (its counters only)
};

// One store operation, self-contained (copies of key and value), so it may
// outlive the bytes it was parsed from.
struct Request {
  enum class Op : uint8_t { kGet, kTouch, kPut, kDelete, kArithmetic, kFlush, kStats };
  Op op = Op::kGet;
  Time now = 0;
  std::string key;
  std::string value;                 // kPut
  StoreMode mode = StoreMode::kSet;  // kPut
  uint32_t flags = 0;                // kPut
  Expiry expiry = kNeverExpires;     // kPut, kTouch, kArithmetic
  bool check_cas = false;            // kPut, kDelete, kArithmetic
  uint64_t cas = 0;
  bool want_item = false;  // kTouch: copy the item back (gat, binary touch)
  bool increment = true;   // kArithmetic
  uint64_t delta = 0;
  bool create = false;
  uint64_t initial = 0;
  Time flush_when = 0;  // kFlush
};

struct Result {
  Status status = Status::kOk;
  Item item;            // kGet, kTouch with want_item
  uint64_t cas = 0;     // kPut, kArithmetic
  uint64_t number = 0;  // kArithmetic
  StoreStats stats;     // kStats
};

// Runs a request against a store, synchronously.
Result Execute(Store& store, const Request& request);

class Session {
 public:
  struct Options {
    size_t max_value_bytes = kDefaultMaxValueBytes;
    size_t output_limit = 1 << 20;
    Counters* counters = nullptr;  // null: the session keeps its own
    // A server on several cores: `counters` is this core's of these, and
    // stats report (and reset) all of them.
    CoreCounters* all_cores = nullptr;
  };
  enum class Protocol : uint8_t { kUnknown, kText, kBinary };
  enum class Step : uint8_t {
    kRequest,      // *request is filled: answer it with Complete
    kNeedInput,    // everything fed so far is handled
    kDrainOutput,  // Output() is over the limit: Consume some first
    kClose,        // closing(): send what Output() holds, then close
    kBusy,         // a request is outstanding (Complete not yet called)
  };

  Session() : Session(Options{}) {}
  explicit Session(const Options& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Copies up to InputSpace() bytes; returns how many it took.
  size_t Feed(const void* data, size_t length);
  size_t InputSpace() const;

  // Parses on; answers by itself what needs no store (version, noop,
  // verbosity, quit, errors). `now` is the caller's unix time.
  Step Next(Time now, Request* request);
  // The answer to the request Next returned last.
  void Complete(const Result& result);
  // Next/Execute/Complete until Next returns something else than kRequest.
  Step Run(Store& store, Time now);

  std::string_view Output() const { return std::string_view(out_).substr(out_start_); }
  void Consume(size_t length);

  bool closing() const { return closing_; }
  Protocol protocol() const { return protocol_; }

 private:
  enum class Parsed : uint8_t { kNeedMore, kRequest, kDone };
  // What the outstanding request answers (one at a time).
  enum class Cmd : uint8_t {
    kGet,
    kGets,
    kGat,
    kGats,
    kTouch,
    kSet,
    kAdd,
    kReplace,
    kAppend,
    kPrepend,
    kCas,
    kDelete,
    kIncr,
    kDecr,
    kFlush,
    kStats,
    kUnlinkTooLarge,
    kBinary,
  };

  Parsed ParseText(Time now, Request* request);
  // A get-family line longer than kMaxTextLineBytes: its keys are taken as
  // they arrive (ParseGetKeys), as memcached does for large multigets.
  Parsed ParseLongGetLine(Time now);
  Parsed ParseGetKeys();
  Parsed DiscardLine();
  Parsed ParseTextStorage(const std::vector<std::string_view>& tokens, Cmd cmd, size_t line_bytes, Time now,
                          Request* request);
  Parsed NextMultiGet(Time now, Request* request);
  void CompleteText(const Result& result);
  Parsed ParseBinary(Time now, Request* request);
  void CompleteBinary(const Result& result);

  void Reply(std::string_view line);  // text: line + "\r\n", unless noreply
  void BinaryReply(BinaryStatus status, std::string_view extras, std::string_view key, std::string_view value,
                   uint64_t cas);
  void BinaryError(BinaryStatus status);  // sent even for quiet opcodes
  void AppendStats(Time now, const StoreStats& store, bool binary);
  void ResetCounters();  // stats reset
  void ConsumeInput(size_t length);
  size_t Available() const { return in_.size() - in_start_; }
  const uint8_t* InputData() const { return reinterpret_cast<const uint8_t*>(in_.data()) + in_start_; }
  void Close() { closing_ = true; }

  Options options_;
  Counters own_counters_;
  Counters* counters_;
  Protocol protocol_ = Protocol::kUnknown;
  std::string in_;
  size_t in_start_ = 0;
  size_t need_ = 0;       // don't parse before this many bytes are available
  uint64_t swallow_ = 0;  // bytes of a refused value still to skip
  std::string out_;
  size_t out_start_ = 0;
  bool closing_ = false;
  bool pending_ = false;

  // The outstanding command.
  Cmd cmd_ = Cmd::kGet;
  bool noreply_ = false;           // text noreply, binary quiet opcode
  BinaryHeader header_;            // binary
  std::string binary_key_;         // binary: the key, for GetK's answer
  std::vector<std::string> keys_;  // text multi-key get: the keys, the next one
  size_t next_key_ = 0;
  Expiry gat_expiry_ = kNeverExpires;
  bool multi_get_ = false;
  bool line_open_ = false;     // a long get line whose end has not been parsed
  bool discard_line_ = false;  // skipping the rest of a refused long line
  Time last_now_ = 0;
};

}  // namespace fox::memcached
