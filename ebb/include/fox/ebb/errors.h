// Exceptions ebb/ throws to its users (DESIGN.md: ebb/ and apgas/ throw where
// X10 throws). Every one is an EbbError and carries the id concerned.
#pragma once

#include <stdexcept>
#include <string>

#include "fox/ebb/ebb_id.h"

namespace fox::ebb {

class EbbError : public std::runtime_error {
 public:
  EbbError(EbbId id, const std::string& what) : std::runtime_error(what), id_(id) {}
  EbbId id() const { return id_; }

 private:
  EbbId id_;
};

// No live Ebb has this id on this node: it was destroyed, never created here,
// or the EbbRef is null. Thrown by EbbRef dereference (on the miss path, so the
// dereference touched no freed memory), Destroy and the flavours' lookups.
class DeadEbbError : public EbbError {
 public:
  explicit DeadEbbError(EbbId id);
};

// Create at an id that is live, being created, or (for a static id) was
// destroyed: ids are never reused.
class EbbExistsError : public EbbError {
 public:
  explicit EbbExistsError(EbbId id);
};

// An EbbRef<T> reached an Ebb created as another type or flavour (for
// example two static names that hash to the same id).
class EbbTypeError : public EbbError {
 public:
  explicit EbbTypeError(EbbId id);
};

// The id allocator's source has no more ids (or returned a malformed range).
class IdExhaustedError : public EbbError {
 public:
  IdExhaustedError();
};

}  // namespace fox::ebb
