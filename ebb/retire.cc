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
  std::vector<Garbage> open;  // retired since the last seal
  std::vector<Batch> sealed;  // oldest first
  uint32_t points = 0;        // quiescent points since the first open object
};
// Sealing bumps the shared epoch, so it is done per batch: when kSealAt
// objects are open, or kSealEvery quiescent points after the first was.
constexpr size_t kSealAt = 64;
constexpr uint32_t kSealEvery = 16;

constinit std::atomic<uint64_t> g_epoch{1};
constinit std::atomic<int> g_readers{0};  // one more than the highest core that ever read
constinit CoreRetire g_retire[core::kMaxCores];
constinit std::atomic<uint64_t> g_pending{0};

void Seal(CoreRetire& cr) {
  if (cr.open.empty()) return;
  uint64_t epoch = g_epoch.fetch_add(1, std::memory_order_seq_cst) + 1;
  cr.sealed.push_back(Batch{epoch, std::move(cr.open)});
  cr.open = {};
  cr.points = 0;
}

// Frees the core's sealed batches that no read can be using any more.
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
  // Out of the list before any is freed: a free function may retire more.
  std::vector<Batch> freed(std::make_move_iterator(cr.sealed.begin()),
                           std::make_move_iterator(cr.sealed.begin() + done));
  cr.sealed.erase(cr.sealed.begin(), cr.sealed.begin() + done);
  for (Batch& b : freed) {
    for (const Garbage& g : b.objects) g.free(g.object);
    g_pending.fetch_sub(b.objects.size(), std::memory_order_relaxed);
  }
}

}  // namespace

void RetiredAtQuiescentPoint(int core) {
  CoreRetire& cr = g_retire[core];
  if (!cr.open.empty() && ++cr.points >= kSealEvery) Seal(cr);
  if (!cr.sealed.empty()) FreeSealed(cr);
}

void RetiredBeforeSleep() {
  CoreRetire& cr = g_retire[ThisCoreIndex()];
  Seal(cr);
  FreeSealed(cr);
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
  g_pending.fetch_add(1, std::memory_order_relaxed);
  if (cr.open.size() >= kSealAt) {
    Seal(cr);
    FreeSealed(cr);
  }
}

uint64_t ObjectsAwaitingReclaim() { return g_pending.load(std::memory_order_relaxed); }

}  // namespace fox::ebb
