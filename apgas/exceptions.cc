// The APGAS exceptions (apgas.h).
#include <cstdio>

#include "fox/apgas/apgas.h"

namespace fox::apgas {
namespace {
std::string DeadMessage(Place p) { return "place " + std::to_string(p.id) + " is dead"; }
}  // namespace

DeadPlaceException::DeadPlaceException(Place place) : std::runtime_error(DeadMessage(place)), place_(place) {}

RemoteException::RemoteException(Place place, std::string type, const std::string& what)
    : std::runtime_error(what), place_(place), type_(std::move(type)) {}

MultipleExceptions::MultipleExceptions(std::vector<std::exception_ptr> exceptions)
    : exceptions_(std::move(exceptions)) {
  what_ = std::to_string(exceptions_.size()) + " exception" + (exceptions_.size() == 1 ? "" : "s");
  for (size_t i = 0; i < exceptions_.size() && i < 3; ++i) {
    try {
      std::rethrow_exception(exceptions_[i]);
    } catch (const RemoteException& e) {
      what_ += (i == 0 ? ": " : "; ") + e.type() + " at place " + std::to_string(e.place().id) + ": " + e.what();
    } catch (const std::exception& e) {
      what_ += (i == 0 ? ": " : "; ") + std::string(e.what());
    } catch (...) {
      what_ += (i == 0 ? ": " : "; ") + std::string("(not a std::exception)");
    }
  }
  if (exceptions_.size() > 3) what_ += "; ...";
}

size_t MultipleExceptions::DeadPlaces() const {
  size_t n = 0;
  for (const auto& e : exceptions_) {
    try {
      std::rethrow_exception(e);
    } catch (const DeadPlaceException&) {
      ++n;
    } catch (...) {
    }
  }
  return n;
}

bool MultipleExceptions::HasDeadPlace(Place place) const {
  for (const auto& e : exceptions_) {
    try {
      std::rethrow_exception(e);
    } catch (const DeadPlaceException& d) {
      if (d.place() == place) return true;
    } catch (...) {
    }
  }
  return false;
}

long PlaceGroup::indexOf(Place p) const {
  for (size_t i = 0; i < places_.size(); ++i) {
    if (places_[i] == p) return long(i);
  }
  return -1;
}

}  // namespace fox::apgas
