// Session: the buffers, the parse loop and the store glue shared by both
// protocols (session_text.cc, session_binary.cc hold the two grammars).
#include "fox/memcached/session.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fox::memcached {

namespace {

// A buffer's consumed prefix is erased once it is at least this long and
// half of the buffer, so that feeding byte by byte stays linear.
constexpr size_t kCompactBytes = 4096;

void Compact(std::string& buffer, size_t& start) {
  if (start == buffer.size()) {
    buffer.clear();
    start = 0;
  } else if (start >= kCompactBytes && start * 2 >= buffer.size()) {
    buffer.erase(0, start);
    start = 0;
  }
}

}  // namespace

Result Execute(Store& store, const Request& r) {
  Result result;
  switch (r.op) {
    case Request::Op::kGet: result.status = store.Get(r.key, r.now, &result.item); break;
    case Request::Op::kTouch:
      result.status = store.Touch(r.key, r.expiry, r.now, r.want_item ? &result.item : nullptr);
      break;
    case Request::Op::kPut: {
      Mutation m{r.mode, r.key, r.value, r.flags, r.expiry, r.check_cas, r.cas};
      result.status = store.Put(m, r.now, &result.cas);
      break;
    }
    case Request::Op::kDelete: result.status = store.Delete(r.key, r.check_cas, r.cas, r.now); break;
    case Request::Op::kArithmetic: {
      Arithmetic a{r.key, r.increment, r.delta, r.create, r.initial, r.expiry, r.check_cas, r.cas};
      result.status = store.Apply(a, r.now, &result.number, &result.cas);
      break;
    }
    case Request::Op::kFlush: store.Flush(r.flush_when, r.now); break;
    case Request::Op::kStats: result.stats = store.Stats(r.now); break;
  }
  return result;
}

Session::Session(const Options& options)
    : options_(options), counters_(options.counters != nullptr ? options.counters : &own_counters_) {
  ++counters_->curr_connections;
  ++counters_->total_connections;
}

Session::~Session() { --counters_->curr_connections; }

size_t Session::InputSpace() const {
  // One whole request: a text line and its value, or a binary header, extras,
  // key and value.
  size_t capacity = options_.max_value_bytes + kMaxTextLineBytes + kHeaderBytes + 512;
  return capacity - std::min(capacity, Available());
}

size_t Session::Feed(const void* data, size_t length) {
  if (closing_) return length;  // nothing more will be read: drop it
  Compact(in_, in_start_);
  size_t n = std::min(length, InputSpace());
  in_.append(static_cast<const char*>(data), n);
  return n;
}

void Session::ConsumeInput(size_t length) {
  in_start_ += length;
  need_ = 0;
  Compact(in_, in_start_);
}

void Session::Consume(size_t length) {
  out_start_ += std::min(length, out_.size() - out_start_);
  Compact(out_, out_start_);
}

Session::Step Session::Next(Time now, Request* request) {
  if (pending_) return Step::kBusy;
  last_now_ = now;
  for (;;) {
    if (closing_) return Step::kClose;
    if (Output().size() >= options_.output_limit) return Step::kDrainOutput;
    Parsed parsed;
    if (multi_get_) {
      parsed = NextMultiGet(now, request);
    } else {
      if (swallow_ > 0) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(Available(), swallow_));
        ConsumeInput(n);
        swallow_ -= n;
        if (swallow_ > 0) return Step::kNeedInput;
        continue;
      }
      if (Available() == 0 || Available() < need_) return Step::kNeedInput;
      if (protocol_ == Protocol::kUnknown) {
        protocol_ = InputData()[0] == kRequestMagic ? Protocol::kBinary : Protocol::kText;
      }
      parsed = protocol_ == Protocol::kText ? ParseText(now, request) : ParseBinary(now, request);
    }
    if (parsed == Parsed::kNeedMore) return Step::kNeedInput;
    if (parsed == Parsed::kRequest) {
      request->now = now;
      pending_ = true;
      return Step::kRequest;
    }
  }
}

void Session::Complete(const Result& result) {
  if (!pending_) return;
  pending_ = false;
  if (protocol_ == Protocol::kBinary) {
    CompleteBinary(result);
  } else {
    CompleteText(result);
  }
}

