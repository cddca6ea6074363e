// The iterative apps' input files (`input=FILE`): text read through the
// FileSystem Ebb (fox/ebb/file_system.h), so that a node reads the file of
// place 0's machine, in splits that places read apart: split b of n holds
// the lines that start in bytes [size * b / n, size * (b + 1) / n) (Hadoop's
// rule), whole, so that every line is in exactly one split whatever n.
// Lines are numbers separated by commas, spaces or tabs; empty lines and
// lines starting with '#' are comments (SNAP's edge lists start so).
//
// Reading blocks the calling activity; errors are thrown as
// std::runtime_error naming the file and the byte offset of the bad line.
#pragma once

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fox/ebb/file_system.h"

namespace fox::apps {

[[noreturn]] inline void InputError(const std::string& path, uint64_t offset, const std::string& what) {
  throw std::runtime_error(path + ": byte " + std::to_string(offset) + ": " + what);
}

// Why `path` cannot be read, from the FileSystem's error.
inline std::string CannotRead(const std::string& path, Error e) {
  const char* why = e == Error::kNotFound          ? "no such file"
                    : e == Error::kPeerDead        ? "place 0, the file server, is gone"
                    : e == Error::kInvalidArgument ? "not a readable regular file"
                    : e == Error::kUnsupported     ? "the file server has no files"
                                                   : ErrorName(e);
  return "cannot read " + path + ": " + why;
}

inline std::string ReadBytes(const std::string& path, uint64_t offset, uint64_t length) {
  Result<ebb::FileSystem::Bytes> r = ebb::ReadFile(path, offset, length);
  if (!r.ok()) throw std::runtime_error(CannotRead(path, r.error()));
  return std::string(r->begin(), r->end());
}

inline uint64_t FileSize(const std::string& path) {
  Result<uint64_t> r = ebb::FileSystem::Get()->Size(path).Block();
  if (!r.ok()) throw std::runtime_error(CannotRead(path, r.error()));
  return *r;
}

// Split b of n of `size` bytes read by read(offset, length) (fewer bytes
// only at the end): its whole lines (the last one's '\n' kept when there is
// one), and the offset of its first byte. The n splits, in order, are the
// bytes, each once.
struct Split {
  uint64_t offset = 0;
  std::string text;
};
template <class Read>
Split SplitOf(uint64_t size, uint64_t b, uint64_t n, Read read) {
  constexpr uint64_t kStep = uint64_t(1) << 16;
  uint64_t lo = size * b / n, hi = size * (b + 1) / n;
  if (lo == hi) return Split{lo, ""};
  uint64_t from = lo == 0 ? 0 : lo - 1;  // the byte before: is lo a line's start?
  std::string text = read(from, hi - from);
  if (text.empty()) return Split{hi, ""};  // the file shrank
  size_t start = 0;
  if (lo != 0) {
    size_t nl = text.find('\n');
    if (nl == std::string::npos || nl + 1 == text.size()) return Split{hi, ""};  // no line starts in [lo, hi)
    start = nl + 1;
  }
  // The last line goes on to its '\n' (or the end of the file).
  for (uint64_t at = hi; text.back() != '\n' && at < size; at += kStep) {
    std::string more = read(at, kStep);
    if (more.empty()) break;
    size_t nl = more.find('\n');
    text += nl == std::string::npos ? more : more.substr(0, nl + 1);
    if (nl != std::string::npos) break;
  }
  return Split{from + start, text.substr(start)};
}
// Split b of n of the `size` bytes of file `path`.
inline Split ReadSplit(const std::string& path, uint64_t size, uint64_t b, uint64_t n) {
  return SplitOf(size, b, n, [&](uint64_t offset, uint64_t length) { return ReadBytes(path, offset, length); });
}

// Calls fn(offset, fields) for each data line of `text` (its first byte at
// `offset` of the file): fields the line's numbers as text.
template <class Fn>
void ForEachLine(std::string_view text, uint64_t offset, Fn fn) {
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fields.clear();
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ',')) ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != ',') ++j;
      if (j > i) fields.push_back(line.substr(i, j - i));
      i = j;
    }
    if (!fields.empty() && fields[0][0] != '#') fn(offset + at, fields);
    at = end + 1;
  }
}

// fn(offset, fields) for each data line of the whole file `path` (`size`
// bytes), read here a MiB at a time while more() holds (asked before each).
template <class Fn, class More>
void ForEachFileLine(const std::string& path, uint64_t size, Fn fn, More more) {
  uint64_t pieces = size / (uint64_t(1) << 20) + 1;
  for (uint64_t i = 0; i < pieces && more(); ++i) {
    Split split = ReadSplit(path, size, i, pieces);
    ForEachLine(split.text, split.offset, fn);
  }
}

// A field as a finite double, or as an unsigned integer below `limit`.
inline double ParseReal(const std::string& path, uint64_t offset, std::string_view field) {
  std::string s(field);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || v != v || v - v != 0) {
    InputError(path, offset, "'" + s + "' is not a finite number");
  }
  return v;
}
inline uint64_t ParseIndex(const std::string& path, uint64_t offset, std::string_view field, uint64_t limit) {
  std::string s(field);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s[0] == '-' || end != s.c_str() + s.size() || errno == ERANGE || v >= limit) {
    InputError(path, offset, "'" + s + "' is not an integer in [0, " + std::to_string(limit) + ")");
  }
  return v;
}

}  // namespace fox::apps
