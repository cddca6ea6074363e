// The text protocol (memcached doc/protocol.txt): a command line ending in
// "\n" (a "\r" before it is dropped), tokens separated by spaces, then for
// storage commands a data block of the announced length and "\r\n". Replies
// and errors are memcached 1.6's, word for word, and so are its token rules:
// a wrong number of tokens is "ERROR"; `noreply` is the last token of a
// command that has one (storage, incr/decr, touch, delete, flush_all,
// verbosity) and silences every reply of that command, errors included;
// version and quit ignore their arguments.
//
// Lines are at most kMaxTextLineBytes, except get/gets/gat/gats lines, which
// may be of any length (clients send large multigets): past that bound their
// keys are looked up as they arrive, so a bad key late in such a line is
// refused after the earlier keys were answered (as in memcached). Any other
// longer line closes the connection.
//
// Where memcached leaves the stream out of step, fox keeps it in step:
// whenever a storage command's data length can be read, its data block is
// consumed (or skipped) even if the command is refused.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fox/memcached/session.h"

namespace fox::memcached {

namespace {

constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format";
constexpr std::string_view kBadExptime = "CLIENT_ERROR invalid exptime argument";
constexpr std::string_view kTooLarge = "SERVER_ERROR object too large for cache";
// A backend that did not answer (Status::kUnavailable): the client must not
// take it for a miss or a refusal.
constexpr std::string_view kUnavailable = "SERVER_ERROR temporary failure";
constexpr int64_t kMaxDataBytes = 0x7fffffff - 2;  // memcached's bound on a data block length

std::vector<std::string_view> Tokenize(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

bool IsGetCommand(std::string_view command) {
  return command == "get" || command == "gets" || command == "gat" || command == "gats";
}

}  // namespace

void Session::Reply(std::string_view line) {
  if (noreply_) return;
  out_.append(line).append("\r\n");
}

Session::Parsed Session::ParseText(Time now, Request* request) {
  if (discard_line_) return DiscardLine();
  if (line_open_) return ParseGetKeys();
  const char* data = reinterpret_cast<const char*>(InputData());
  size_t available = Available();
  const void* newline = std::memchr(data, '\n', std::min(available, kMaxTextLineBytes));
  if (newline == nullptr) {
    if (available >= kMaxTextLineBytes) return ParseLongGetLine(now);
    need_ = available + 1;
    return Parsed::kNeedMore;
  }
  size_t line_bytes = static_cast<const char*>(newline) - data + 1;
  // A copy: the tokens must outlive the consumption of the line.
  std::string line(data, line_bytes - 1);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string_view> tokens = Tokenize(line);
  size_t n = tokens.size();
  noreply_ = false;
  multi_get_ = false;

  // Everything but a storage command: its line is all there is.
  std::string_view command = n > 0 ? tokens[0] : std::string_view();
  struct Storage {
    std::string_view name;
    Cmd cmd;
  };
  static constexpr Storage kStorage[] = {{"set", Cmd::kSet},         {"add", Cmd::kAdd},
                                         {"replace", Cmd::kReplace}, {"append", Cmd::kAppend},
                                         {"prepend", Cmd::kPrepend}, {"cas", Cmd::kCas}};
  for (const Storage& s : kStorage) {
    if (command == s.name) return ParseTextStorage(tokens, s.cmd, line_bytes, now, request);
  }
  ConsumeInput(line_bytes);
  auto error = [&](std::string_view reply) {
    ++counters_->protocol_errors;
    Reply(reply);
    return Parsed::kDone;
  };
  // memcached's set_noreply_maybe: the last token, whatever its position.
  auto take_noreply = [&] { noreply_ = n >= 2 && tokens[n - 1] == "noreply"; };

  if (IsGetCommand(command)) {
    bool gat = command[1] == 'a';
    size_t first_key = gat ? 2 : 1;
    if (n <= first_key) return error("ERROR");
    int64_t exptime = 0;
    if (gat && !ParseI64(tokens[1], &exptime)) return error(kBadExptime);
    for (size_t i = first_key; i < n; ++i) {
      if (!ValidKey(tokens[i])) return error(kBadFormat);
    }
    keys_.assign(tokens.begin() + first_key, tokens.end());
    next_key_ = 0;
    multi_get_ = true;
    gat_expiry_ = ExpiryFromExptime(exptime, now);
    cmd_ = command == "get" ? Cmd::kGet : command == "gets" ? Cmd::kGets : command == "gat" ? Cmd::kGat : Cmd::kGats;
    return Parsed::kDone;
  }
  if (command == "delete") {
    if (n < 2 || n > 4) return error("ERROR");
    if (n > 2) {
      take_noreply();
      bool ok = (n == 3 && (tokens[2] == "0" || noreply_)) || (n == 4 && tokens[2] == "0" && noreply_);
      if (!ok) return error("CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
    }
    if (!ValidKey(tokens[1])) return error(kBadFormat);
    *request = Request{};
    request->op = Request::Op::kDelete;
    request->key = tokens[1];
    cmd_ = Cmd::kDelete;
    return Parsed::kRequest;
  }
  if (command == "incr" || command == "decr") {
    if (n < 3 || n > 4) return error("ERROR");
    take_noreply();
    if (!ValidKey(tokens[1])) return error(kBadFormat);
    uint64_t delta;
    if (!ParseU64(tokens[2], &delta)) return error("CLIENT_ERROR invalid numeric delta argument");
    *request = Request{};
    request->op = Request::Op::kArithmetic;
    request->key = tokens[1];
    request->increment = command == "incr";
    request->delta = delta;
    cmd_ = request->increment ? Cmd::kIncr : Cmd::kDecr;
    return Parsed::kRequest;
  }
  if (command == "touch") {
    if (n < 3 || n > 4) return error("ERROR");
    take_noreply();
    if (!ValidKey(tokens[1])) return error(kBadFormat);
    int64_t exptime;
    if (!ParseI64(tokens[2], &exptime)) return error(kBadExptime);
    *request = Request{};
    request->op = Request::Op::kTouch;
    request->key = tokens[1];
    request->expiry = ExpiryFromExptime(exptime, now);
    cmd_ = Cmd::kTouch;
    return Parsed::kRequest;
  }
  if (command == "flush_all") {
    if (n > 3) return error("ERROR");
    take_noreply();
    int64_t delay = 0;
    if (n != (noreply_ ? 2u : 1u) && !ParseI64(tokens[1], &delay)) return error(kBadExptime);
    *request = Request{};
    request->op = Request::Op::kFlush;
    request->flush_when = delay <= 0 ? now : std::max(now, ExpiryFromExptime(delay, now));
    cmd_ = Cmd::kFlush;
    return Parsed::kRequest;
  }
  if (command == "stats") {
    if (n == 1) {
      *request = Request{};
      request->op = Request::Op::kStats;
      cmd_ = Cmd::kStats;
      return Parsed::kRequest;
    }
    if (tokens[1] == "reset") {
      ResetCounters();
      Reply("RESET");
      return Parsed::kDone;
    }
    // The groups memcached has and fox does not keep: empty.
    if (tokens[1] == "settings" || tokens[1] == "items" || tokens[1] == "slabs" || tokens[1] == "sizes" ||
        tokens[1] == "conns") {
      Reply("END");
      return Parsed::kDone;
    }
    return error("ERROR");
  }
  if (command == "version") {
    Reply(std::string("VERSION ") + kVersionString);
    return Parsed::kDone;
  }
  if (command == "verbosity") {
    if (n < 2 || n > 3) return error("ERROR");
    take_noreply();
    uint32_t level;
    if (!ParseU32(tokens[1], &level)) return error(kBadFormat);
    Reply("OK");
    return Parsed::kDone;
  }
  if (command == "quit") {
    Close();
    return Parsed::kDone;
  }
  return error("ERROR");
}

Session::Parsed Session::ParseLongGetLine(Time now) {
  // The first kMaxTextLineBytes bytes hold no "\n". Only a get command may
  // go on: take its name (and a gat's exptime), then its keys as they come.
  std::string_view head(reinterpret_cast<const char*>(InputData()), kMaxTextLineBytes);
  size_t start = head.find_first_not_of(' ');
  size_t end = start == std::string_view::npos ? start : head.find(' ', start);
  std::string_view command = end == std::string_view::npos ? std::string_view() : head.substr(start, end - start);
  noreply_ = false;
  if (!IsGetCommand(command)) {
    Reply("CLIENT_ERROR line too long");
    ++counters_->protocol_errors;
    Close();
    return Parsed::kDone;
  }
  int64_t exptime = 0;
  if (command[1] == 'a') {
    start = head.find_first_not_of(' ', end);
    end = start == std::string_view::npos ? start : head.find(' ', start);
    if (end == std::string_view::npos || !ParseI64(head.substr(start, end - start), &exptime)) {
      Reply(kBadExptime);
      ++counters_->protocol_errors;
      ConsumeInput(end == std::string_view::npos ? head.size() : end);
      discard_line_ = true;
      return Parsed::kDone;
    }
  }
  cmd_ = command == "get" ? Cmd::kGet : command == "gets" ? Cmd::kGets : command == "gat" ? Cmd::kGat : Cmd::kGats;
  gat_expiry_ = ExpiryFromExptime(exptime, now);
  keys_.clear();
  next_key_ = 0;
  line_open_ = true;
  ConsumeInput(end);
  return ParseGetKeys();
}

Session::Parsed Session::ParseGetKeys() {
  std::string_view data(reinterpret_cast<const char*>(InputData()), Available());
  size_t newline = data.find('\n');
  bool last = newline != std::string_view::npos;
  // The complete keys end at the line's end, or at the last space so far.
  size_t complete = last ? newline : data.rfind(' ');
  size_t consumed = complete == std::string_view::npos ? 0 : complete + 1;
  std::string_view keys = data.substr(0, consumed == 0 ? 0 : complete);
  if (last && !keys.empty() && keys.back() == '\r') keys.remove_suffix(1);
  std::vector<std::string_view> tokens = Tokenize(keys);
  // A key still arriving is already too long ("\r" may follow the last).
  bool pending_too_long = !last && data.size() - consumed > kMaxKeyBytes + 1;
  bool bad = pending_too_long;
  for (std::string_view key : tokens) bad |= !ValidKey(key);
  if (bad) {
    noreply_ = false;
    Reply(kBadFormat);
    ++counters_->protocol_errors;
    line_open_ = false;
    discard_line_ = !last;
    ConsumeInput(last ? consumed : data.size());
    return Parsed::kDone;
  }
  if (consumed == 0) {
    need_ = data.size() + 1;
    return Parsed::kNeedMore;
  }
  keys_.assign(tokens.begin(), tokens.end());
  next_key_ = 0;
  multi_get_ = true;
  line_open_ = !last;
  ConsumeInput(consumed);
  return Parsed::kDone;
}

Session::Parsed Session::DiscardLine() {
  std::string_view data(reinterpret_cast<const char*>(InputData()), Available());
  size_t newline = data.find('\n');
  if (newline == std::string_view::npos) {
    ConsumeInput(data.size());
    return Parsed::kNeedMore;
  }
  discard_line_ = false;
  ConsumeInput(newline + 1);
  return Parsed::kDone;
}

Session::Parsed Session::ParseTextStorage(const std::vector<std::string_view>& tokens, Cmd cmd, size_t line_bytes,
                                          Time now, Request* request) {
  size_t required = cmd == Cmd::kCas ? 6 : 5;
  size_t n = tokens.size();
  auto error = [&](std::string_view reply, uint64_t skip) {
    ConsumeInput(line_bytes);
    swallow_ = skip;
    ++counters_->protocol_errors;
    Reply(reply);
    return Parsed::kDone;
  };
  if (n < required || n > required + 1) return error("ERROR", 0);
  // As memcached: noreply is the last token; a token in its place that is
  // not noreply is ignored.
  noreply_ = tokens[n - 1] == "noreply";
  uint32_t flags;
  int64_t exptime, bytes;
  uint64_t cas = 0;
  if (!ParseI64(tokens[4], &bytes) || bytes < 0 || bytes > kMaxDataBytes) return error(kBadFormat, 0);
  uint64_t block = static_cast<uint64_t>(bytes) + 2;
  if (!ParseU32(tokens[2], &flags) || !ParseI64(tokens[3], &exptime) ||
      (cmd == Cmd::kCas && !ParseU64(tokens[5], &cas)) || !ValidKey(tokens[1])) {
    return error(kBadFormat, block);
  }
  if (static_cast<uint64_t>(bytes) > options_.max_value_bytes) {
    error(kTooLarge, block);
    if (cmd != Cmd::kSet) return Parsed::kDone;
    // As memcached: a set that fails leaves no stale value behind.
    *request = Request{};
    request->op = Request::Op::kDelete;
    request->key = tokens[1];
    cmd_ = Cmd::kUnlinkTooLarge;
    return Parsed::kRequest;
  }
  size_t total = line_bytes + block;
  if (Available() < total) {
    need_ = total;
    return Parsed::kNeedMore;
  }
  const char* data = reinterpret_cast<const char*>(InputData()) + line_bytes;
  if (data[bytes] != '\r' || data[bytes + 1] != '\n') {
    ConsumeInput(total);
    ++counters_->protocol_errors;
    Reply("CLIENT_ERROR bad data chunk");
    return Parsed::kDone;
  }
  *request = Request{};
  request->op = Request::Op::kPut;
  request->key = tokens[1];
  request->value.assign(data, static_cast<size_t>(bytes));
  request->flags = flags;
  request->expiry = ExpiryFromExptime(exptime, now);
  switch (cmd) {
    case Cmd::kAdd: request->mode = StoreMode::kAdd; break;
    case Cmd::kReplace: request->mode = StoreMode::kReplace; break;
    case Cmd::kAppend: request->mode = StoreMode::kAppend; break;
    case Cmd::kPrepend: request->mode = StoreMode::kPrepend; break;
    default: request->mode = StoreMode::kSet; break;
  }
  request->check_cas = cmd == Cmd::kCas;
  request->cas = cas;
  cmd_ = cmd;
  ++counters_->cmd_set;
  ConsumeInput(total);
  return Parsed::kRequest;
}

Session::Parsed Session::NextMultiGet(Time now, Request* request) {
  if (next_key_ == keys_.size()) {
    multi_get_ = false;
    keys_.clear();
    if (line_open_) return Parsed::kDone;  // more keys are on their way
    Reply("END");
    return Parsed::kDone;
  }
  *request = Request{};
  bool gat = cmd_ == Cmd::kGat || cmd_ == Cmd::kGats;
  request->op = gat ? Request::Op::kTouch : Request::Op::kGet;
  request->key = keys_[next_key_];
  request->expiry = gat_expiry_;
  request->want_item = true;
  return Parsed::kRequest;
}

void Session::CompleteText(const Result& result) {
  Counters& c = *counters_;
  bool ok = result.status == Status::kOk;
  switch (cmd_) {
    case Cmd::kGet:
    case Cmd::kGets:
    case Cmd::kGat:
    case Cmd::kGats: {
      const std::string& key = keys_[next_key_++];
      ++c.cmd_get;
      if (cmd_ == Cmd::kGat || cmd_ == Cmd::kGats) {
        ++c.cmd_touch;
        ++(ok ? c.touch_hits : c.touch_misses);
      }
      if (result.status == Status::kUnavailable) {
        out_.append(kUnavailable).append("\r\n");  // even a get's: a miss would be a lie
        return;
      }
      ++(ok ? c.get_hits : c.get_misses);
      if (!ok) return;
      const Item& item = result.item;
      out_.append("VALUE ").append(key).append(" ").append(std::to_string(item.flags));
      out_.append(" ").append(std::to_string(item.value.size()));
      if (cmd_ == Cmd::kGets || cmd_ == Cmd::kGats) out_.append(" ").append(std::to_string(item.cas));
      out_.append("\r\n").append(item.value).append("\r\n");
      return;
    }
    case Cmd::kSet:
    case Cmd::kAdd:
    case Cmd::kReplace:
    case Cmd::kAppend:
    case Cmd::kPrepend:
    case Cmd::kCas:
      if (cmd_ == Cmd::kCas) {
        ++(ok ? c.cas_hits : result.status == Status::kExists ? c.cas_badval : c.cas_misses);
      }
      switch (result.status) {
        case Status::kOk: Reply("STORED"); return;
        case Status::kExists: Reply("EXISTS"); return;
        case Status::kNotFound: Reply("NOT_FOUND"); return;
        case Status::kTooLarge: Reply(kTooLarge); return;
        case Status::kNoMemory: Reply("SERVER_ERROR out of memory storing object"); return;
        case Status::kUnavailable: Reply(kUnavailable); return;
        default: Reply("NOT_STORED"); return;
      }
    case Cmd::kDelete:
      if (result.status == Status::kUnavailable) return Reply(kUnavailable);
      ++(ok ? c.delete_hits : c.delete_misses);
      Reply(ok ? "DELETED" : result.status == Status::kExists ? "EXISTS" : "NOT_FOUND");
      return;
    case Cmd::kIncr:
    case Cmd::kDecr:
      if (cmd_ == Cmd::kIncr) {
        ++(ok ? c.incr_hits : c.incr_misses);
      } else {
        ++(ok ? c.decr_hits : c.decr_misses);
      }
      switch (result.status) {
        case Status::kOk: Reply(std::to_string(result.number)); return;
        case Status::kNonNumeric: Reply("CLIENT_ERROR cannot increment or decrement non-numeric value"); return;
        case Status::kTooLarge: Reply(kTooLarge); return;  // only with a value limit under 20 bytes
        case Status::kNoMemory: Reply("SERVER_ERROR out of memory"); return;
        case Status::kExists: Reply("EXISTS"); return;
        case Status::kUnavailable: Reply(kUnavailable); return;
        default: Reply("NOT_FOUND"); return;
      }
    case Cmd::kTouch:
      if (result.status == Status::kUnavailable) return Reply(kUnavailable);
      ++c.cmd_touch;
      ++(ok ? c.touch_hits : c.touch_misses);
      Reply(ok ? "TOUCHED" : "NOT_FOUND");
      return;
    case Cmd::kFlush:
      ++c.cmd_flush;
      Reply("OK");
      return;
    case Cmd::kStats:
      AppendStats(last_now_, result.stats, false);
      out_.append("END\r\n");
      return;
    case Cmd::kUnlinkTooLarge:
    case Cmd::kBinary: return;
  }
}

}  // namespace fox::memcached
