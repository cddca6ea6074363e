// FileSystem: read-only access to the files of the job's place 0 (the FOX
// report's FileSystem Ebb), a shared system Ebb at kFileSystemId. Nodes have
// no files: a node's representative forwards each read to the server's
// (node 0 by default, the frontend's Linux process in `fox run`: SetServer),
// which reads its own file system; only the server's representative reads
// locally, so a path means the same file to every place, hosted or not
// (relative paths from the server's working directory).
//
//   auto fs = FileSystem::Get();
//   Result<uint64_t> size = fs->Size("points.csv").Block();
//   Result<FileSystem::Bytes> bytes = fs->Read("points.csv", offset, length).Block();
//
// Only regular files, only reads. Errors: kNotFound (no such file),
// kPeerDead (the server is dead), kInvalidArgument (empty or over-long path, not a regular
// file, not readable), kUnsupported (the server is a node: it has no files),
// kTimedOut (no answer in kTimeoutMs), kCorrupt (a malformed reply).
// Event context (the futures' Block suspends the calling event). The
// transport must be started for reads from other nodes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/future.h"
#include "fox/net/ids.h"
#include "fox/result.h"

namespace fox::ebb {

class FileSystem : public SharedEbb<FileSystem> {
 public:
  static EbbRef<FileSystem> Get() { return EbbRef<FileSystem>(kFileSystemId); }
  using Bytes = std::vector<uint8_t>;
  // A read returns at most this many bytes (a reader loops for more).
  static constexpr uint64_t kMaxRead = uint64_t(1) << 20;
  static constexpr size_t kMaxPath = 1024;
  static constexpr uint64_t kTimeoutMs = 30'000;

  // Serves the server's reads on the constructing core. Construct it (the
  // first Get() dereference) before am::Start on the server.
  FileSystem();
  ~FileSystem();
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  // The node that has the files (default 0). Set it before the first read.
  void SetServer(NodeId node) { server_ = node; }
  NodeId server() const { return server_; }

  // The size of file `path` in bytes.
  Future<Result<uint64_t>> Size(std::string_view path);
  // Up to min(length, kMaxRead) bytes of `path` from `offset`: fewer only
  // at the end of the file (none past it).
  Future<Result<Bytes>> Read(std::string_view path, uint64_t offset, uint64_t length);

  // What this node served to others, and refused.
  struct Stats {
    uint64_t reads = 0, bytes = 0, refused = 0;
  };
  Stats stats() const { return stats_; }

  // The server's side, on this node's own file system (hosted builds; a
  // node answers kUnsupported). Any context that may block on a system call.
  static Result<uint64_t> LocalSize(std::string_view path);
  static Result<Bytes> LocalRead(std::string_view path, uint64_t offset, uint64_t length);

 private:
  void Serve(NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  bool Local() const;

  NodeId server_ = 0;
  Stats stats_;  // touched by the listener's events only
};

// Reads the whole of `path` from `offset` up to `length` bytes (several
// Reads): fewer only at the end of the file. Blocks the calling event.
Result<FileSystem::Bytes> ReadFile(std::string_view path, uint64_t offset, uint64_t length);

}  // namespace fox::ebb
