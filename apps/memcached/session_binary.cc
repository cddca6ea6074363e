// The binary protocol (memcached's protocol_binary.h layout; protocol.h has
// the header). One request is a 24-byte header and a body of extras, key and
// value. Quiet opcodes answer only errors (and gets only hits); a Noop's
// answer shows that every request before it is done. A request whose shape
// is wrong for its opcode gets "Invalid arguments" and its body is skipped;
// an unknown opcode gets "Unknown command" likewise. A stream that cannot be
// followed (bad magic: no answer; key and extras longer than the body, or a
// body over kMaxSmallBody for a command that has no value: "Invalid
// arguments") is closed. A value over the limit gets "Too large" and is
// skipped as it arrives.
#include <algorithm>
#include <string>

#include "fox/memcached/session.h"

namespace fox::memcached {

namespace {

enum class Kind : uint8_t {
  kGet,
  kGat,
  kTouch,
  kStore,
  kConcat,
  kDelete,
  kArith,
  kQuit,
  kFlush,
  kNoop,
  kVersion,
  kVerbosity,
  kStat,
  kUnknown
};

struct OpInfo {
  Kind kind;
  bool quiet;
};

OpInfo Classify(uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kGet:
    case Opcode::kGetK: return {Kind::kGet, false};
    case Opcode::kGetQ:
    case Opcode::kGetKQ: return {Kind::kGet, true};
    case Opcode::kGat:
    case Opcode::kGatK: return {Kind::kGat, false};
    case Opcode::kGatQ:
    case Opcode::kGatKQ: return {Kind::kGat, true};
    case Opcode::kTouch: return {Kind::kTouch, false};
    case Opcode::kSet:
    case Opcode::kAdd:
    case Opcode::kReplace: return {Kind::kStore, false};
    case Opcode::kSetQ:
    case Opcode::kAddQ:
    case Opcode::kReplaceQ: return {Kind::kStore, true};
    case Opcode::kAppend:
    case Opcode::kPrepend: return {Kind::kConcat, false};
    case Opcode::kAppendQ:
    case Opcode::kPrependQ: return {Kind::kConcat, true};
    case Opcode::kDelete: return {Kind::kDelete, false};
    case Opcode::kDeleteQ: return {Kind::kDelete, true};
    case Opcode::kIncrement:
    case Opcode::kDecrement: return {Kind::kArith, false};
    case Opcode::kIncrementQ:
    case Opcode::kDecrementQ: return {Kind::kArith, true};
    case Opcode::kQuit: return {Kind::kQuit, false};
    case Opcode::kQuitQ: return {Kind::kQuit, true};
    case Opcode::kFlush: return {Kind::kFlush, false};
    case Opcode::kFlushQ: return {Kind::kFlush, true};
    case Opcode::kNoop: return {Kind::kNoop, false};
    case Opcode::kVersion: return {Kind::kVersion, false};
    case Opcode::kStat: return {Kind::kStat, false};
    case Opcode::kVerbosity: return {Kind::kVerbosity, false};
  }
  return {Kind::kUnknown, false};
}

// The request's opcode without its quiet bit, for the storage mode.
StoreMode ModeOf(uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kAdd:
    case Opcode::kAddQ: return StoreMode::kAdd;
    case Opcode::kReplace:
    case Opcode::kReplaceQ: return StoreMode::kReplace;
    case Opcode::kAppend:
    case Opcode::kAppendQ: return StoreMode::kAppend;
    case Opcode::kPrepend:
    case Opcode::kPrependQ: return StoreMode::kPrepend;
    default: return StoreMode::kSet;
  }
}

bool ReturnsKey(uint8_t opcode) {
  auto op = static_cast<Opcode>(opcode);
  return op == Opcode::kGetK || op == Opcode::kGetKQ || op == Opcode::kGatK || op == Opcode::kGatKQ;
}

