#include "fox/memcached/protocol.h"

#include <charconv>

namespace fox::memcached {

namespace {

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  T v;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  *out = v;
  return true;
}

}  // namespace

const char* BinaryStatusMessage(BinaryStatus status) {
  switch (status) {
    case BinaryStatus::kSuccess: return "";
    case BinaryStatus::kKeyNotFound: return "Not found";
    case BinaryStatus::kKeyExists: return "Data exists for key.";
    case BinaryStatus::kTooLarge: return "Too large.";
    case BinaryStatus::kInvalidArguments: return "Invalid arguments";
    case BinaryStatus::kNotStored: return "Not stored.";
    case BinaryStatus::kNonNumeric: return "Non-numeric server-side value for incr or decr";
    case BinaryStatus::kUnknownCommand: return "Unknown command";
    case BinaryStatus::kOutOfMemory: return "Out of memory";
    case BinaryStatus::kTemporaryFailure: return "Temporary failure";
  }
  return "";
}

uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t Load32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }
uint64_t Load64(const uint8_t* p) { return uint64_t{Load32(p)} << 32 | Load32(p + 4); }

void Append32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}
void Append64(std::string& out, uint64_t v) {
  Append32(out, static_cast<uint32_t>(v >> 32));
  Append32(out, static_cast<uint32_t>(v));
}

BinaryHeader DecodeHeader(const uint8_t* b) {
  BinaryHeader h;
  h.magic = b[0];
  h.opcode = b[1];
  h.key_length = Load16(b + 2);
  h.extras_length = b[4];
  h.data_type = b[5];
  h.vbucket_or_status = Load16(b + 6);
  h.body_length = Load32(b + 8);
  h.opaque = Load32(b + 12);
  h.cas = Load64(b + 16);
  return h;
}

void AppendResponseHeader(std::string& out, uint8_t opcode, BinaryStatus status, uint16_t key_length,
                          uint8_t extras_length, uint32_t body_length, uint32_t opaque, uint64_t cas) {
  out.push_back(static_cast<char>(kResponseMagic));
  out.push_back(static_cast<char>(opcode));
  out.push_back(static_cast<char>(key_length >> 8));
  out.push_back(static_cast<char>(key_length));
  out.push_back(static_cast<char>(extras_length));
  out.push_back(0);  // data type: raw bytes
  auto s = static_cast<uint16_t>(status);
  out.push_back(static_cast<char>(s >> 8));
  out.push_back(static_cast<char>(s));
  Append32(out, body_length);
  Append32(out, opaque);
  Append64(out, cas);
}

bool ValidKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) return false;
  for (char c : key) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
  }
  return true;
}

bool ParseU32(std::string_view s, uint32_t* out) { return ParseNumber(s, out); }
bool ParseU64(std::string_view s, uint64_t* out) { return ParseNumber(s, out); }
bool ParseI64(std::string_view s, int64_t* out) { return ParseNumber(s, out); }

}  // namespace fox::memcached
