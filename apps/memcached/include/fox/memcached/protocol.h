// The memcached wire formats, shared by the session's two parsers: limits,
// the binary protocol's 24-byte header, opcodes and status codes, and the
// text protocol's token rules. Pure logic (see store.h).
//
// Binary header (all fields big-endian), request magic 0x80, response 0x81:
//   offset 0  magic        1
//          1  opcode       1
//          2  key length   2
//          4  extras len   1
//          5  data type    1   (0: raw bytes; anything else is refused)
//          6  vbucket      2   (request; ignored) / status (response)
//          8  total body   4   (extras + key + value)
//         12  opaque       4   (echoed)
//         16  cas          8
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fox::memcached {

constexpr size_t kMaxKeyBytes = 250;
constexpr size_t kMaxTextLineBytes = 2048;  // a text command line, "\r\n" included
constexpr size_t kDefaultMaxValueBytes = 1 << 20;
constexpr const char* kVersionString = "1.6.0-fox";

constexpr uint8_t kRequestMagic = 0x80;
constexpr uint8_t kResponseMagic = 0x81;
constexpr size_t kHeaderBytes = 24;
// A request of an opcode other than the storage ones (whose value may be
// large) with a longer body is refused and the connection closed.
constexpr uint32_t kMaxSmallBody = 1024;

enum class Opcode : uint8_t {
  kGet = 0x00,
  kSet = 0x01,
  kAdd = 0x02,
  kReplace = 0x03,
  kDelete = 0x04,
  kIncrement = 0x05,
  kDecrement = 0x06,
  kQuit = 0x07,
  kFlush = 0x08,
  kGetQ = 0x09,
  kNoop = 0x0a,
  kVersion = 0x0b,
  kGetK = 0x0c,
  kGetKQ = 0x0d,
  kAppend = 0x0e,
  kPrepend = 0x0f,
  kStat = 0x10,
  kSetQ = 0x11,
  kAddQ = 0x12,
  kReplaceQ = 0x13,
  kDeleteQ = 0x14,
  kIncrementQ = 0x15,
  kDecrementQ = 0x16,
  kQuitQ = 0x17,
  kFlushQ = 0x18,
  kAppendQ = 0x19,
  kPrependQ = 0x1a,
  kVerbosity = 0x1b,
  kTouch = 0x1c,
  kGat = 0x1d,
  kGatQ = 0x1e,
  kGatK = 0x23,
  kGatKQ = 0x24,
};

enum class BinaryStatus : uint16_t {
  kSuccess = 0x00,
  kKeyNotFound = 0x01,
  kKeyExists = 0x02,
  kTooLarge = 0x03,
  kInvalidArguments = 0x04,
  kNotStored = 0x05,
  kNonNumeric = 0x06,
  kUnknownCommand = 0x81,
  kOutOfMemory = 0x82,
  kTemporaryFailure = 0x86,
};
// The message memcached puts in the body of an error response.
const char* BinaryStatusMessage(BinaryStatus status);

struct BinaryHeader {
  uint8_t magic = 0;
  uint8_t opcode = 0;
  uint16_t key_length = 0;
  uint8_t extras_length = 0;
  uint8_t data_type = 0;
  uint16_t vbucket_or_status = 0;
  uint32_t body_length = 0;
  uint32_t opaque = 0;
  uint64_t cas = 0;
};
// `bytes` holds at least kHeaderBytes.
BinaryHeader DecodeHeader(const uint8_t* bytes);
// Appends a response header to `out`.
void AppendResponseHeader(std::string& out, uint8_t opcode, BinaryStatus status, uint16_t key_length,
                          uint8_t extras_length, uint32_t body_length, uint32_t opaque, uint64_t cas);

uint16_t Load16(const uint8_t* p);
uint32_t Load32(const uint8_t* p);
uint64_t Load64(const uint8_t* p);
void Append32(std::string& out, uint32_t v);
void Append64(std::string& out, uint64_t v);

// A key both protocols accept: 1..250 bytes, no control character or space
// (bytes <= 0x20 and 0x7f).
bool ValidKey(std::string_view key);

// Strict decimal parsers for text tokens (no sign for unsigned, no spaces).
bool ParseU32(std::string_view s, uint32_t* out);
bool ParseU64(std::string_view s, uint64_t* out);
bool ParseI64(std::string_view s, int64_t* out);

}  // namespace fox::memcached