// Whether the body's shape suits the opcode: extras length, key (required,
// forbidden or optional) and whether a value may follow.
bool ShapeOk(Kind kind, const BinaryHeader& h) {
  uint32_t value = h.body_length - h.key_length - h.extras_length;
  bool has_key = h.key_length > 0;
  switch (kind) {
    case Kind::kGet: return h.extras_length == 0 && has_key && value == 0;
    case Kind::kGat:
    case Kind::kTouch: return h.extras_length == 4 && has_key && value == 0;
    case Kind::kStore: return h.extras_length == 8 && has_key;
    case Kind::kConcat: return h.extras_length == 0 && has_key;
    case Kind::kDelete: return h.extras_length == 0 && has_key && value == 0;
    case Kind::kArith: return h.extras_length == 20 && has_key && value == 0;
    case Kind::kFlush: return (h.extras_length == 0 || h.extras_length == 4) && !has_key && value == 0;
    case Kind::kQuit:
    case Kind::kNoop:
    case Kind::kVersion: return h.body_length == 0;
    case Kind::kVerbosity: return h.extras_length == 4 && !has_key && value == 0;
    case Kind::kStat: return h.extras_length == 0 && value == 0;
    case Kind::kUnknown: return false;
  }
  return false;
}

}  // namespace

void Session::BinaryReply(BinaryStatus status, std::string_view extras, std::string_view key, std::string_view value,
                          uint64_t cas) {
  auto body = static_cast<uint32_t>(extras.size() + key.size() + value.size());
  AppendResponseHeader(out_, header_.opcode, status, static_cast<uint16_t>(key.size()),
                       static_cast<uint8_t>(extras.size()), body, header_.opaque, cas);
  out_.append(extras).append(key).append(value);
}

void Session::BinaryError(BinaryStatus status) {
  ++counters_->protocol_errors;
  BinaryReply(status, {}, {}, BinaryStatusMessage(status), 0);
}

