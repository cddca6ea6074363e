// Objects read by other cores while their owner replaces them: freed once
// no read that may have found them is still running (lifetime.h,
// SharedRead and RetireLater). Epoch-based reclamation with a critical
// section per read.
//
// A global epoch counts sealed batches. A reader publishes, for the span of
// its read, the epoch it saw at its start (0 outside reads). The owner
// unpublishes an object, then retires it into its core's open batch;
// sealing a batch bumps the epoch to E and tags the batch with it. The
// batch is freed once no core shows a read epoch below E: a read that began
// after the bump saw the object unpublished.
//
// Ordering. A reader stores its epoch with seq_cst and only then loads the
// published pointers; the owner unpublishes, bumps (a seq_cst
// read-modify-write) and fences before scanning. So either the scan sees
// the read in progress, or the read sees the object unpublished.
//
// Freeing. What a freed batch held is freed a few objects at a time: one
// at each retire, a few at each quiescent point (more of a backlog that
// reads held back), the rest before the core sleeps. An owner that
// replaces objects as fast as it allocates them (a Dht shard's items) then
// frees as often as it allocates, which a per-thread allocator cache
// absorbs. Freed 64 at a time, the frees overflowed glibc's cache (7
// chunks per size) and its mallocs then took the arena lock the other
// core's frees held: hosted, 2 cores writing each other's shards, 1.18 M
// sets/s with futex waits 16% of the time (glibc.malloc.tcache_count=1000:
// 3.09 M); one per retire and 64 per quiescent point 1.20 M; one and 8:
// 2.09 M; one and 2 or 4: 2.33-2.39 M.
#include <algorithm>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/lifetime.h"
#include "internal.h"

namespace fox::ebb {
namespace detail {
namespace {

struct Garbage {
  void* object;
  void (*free)(void*);
};
struct Batch {
  uint64_t epoch;
  std::vector<Garbage> objects;
};
// Per core. `reading` and `depth` are its reads' (any core scans
// `reading`); the lists are its own thread's, so they take no lock.
struct alignas(64) CoreRetire {
  std::atomic<uint64_t> reading{0};  // the epoch its outermost read began in; 0: not reading
  int depth = 0;
  std::vector<Garbage> open;   // retired since the last seal
  std::vector<Batch> sealed;   // oldest first
  std::vector<Garbage> ready;  // of freed batches, still to free: from ready_at on
  size_t ready_at = 0;
  uint32_t points = 0;  // quiescent points since the first open object
  // Retired and not freed yet (ObjectsAwaitingReclaim sums them): written
  // by its own thread only, no shared counter on the retire path.
  std::atomic<uint64_t> pending{0};
};
// Sealing bumps the shared epoch, so it is done per batch: when kSealAt
// objects are open, or kSealEvery quiescent points after the first was.
constexpr size_t kSealAt = 64;
constexpr uint32_t kSealEvery = 16;
// Objects of freed batches freed at each retire, and at each quiescent
// point at least (and an eighth of what waits: a backlog that reads held
// back goes in a few dozen points).
constexpr size_t kFreeAtRetire = 1;
constexpr size_t kFreeAtPoint = 4;

constinit std::atomic<uint64_t> g_epoch{1};
constinit std::atomic<int> g_readers{0};  // one more than the highest core that ever read
constinit CoreRetire g_retire[core::kMaxCores];

void Seal(CoreRetire& cr) {
  if (cr.open.empty()) return;
  uint64_t epoch = g_epoch.fetch_add(1, std::memory_order_seq_cst) + 1;
  cr.sealed.push_back(Batch{epoch, std::move(cr.open)});
  cr.open = {};
  cr.points = 0;
}

// Frees up to `most` objects of the core's freed batches.
void FreeReady(CoreRetire& cr, size_t most) {
  for (; most > 0 && cr.ready_at < cr.ready.size(); --most) {
    Garbage g = cr.ready[cr.ready_at++];  // a copy: a free function may retire more (and free some)
    g.free(g.object);
    cr.pending.store(cr.pending.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
  if (cr.ready_at == cr.ready.size()) {
    cr.ready.clear();
    cr.ready_at = 0;
  }
}

// Hands the core's sealed batches that no read can be using any more to
// FreeReady.
void FreeSealed(CoreRetire& cr) {
  if (cr.sealed.empty()) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t safe = UINT64_MAX;
  int readers = g_readers.load(std::memory_order_acquire);
  for (int i = 0; i < readers; ++i) {
    uint64_t e = g_retire[i].reading.load(std::memory_order_acquire);
    if (e != 0 && e < safe) safe = e;
  }
  size_t done = 0;  // a batch of epoch E is free once every read in progress began at E or later
  while (done < cr.sealed.size() && cr.sealed[done].epoch <= safe) ++done;
  if (done == 0) return;
  for (size_t i = 0; i < done; ++i) {
    cr.ready.insert(cr.ready.end(), cr.sealed[i].objects.begin(), cr.sealed[i].objects.end());
  }
  cr.sealed.erase(cr.sealed.begin(), cr.sealed.begin() + long(done));
}

}  // namespace

void RetiredAtQuiescentPoint(int core) {
  CoreRetire& cr = g_retire[core];
  if (!cr.open.empty() && ++cr.points >= kSealEvery) Seal(cr);
  if (!cr.sealed.empty()) FreeSealed(cr);
  if (!cr.ready.empty()) FreeReady(cr, std::max(kFreeAtPoint, (cr.ready.size() - cr.ready_at) / 8));
}

void RetiredBeforeSleep() {
  CoreRetire& cr = g_retire[ThisCoreIndex()];
  Seal(cr);
  FreeSealed(cr);
  FreeReady(cr, SIZE_MAX);
}

}  // namespace detail

using namespace detail;

SharedRead::SharedRead() {
  int index = ThisCoreIndex();
  CoreRetire& cr = g_retire[index];
  if (cr.depth++ != 0) return;
  for (int seen = g_readers.load(std::memory_order_relaxed); seen <= index;) {
    if (g_readers.compare_exchange_weak(seen, index + 1, std::memory_order_seq_cst)) break;
  }
  cr.reading.store(g_epoch.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

SharedRead::~SharedRead() {
  CoreRetire& cr = g_retire[ThisCoreIndex()];
  if (--cr.depth == 0) cr.reading.store(0, std::memory_order_release);
}

void RetireLater(void* object, void (*free)(void*)) {
  CoreRetire& cr = g_retire[ThisCoreIndex()];
  cr.open.push_back(Garbage{object, free});
  BumpOwn(cr.pending);
  if (cr.open.size() >= kSealAt) {
    Seal(cr);
    FreeSealed(cr);
  }
  if (!cr.ready.empty()) FreeReady(cr, kFreeAtRetire);
}

uint64_t ObjectsAwaitingReclaim() {
  uint64_t pending = 0;
  for (const CoreRetire& cr : g_retire) pending += cr.pending.load(std::memory_order_relaxed);
  return pending;
}

}  // namespace fox::ebb
