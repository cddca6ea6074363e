// Destroying Ebbs, and the quiescent points that make it safe.
//
// Destroy(id) unpublishes the Ebb at once: it is marked dead, removed from
// the registry and cleared from every core's table, so from the moment
// Destroy returns any dereference of the id on any core misses and throws
// DeadEbbError. Its representatives and root are freed later, once every core
// that uses representatives has passed a quiescent point (quiescent-state-based
// reclamation, as EbbRT does with its event loop). So a core that is in the
// middle of a call on a representative when another core destroys the Ebb
// finishes that call safely; the rule for users is:
//
//   A representative or root pointer is valid until the calling core's next
//   quiescent point. Never keep one across events; keep the EbbRef.
//
// An event that blocks (event::Block) ends, as far as this rule goes: the
// loop may pass a quiescent point while it is suspended. So a rep method that
// blocks must not be running when its Ebb is destroyed; an Ebb whose methods
// block drains them (counts calls in flight) before it destroys itself, as
// with any object that has a blocked call inside it.
//
// The event loop calls QuiescentPoint() between events; a core that stops
// running Ebb code for a while (halting when idle, a hosted thread that
// exits) calls EnterQuiescence() so that it does not hold up reclamation,
// and ExitQuiescence() before it uses representatives again. A core is
// quiescent until its first miss, so cores that never touch Ebbs cost
// nothing. Destructors of representatives (first) and roots (then) run on
// whichever core reclaims them, in thread context.
#pragma once

#include "fox/ebb/ebb_id.h"
#include "fox/ebb/ebb_ref.h"

namespace fox::ebb {

// Destroys the live Ebb `id` as described above. Thread context, any core,
// including from a method of the Ebb itself; takes the registry and entry
// locks, allocates (outside them); does not block, except to wait for a
// concurrent first construction of the same Ebb to finish. Throws
// DeadEbbError when no live Ebb has this id.
void Destroy(EbbId id);
template <class T>
void Destroy(EbbRef<T> ref) {
  Destroy(ref.id());
}

// Objects that other cores read without a lock while one core replaces
// them (a table whose owning core writes and whose readers are anywhere:
// DhtTable) are freed by epochs too, but a reader protects only the span of
// its read, not its whole event (an event may run for seconds):
//
//   { SharedRead reading;  // no blocking inside
//     ... load the published pointer, use what it points to ... }
//
// RetireLater(object, free) is called by the owner after it unpublished
// `object`: free(object) runs once every SharedRead that began before the
// call has ended. The owner itself must not use `object` after retiring it.
// Objects are freed on the retiring core, once their batch is safe, a few
// at a time: at its later RetireLater calls and quiescent points, and the
// rest before it sleeps (what reads still in progress then hold back stays
// until it runs again, as with a hosted thread that exits). SharedRead: any
// thread context, nests, two stores and a fence, no lock. RetireLater:
// thread context, the core's own thread; allocates; does not block.
class SharedRead {
 public:
  SharedRead();
  ~SharedRead();
  SharedRead(const SharedRead&) = delete;
  SharedRead& operator=(const SharedRead&) = delete;
};
void RetireLater(void* object, void (*free)(void*));
// Objects given to RetireLater and not freed yet, on every core.
uint64_t ObjectsAwaitingReclaim();

// The calling core holds no representative or root pointer obtained before
// this call. Frees what every core has stopped using. Thread context; takes no
// lock unless objects are waiting to be freed; may run their destructors.
void QuiescentPoint();

// The calling core holds no representative pointers and uses none until
// ExitQuiescence (an extended quiescent state). Safe in any context: one
// atomic store.
void EnterQuiescence();

// Ends EnterQuiescence; a no-op for a core that is not in it, or has never
// missed. Safe in any context (an interrupt handler that uses reps on a core
// that may be idle in EnterQuiescence calls it first): a store and a fence.
void ExitQuiescence();

}  // namespace fox::ebb
