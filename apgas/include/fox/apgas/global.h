// Naming data across places (X10's GlobalRef and PlaceLocalHandle).
//
//   GlobalRef<T> r(&counter);            // at its home place
//   at(r.home(), [](GlobalRef<T> r) { r()->Add(1); }, r);
//
//   auto cache = PlaceLocal<Cache>::Make(places(), [] { return Cache(64); });
//   finish([&] { for (Place p : places()) asyncAt(p, [](PlaceLocal<Cache> c) { c()->Warm(); }, cache); });
//
// Both are small trivially copyable values, so they travel in closures.
// Event context, inside an activity.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"

namespace fox::apgas {

// A pointer that names its place: dereferenced only there.
template <class T>
class GlobalRef {
 public:
  GlobalRef() = default;
  explicit GlobalRef(T* object) : home_(here()), object_(object) {}
  Place home() const { return home_; }
  // The object, at its home; std::logic_error elsewhere.
  T* operator()() const {
    if (here() != home_) {
      throw std::logic_error("GlobalRef dereferenced at place " + std::to_string(here().id) + ", its home is place " +
                             std::to_string(home_.id));
    }
    return object_;
  }

 private:
  Place home_;
  T* object_ = nullptr;
};

namespace detail {
uint64_t NewPlaceLocalId();
void SetPlaceLocal(uint64_t id, std::shared_ptr<void> object);
std::shared_ptr<void> GetPlaceLocal(uint64_t id);
void DropPlaceLocal(uint64_t id);
// DropPlaceLocal(id) at every place of `group`. Not in PlaceLocal<T>: a
// lambda in a template whose arguments do not name its parameters is
// spelled alike for every instantiation, and two closures of one name are
// refused (serialization.h). A template of its own all the same, so that
// only the programs that use it register its closure (a closure in the
// platform's sources would be a static initialiser in every image).
template <class = void>
void DropPlaceLocalAt(const std::vector<Place>& group, uint64_t id) {
  finish([&] {
    for (Place p : group) {
      asyncAt(
          p, [](uint64_t id) { DropPlaceLocal(id); }, id);
    }
  });
}
}  // namespace detail

// One T per place of a group, named by one handle valid at all of them.
template <class T>
class PlaceLocal {
 public:
  PlaceLocal() = default;
  // Makes `init()` at every place of `group` (init is copied there: it must
  // be sendable), and returns when all exist. MultipleExceptions if an init
  // threw or a place died.
  template <class Init>
  static PlaceLocal Make(const std::vector<Place>& group, const Init& init) {
    PlaceLocal handle;
    handle.id_ = detail::NewPlaceLocalId();
    finish([&] {
      for (Place p : group) {
        asyncAt(
            p, [](uint64_t id, Init make) { detail::SetPlaceLocal(id, std::make_shared<T>(make())); }, handle.id_,
            init);
      }
    });
    return handle;
  }
  // This place's T; std::logic_error if this place has none.
  T* operator()() const {
    auto object = detail::GetPlaceLocal(id_);
    if (object == nullptr) {
      throw std::logic_error("PlaceLocal has no object at place " + std::to_string(here().id));
    }
    return static_cast<T*>(object.get());  // kept alive by the registry until Destroy
  }
  // This place's T, or nullptr if it has none (a place that joined later).
  T* find() const { return static_cast<T*>(detail::GetPlaceLocal(id_).get()); }
  // Makes `object` this place's T (replacing any); returns it.
  T* set(std::shared_ptr<T> object) const {
    T* raw = object.get();
    detail::SetPlaceLocal(id_, std::move(object));
    return raw;
  }
  // A handle with a fresh id and no objects yet (set them place by place).
  static PlaceLocal Fresh() {
    PlaceLocal handle;
    handle.id_ = detail::NewPlaceLocalId();
    return handle;
  }
  // Frees the objects at every place of `group`.
  void Destroy(const std::vector<Place>& group) const { detail::DropPlaceLocalAt(group, id_); }
  uint64_t id() const { return id_; }

 private:
  uint64_t id_ = 0;
};

}  // namespace fox::apgas
