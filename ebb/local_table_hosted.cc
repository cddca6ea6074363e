// The platform hook of fox/ebb/local_table.h as a thread_local: each hosted
// "core" is a thread. Also correct natively, where the FS base (TLS) is per
// core; a kernel that prefers a GS-relative word defines
// FOX_EBB_TABLE_GS_OFFSET instead and leaves this file out.
#include "fox/ebb/lifetime.h"
#include "fox/ebb/local_table.h"

#if defined(FOX_EBB_TABLE_GS_OFFSET)
#error "local_table_hosted.cc is the thread_local hook; leave it out with FOX_EBB_TABLE_GS_OFFSET"
#endif

namespace fox::ebb {

constinit thread_local LocalTable* tls_core_table FOX_EBB_TLS_MODEL = &g_empty_table;

namespace {
// A thread that used representatives and exits stops holding up the
// reclamation of destroyed Ebbs (lifetime.h), as if it had called
// EnterQuiescence.
struct LeaveOnThreadExit {
  ~LeaveOnThreadExit() {
    if (tls_core_table != &g_empty_table) EnterQuiescence();
  }
};
thread_local LeaveOnThreadExit t_leave_on_exit;
}  // namespace

void SetThisCoreTable(LocalTable* table) {
  tls_core_table = table;
  [[maybe_unused]] LeaveOnThreadExit* registered = &t_leave_on_exit;  // registers the destructor
}

}  // namespace fox::ebb