Session::Step Session::Run(Store& store, Time now) {
  for (;;) {
    Request request;
    Step step = Next(now, &request);
    if (step != Step::kRequest) return step;
    Complete(Execute(store, request));
  }
}

CoreCounters::CoreCounters(int cores, Time start_time)
    : cores_(cores), start_time_(start_time), slots_(std::make_unique<Slot[]>(size_t(cores))) {
  for (int i = 0; i < cores; ++i) slots_[i].counters.start_time = start_time;
}

Counters CoreCounters::Sums() const {
  Counters sum;
  sum.start_time = start_time_;
  for (int i = 0; i < cores_; ++i) {
    const Counters& c = slots_[i].counters;
    sum.curr_connections = sum.curr_connections + c.curr_connections;
    sum.total_connections = sum.total_connections + c.total_connections;
    Counters::EachResettable(sum, c, [](Count& s, const Count& x) { s = s + x; });
  }
  return sum;
}

Counters CoreCounters::Total() const {
  Counters zero = zero_;  // first: a Reset after this can only raise the sums read next
  Counters sum = Sums();
  Counters::EachResettable(sum, zero, [](Count& s, const Count& z) { s = s > z ? s - z : 0; });
  return sum;
}

void CoreCounters::Reset() {
  Counters sums = Sums();
  Counters::EachResettable(zero_, sums, [](Count& z, const Count& s) { z = s; });
}

void Session::ResetCounters() {
  if (options_.all_cores != nullptr) return options_.all_cores->Reset();
  Counters::EachResettable(*counters_, Counters{}, [](Count& c, const Count&) { c = 0; });
}

void Session::AppendStats(Time now, const StoreStats& store, bool binary) {
  const Counters c = options_.all_cores != nullptr ? options_.all_cores->Total() : *counters_;
  auto stat = [&](std::string_view name, std::string_view value) {
    if (binary) {
      BinaryReply(BinaryStatus::kSuccess, {}, name, value, 0);
    } else {
      out_.append("STAT ").append(name).append(" ").append(value).append("\r\n");
    }
  };
  auto number = [&](std::string_view name, uint64_t value) { stat(name, std::to_string(value)); };
  number("uptime", now > c.start_time ? static_cast<uint64_t>(now - c.start_time) : 0);
  number("time", now > 0 ? static_cast<uint64_t>(now) : 0);
  stat("version", kVersionString);
  number("pointer_size", sizeof(void*) * 8);
  number("curr_connections", c.curr_connections);
  number("total_connections", c.total_connections);
  number("cmd_get", c.cmd_get);
  number("cmd_set", c.cmd_set);
  number("cmd_flush", c.cmd_flush);
  number("cmd_touch", c.cmd_touch);
  number("get_hits", c.get_hits);
  number("get_misses", c.get_misses);
  number("delete_misses", c.delete_misses);
  number("delete_hits", c.delete_hits);
  number("incr_misses", c.incr_misses);
  number("incr_hits", c.incr_hits);
  number("decr_misses", c.decr_misses);
  number("decr_hits", c.decr_hits);
  number("cas_misses", c.cas_misses);
  number("cas_hits", c.cas_hits);
  number("cas_badval", c.cas_badval);
  number("touch_hits", c.touch_hits);
  number("touch_misses", c.touch_misses);
  number("protocol_errors", c.protocol_errors);
  number("threads", options_.all_cores != nullptr ? uint64_t(options_.all_cores->cores()) : 1);
  number("curr_items", store.curr_items);
  number("total_items", store.total_items);
  number("bytes", store.bytes);
  number("limit_maxbytes", store.limit_maxbytes);
  number("evictions", store.evictions);
  if (store.distributed) number("fox_held_items", store.held_items);
  if (options_.all_cores != nullptr) {  // the connections each core has served
    std::string per_core;
    for (int i = 0; i < options_.all_cores->cores(); ++i) {
      per_core += (i == 0 ? "" : ",") + std::to_string(options_.all_cores->Of(i)->total_connections);
    }
    stat("fox_core_connections", per_core);
  }
}

}  // namespace fox::memcached
