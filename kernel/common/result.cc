#include "fox/result.h"

namespace fox {

const char* ErrorName(Error e) {
  switch (e) {
    case Error::kOk: return "ok";
    case Error::kNoMemory: return "out of memory";
    case Error::kInvalidArgument: return "invalid argument";
    case Error::kNotFound: return "not found";
    case Error::kOutOfRange: return "out of range";
    case Error::kAlreadyExists: return "already exists";
    case Error::kUnsupported: return "unsupported";
    case Error::kBusy: return "busy";
    case Error::kCorrupt: return "corrupt";
    case Error::kTimedOut: return "timed out";
    case Error::kPeerDead: return "peer dead";
  }
  return "unknown error";
}

}  // namespace fox
