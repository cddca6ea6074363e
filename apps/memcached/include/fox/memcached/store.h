// The backend behind the memcached protocol: what a session asks of the data,
// whoever holds it (LocalStore in tests and the conformance server, the Dht
// Ebb later). Pure logic: no clock (time is passed in as unix seconds), no
// platform calls, no exceptions for a client's doing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fox::memcached {

// Unix seconds, as the caller's clock says.
using Time = int64_t;

// An absolute expiry time: 0 never expires; an item whose expiry is non-zero
// and <= now is gone (kExpiredAlready is always in the past).
using Expiry = int64_t;
constexpr Expiry kNeverExpires = 0;
constexpr Expiry kExpiredAlready = -1;

// memcached's exptime rule, shared by both protocols: 0 never; negative
// already expired; up to 30 days relative to now; larger an absolute unix
// time (which may be in the past: then already expired).
constexpr int64_t kMaxRelativeExptime = 60 * 60 * 24 * 30;
constexpr Expiry ExpiryFromExptime(int64_t exptime, Time now) {
  if (exptime == 0) return kNeverExpires;
  if (exptime < 0) return kExpiredAlready;
  if (exptime <= kMaxRelativeExptime) return now + exptime;
  return exptime;
}
constexpr bool IsExpired(Expiry expiry, Time now) { return expiry != kNeverExpires && expiry <= now; }

// What an operation did. The session maps each to the text reply or binary
// status of the command that asked (e.g. kNotStored is "NOT_STORED" for a
// text add, binary status 0x02 for Add, 0x01 for Replace).
enum class Status : uint8_t {
  kOk,
  kNotFound,     // no such key (or expired, or flushed)
  kExists,       // compare-and-swap value differs
  kNotStored,    // add of a present key; replace/append/prepend of a missing one
  kNonNumeric,   // incr/decr of a value that is not a decimal uint64
  kTooLarge,     // the value (after append/prepend) is over the value limit
  kNoMemory,     // the store is full (no eviction)
  kUnavailable,  // the backend did not answer in time (a write may or may not have happened)
};
const char* StatusName(Status status);

struct Item {
  std::string value;
  uint32_t flags = 0;
  uint64_t cas = 0;  // never 0 for a stored item
};

enum class StoreMode : uint8_t { kSet, kAdd, kReplace, kAppend, kPrepend };

// A storage command. check_cas: the item must exist with this cas (text
// "cas", or a binary request with a non-zero cas field); kAdd of a present
// key is kNotStored before any cas check. Append and prepend keep the
// item's flags and expiry (their own are ignored, as memcached does).
struct Mutation {
  StoreMode mode = StoreMode::kSet;
  std::string_view key;
  std::string_view value;
  uint32_t flags = 0;
  Expiry expiry = kNeverExpires;
  bool check_cas = false;
  uint64_t cas = 0;
};

// incr/decr: 64-bit wraparound for incr, decr floors at 0. create (binary
// only): a missing key is created holding `initial` (returned as the value)
// with `expiry`, flags 0.
struct Arithmetic {
  std::string_view key;
  bool increment = true;
  uint64_t delta = 0;
  bool create = false;
  uint64_t initial = 0;
  Expiry expiry = kNeverExpires;
  bool check_cas = false;
  uint64_t cas = 0;
};

struct StoreStats {
  uint64_t curr_items = 0;
  uint64_t total_items = 0;  // items ever stored
  uint64_t bytes = 0;        // keys and values of the live items
  uint64_t limit_maxbytes = 0;
  uint64_t evictions = 0;
  // A store spread over nodes (DhtStore): the copies this node holds, its
  // share of curr_items counted with replicas (STAT fox_held_items).
  bool distributed = false;
  uint64_t held_items = 0;
};

// The interface. Contract for every method: synchronous, returns a Status
// (never throws for anything a client sends), called by one thread at a time
// per instance unless the implementation says otherwise; `now` is the
// caller's unix time, used for expiry only. Keys arrive already validated
// (1..250 bytes, no control characters), values within the session's limit.
//
// Why synchronous: a Session never calls a Store itself. It hands its caller
// one parsed Request at a time and waits for the Result (Session::Next /
// Session::Complete), so a backend that answers later (the Dht, across the
// network) drives the same session from its completion event. Execute()
// (session.h) is the synchronous glue that runs a Request against a Store.
class Store {
 public:
  virtual ~Store() = default;
  // Copies the item into *item on kOk.
  virtual Status Get(std::string_view key, Time now, Item* item) = 0;
  // Sets a new expiry; copies the item into *item (if not null) on kOk.
  virtual Status Touch(std::string_view key, Expiry expiry, Time now, Item* item) = 0;
  // On kOk sets *new_cas.
  virtual Status Put(const Mutation& m, Time now, uint64_t* new_cas) = 0;
  // check_cas as for Mutation.
  virtual Status Delete(std::string_view key, bool check_cas, uint64_t cas, Time now) = 0;
  // On kOk sets *value (the new value) and *new_cas.
  virtual Status Apply(const Arithmetic& a, Time now, uint64_t* value, uint64_t* new_cas) = 0;
  // Every item stored before `when` is gone from `when` on (when <= now: at once).
  virtual void Flush(Time when, Time now) = 0;
  virtual StoreStats Stats(Time now) = 0;
};

}  // namespace fox::memcached
