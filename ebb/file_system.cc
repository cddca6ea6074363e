// FileSystem over Rpc (file_system.h).
//
// Requests, to the Ebb kFileSystemId on the server (Rpc requests, so each
// body follows the request id):
//   kSize: path bytes                          reply: u64 size
//   kRead: u64 offset, u32 length, path bytes   reply: the bytes read
// A failed request is answered with its error (Rpc::Fail).
#include "fox/ebb/file_system.h"

#include <algorithm>
#include <cstring>

#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/log.h"
#include "fox/net/wire.h"

#ifndef FOX_NATIVE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace fox::ebb {
namespace {
enum : uint16_t { kSize = 1, kRead = 2 };
using net::wire::Load32;
using net::wire::Load64;
using net::wire::Store32;
using net::wire::Store64;

bool BadPath(std::string_view path) {
  return path.empty() || path.size() > FileSystem::kMaxPath || path.find('\0') != std::string_view::npos;
}

#ifndef FOX_NATIVE
// An open regular file, closed on scope exit.
class File {
 public:
  explicit File(std::string_view path) {
    std::string p(path);
    fd_ = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = errno == ENOENT || errno == ENOTDIR ? Error::kNotFound : Error::kInvalidArgument;
      return;
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      error_ = Error::kInvalidArgument;
      return;
    }
    size_ = uint64_t(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  Error error() const { return error_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  Error error_ = Error::kOk;
  uint64_t size_ = 0;
};
#endif
}  // namespace

FileSystem::FileSystem() {
  (void)Rpc::Get()->pending();  // constructs the Rpc Ebb here: replies need it
  auto serve = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    Serve(from, handler, data, length);
  };
  if (auto r = Messenger::Get()->Listen(kFileSystemId, serve); !r.ok()) {
    LOG_ERROR("FileSystem: cannot receive messages: %s", ErrorName(r.error()));
  }
}

FileSystem::~FileSystem() { Messenger::Get()->StopListening(kFileSystemId); }

bool FileSystem::Local() const { return server_ == Messenger::Get()->Self(); }

Result<uint64_t> FileSystem::LocalSize(std::string_view path) {
  if (BadPath(path)) return Error::kInvalidArgument;
#ifndef FOX_NATIVE
  File f(path);
  if (f.error() != Error::kOk) return f.error();
  return f.size();
#else
  return Error::kUnsupported;
#endif
}

Result<FileSystem::Bytes> FileSystem::LocalRead(std::string_view path, uint64_t offset, uint64_t length) {
  if (BadPath(path)) return Error::kInvalidArgument;
#ifndef FOX_NATIVE
  File f(path);
  if (f.error() != Error::kOk) return f.error();
  if (offset >= f.size()) return Bytes{};
  Bytes out(std::min({length, kMaxRead, f.size() - offset}));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(f.fd(), out.data() + done, out.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::kInvalidArgument;
    if (n == 0) break;  // the file shrank
    done += size_t(n);
  }
  out.resize(done);
  return out;
#else
  (void)offset;
  (void)length;
  return Error::kUnsupported;
#endif
}

Future<Result<uint64_t>> FileSystem::Size(std::string_view path) {
  if (Local() || BadPath(path)) return MakeReadyFuture(LocalSize(path));
  return Rpc::Get()->Call(server_, kFileSystemId, kSize, path.data(), path.size(), kTimeoutMs).Then([](auto f) {
    Result<Rpc::Bytes> r = f.Get();
    if (!r.ok()) return Result<uint64_t>(r.error());
    if (r->size() != 8) return Result<uint64_t>(Error::kCorrupt);
    return Result<uint64_t>(Load64(r->data()));
  });
}

Future<Result<FileSystem::Bytes>> FileSystem::Read(std::string_view path, uint64_t offset, uint64_t length) {
  if (Local() || BadPath(path)) return MakeReadyFuture(LocalRead(path, offset, length));
  length = std::min(length, kMaxRead);
  Bytes body(12 + path.size());
  Store64(body.data(), offset);
  Store32(body.data() + 8, uint32_t(length));
  std::memcpy(body.data() + 12, path.data(), path.size());
  return Rpc::Get()->Call(server_, kFileSystemId, kRead, body.data(), body.size(), kTimeoutMs).Then([length](auto f) {
    Result<Rpc::Bytes> r = f.Get();
    if (!r.ok()) return Result<Bytes>(r.error());
    if (r->size() > length) return Result<Bytes>(Error::kCorrupt);
    return Result<Bytes>(std::move(*r));
  });
}

namespace {
// The answer to one request's body.
Result<FileSystem::Bytes> Answer(HandlerId handler, const uint8_t* body, size_t len) {
  if (handler == kSize) {
    Result<uint64_t> size = FileSystem::LocalSize({reinterpret_cast<const char*>(body), len});
    if (!size.ok()) return size.error();
    FileSystem::Bytes reply(8);
    Store64(reply.data(), *size);
    return reply;
  }
  if (handler == kRead && len > 12) {
    return FileSystem::LocalRead({reinterpret_cast<const char*>(body + 12), len - 12}, Load64(body), Load32(body + 8));
  }
  return Error::kInvalidArgument;  // unknown handler or malformed body
}
}  // namespace

// A request, as an event of the listener's core.
void FileSystem::Serve(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  auto request = Rpc::ParseRequest(data, length);
  if (!request) return;  // no request id: nothing to answer
  Result<Bytes> reply = Answer(handler, request->body, request->length);
  if (!reply.ok()) {
    ++stats_.refused;
    (void)Rpc::Fail(from, request->id, reply.error());
    return;
  }
  ++stats_.reads;
  stats_.bytes += reply->size();
  (void)Rpc::Reply(from, request->id, reply->data(), reply->size());
}

Result<FileSystem::Bytes> ReadFile(std::string_view path, uint64_t offset, uint64_t length) {
  FileSystem::Bytes out;
  while (out.size() < length) {
    Result<FileSystem::Bytes> part = FileSystem::Get()->Read(path, offset + out.size(), length - out.size()).Block();
    if (!part.ok()) return part.error();
    if (part->empty()) break;
    out.insert(out.end(), part->begin(), part->end());
  }
  return out;
}

}  // namespace fox::ebb