Session::Parsed Session::ParseBinary(Time now, Request* request) {
  if (Available() < kHeaderBytes) {
    need_ = kHeaderBytes;
    return Parsed::kNeedMore;
  }
  header_ = DecodeHeader(InputData());
  const BinaryHeader& h = header_;
  noreply_ = false;
  if (h.magic != kRequestMagic) {
    ++counters_->protocol_errors;
    Close();
    return Parsed::kDone;
  }
  if (uint32_t{h.key_length} + h.extras_length > h.body_length) {
    BinaryError(BinaryStatus::kInvalidArguments);
    Close();
    return Parsed::kDone;
  }
  OpInfo op = Classify(h.opcode);
  bool has_value = op.kind == Kind::kStore || op.kind == Kind::kConcat;
  if (!has_value && h.body_length > kMaxSmallBody) {
    BinaryError(op.kind == Kind::kUnknown ? BinaryStatus::kUnknownCommand : BinaryStatus::kInvalidArguments);
    Close();
    return Parsed::kDone;
  }
  if (op.kind == Kind::kUnknown || !ShapeOk(op.kind, h) || h.data_type != 0 || h.key_length > kMaxKeyBytes) {
    BinaryError(op.kind == Kind::kUnknown ? BinaryStatus::kUnknownCommand : BinaryStatus::kInvalidArguments);
    ConsumeInput(kHeaderBytes);
    swallow_ = h.body_length;
    return Parsed::kDone;
  }
  noreply_ = op.quiet;
  cmd_ = Cmd::kBinary;
  const uint8_t* extras = InputData() + kHeaderBytes;
  std::string_view key(reinterpret_cast<const char*>(extras) + h.extras_length, h.key_length);
  uint32_t value_bytes = h.body_length - h.key_length - h.extras_length;
  if (has_value && value_bytes > options_.max_value_bytes) {
    size_t head = kHeaderBytes + h.extras_length + h.key_length;
    if (Available() < head) {
      need_ = head;
      return Parsed::kNeedMore;
    }
    BinaryError(BinaryStatus::kTooLarge);
    bool unlink = ModeOf(h.opcode) == StoreMode::kSet && ValidKey(key);
    if (unlink) {  // as memcached: a set that fails leaves no stale value behind
      *request = Request{};
      request->op = Request::Op::kDelete;
      request->key = key;
      cmd_ = Cmd::kUnlinkTooLarge;
    }
    ConsumeInput(head);
    swallow_ = value_bytes;
    return unlink ? Parsed::kRequest : Parsed::kDone;
  }
  size_t total = kHeaderBytes + h.body_length;
  if (Available() < total) {
    need_ = total;
    return Parsed::kNeedMore;
  }
  if (h.key_length > 0 && !ValidKey(key)) {
    BinaryError(BinaryStatus::kInvalidArguments);
    ConsumeInput(total);
    return Parsed::kDone;
  }
  *request = Request{};
  request->key = key;
  binary_key_ = key;
  request->check_cas = h.cas != 0;
  request->cas = h.cas;
  Parsed parsed = Parsed::kRequest;
  switch (op.kind) {
    case Kind::kGet: request->op = Request::Op::kGet; break;
    case Kind::kGat:
    case Kind::kTouch:
      request->op = Request::Op::kTouch;
      request->want_item = true;
      request->expiry = ExpiryFromExptime(Load32(extras), now);
      break;
    case Kind::kStore:
    case Kind::kConcat:
      request->op = Request::Op::kPut;
      request->mode = ModeOf(h.opcode);
      if (op.kind == Kind::kStore) {
        request->flags = Load32(extras);
        request->expiry = ExpiryFromExptime(Load32(extras + 4), now);
      }
      request->value.assign(key.data() + key.size(), value_bytes);
      ++counters_->cmd_set;
      break;
    case Kind::kDelete: request->op = Request::Op::kDelete; break;
    case Kind::kArith: {
      request->op = Request::Op::kArithmetic;
      auto opcode = static_cast<Opcode>(h.opcode);
      request->increment = opcode == Opcode::kIncrement || opcode == Opcode::kIncrementQ;
      request->delta = Load64(extras);
      request->initial = Load64(extras + 8);
      uint32_t expiration = Load32(extras + 16);
      request->create = expiration != 0xffffffffu;
      request->expiry = ExpiryFromExptime(expiration, now);
      break;
    }
    case Kind::kFlush: {
      request->op = Request::Op::kFlush;
      uint32_t delay = h.extras_length == 4 ? Load32(extras) : 0;
      request->flush_when = delay == 0 ? now : std::max(now, ExpiryFromExptime(delay, now));
      break;
    }
    case Kind::kStat: {
      request->op = Request::Op::kStats;
      if (key.empty()) break;
      if (key == "reset") {
        ResetCounters();
        BinaryReply(BinaryStatus::kSuccess, {}, {}, {}, 0);
      } else if (key == "settings" || key == "items" || key == "slabs" || key == "sizes" || key == "conns") {
        BinaryReply(BinaryStatus::kSuccess, {}, {}, {}, 0);
      } else {
        BinaryError(BinaryStatus::kKeyNotFound);
      }
      parsed = Parsed::kDone;
      break;
    }
    case Kind::kQuit:
      if (!op.quiet) BinaryReply(BinaryStatus::kSuccess, {}, {}, {}, 0);
      Close();
      parsed = Parsed::kDone;
      break;
    case Kind::kNoop:
      BinaryReply(BinaryStatus::kSuccess, {}, {}, {}, 0);
      parsed = Parsed::kDone;
      break;
    case Kind::kVersion:
      BinaryReply(BinaryStatus::kSuccess, {}, {}, kVersionString, 0);
      parsed = Parsed::kDone;
      break;
    case Kind::kVerbosity:  // accepted; fox logs no protocol traffic
      BinaryReply(BinaryStatus::kSuccess, {}, {}, {}, 0);
      parsed = Parsed::kDone;
      break;
    case Kind::kUnknown: parsed = Parsed::kDone; break;
  }
  ConsumeInput(total);
  return parsed;
}

