// Messages of the exceptions in fox/ebb/errors.h.
#include "fox/ebb/errors.h"

namespace fox::ebb {

DeadEbbError::DeadEbbError(EbbId id)
    : EbbError(id, id == kNullId ? std::string("fox::ebb: null EbbRef dereferenced")
                                 : "fox::ebb: no live Ebb " + std::to_string(Raw(id)) +
                                       " on this node (destroyed, or never created here)") {}

EbbExistsError::EbbExistsError(EbbId id)
    : EbbError(id, "fox::ebb: Ebb " + std::to_string(Raw(id)) + " exists or existed (ids are never reused)") {}

EbbTypeError::EbbTypeError(EbbId id)
    : EbbError(id, "fox::ebb: Ebb " + std::to_string(Raw(id)) +
                       " was created as another type or flavour (static id collision?)") {}

IdExhaustedError::IdExhaustedError()
    : EbbError(kNullId, "fox::ebb: no dynamic Ebb ids left from the id range source") {}

}  // namespace fox::ebb