void Session::CompleteBinary(const Result& result) {
  if (cmd_ == Cmd::kUnlinkTooLarge) return;
  Counters& c = *counters_;
  const BinaryHeader& h = header_;
  OpInfo op = Classify(h.opcode);
  bool ok = result.status == Status::kOk;
  auto fail = [&](BinaryStatus status) { BinaryReply(status, {}, {}, BinaryStatusMessage(status), 0); };
  auto success = [&](uint64_t cas) {
    if (!op.quiet) BinaryReply(BinaryStatus::kSuccess, {}, {}, {}, cas);
  };
  // A backend that did not answer: an error even for quiet opcodes (a miss
  // or a refusal would be a lie).
  if (result.status == Status::kUnavailable && op.kind != Kind::kFlush && op.kind != Kind::kStat) {
    return fail(BinaryStatus::kTemporaryFailure);
  }
  switch (op.kind) {
    case Kind::kGet:
    case Kind::kGat:
    case Kind::kTouch: {
      ++c.cmd_get;
      if (op.kind != Kind::kGet) {
        ++c.cmd_touch;
        ++(ok ? c.touch_hits : c.touch_misses);
      }
      ++(ok ? c.get_hits : c.get_misses);
      if (!ok) {
        if (op.quiet) return;  // a quiet miss is silent
        if (ReturnsKey(h.opcode)) {
          // memcached answers GetK's miss with the key and no message.
          BinaryReply(BinaryStatus::kKeyNotFound, {}, binary_key_, {}, 0);
          return;
        }
        fail(BinaryStatus::kKeyNotFound);
        return;
      }
      std::string flags;
      Append32(flags, result.item.flags);
      std::string_view key = ReturnsKey(h.opcode) ? std::string_view(binary_key_) : std::string_view();
      std::string_view value = op.kind == Kind::kTouch ? std::string_view() : std::string_view(result.item.value);
      BinaryReply(BinaryStatus::kSuccess, flags, key, value, result.item.cas);
      return;
    }
    case Kind::kStore:
    case Kind::kConcat: {
      StoreMode mode = ModeOf(h.opcode);
      if (h.cas != 0) ++(ok ? c.cas_hits : result.status == Status::kExists ? c.cas_badval : c.cas_misses);
      switch (result.status) {
        case Status::kOk: success(result.cas); return;
        case Status::kExists: fail(BinaryStatus::kKeyExists); return;
        case Status::kNotFound: fail(BinaryStatus::kKeyNotFound); return;
        case Status::kTooLarge: fail(BinaryStatus::kTooLarge); return;
        case Status::kNoMemory: fail(BinaryStatus::kOutOfMemory); return;
        default:
          fail(mode == StoreMode::kAdd       ? BinaryStatus::kKeyExists
               : mode == StoreMode::kReplace ? BinaryStatus::kKeyNotFound
                                             : BinaryStatus::kNotStored);
          return;
      }
    }
    case Kind::kDelete:
      ++(ok ? c.delete_hits : c.delete_misses);
      if (ok) {
        success(0);
      } else {
        fail(result.status == Status::kExists ? BinaryStatus::kKeyExists : BinaryStatus::kKeyNotFound);
      }
      return;
    case Kind::kArith: {
      bool incr =
          static_cast<Opcode>(h.opcode) == Opcode::kIncrement || static_cast<Opcode>(h.opcode) == Opcode::kIncrementQ;
      ++(incr ? (ok ? c.incr_hits : c.incr_misses) : (ok ? c.decr_hits : c.decr_misses));
      switch (result.status) {
        case Status::kOk: {
          if (op.quiet) return;
          std::string value;
          Append64(value, result.number);
          BinaryReply(BinaryStatus::kSuccess, {}, {}, value, result.cas);
          return;
        }
        case Status::kNonNumeric: fail(BinaryStatus::kNonNumeric); return;
        case Status::kTooLarge: fail(BinaryStatus::kTooLarge); return;
        case Status::kExists: fail(BinaryStatus::kKeyExists); return;
        case Status::kNoMemory: fail(BinaryStatus::kOutOfMemory); return;
        default: fail(BinaryStatus::kKeyNotFound); return;
      }
    }
    case Kind::kFlush:
      ++c.cmd_flush;
      success(0);
      return;
    case Kind::kStat:
      AppendStats(last_now_, result.stats, true);
      BinaryReply(BinaryStatus::kSuccess, {}, {}, {}, 0);
      return;
    default: return;
  }
}

}  // namespace fox::memcached
