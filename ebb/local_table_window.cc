// The platform hook of fox/ebb/local_table.h on a kernel with a per-core
// window (fox/core_window.h; the native kernel): the table sits at the
// window's fixed address, and binding a core's table maps its pages there.
// Until its first miss a core's window reads as zeros, which is what
// EmptyTable() holds, so a core needs no start-up call before running Ebb
// code. Leave local_table_hosted.cc out.
#include "fox/core_window.h"
#include "fox/ebb/local_table.h"

#if !defined(FOX_EBB_TABLE_ADDRESS)
#error "local_table_window.cc is the fixed-address hook: define FOX_EBB_TABLE_ADDRESS"
#endif

namespace fox::ebb {

static_assert(FOX_EBB_TABLE_ADDRESS == core::kWindowAddress, "the Ebb table lives in the per-core window");
static_assert(sizeof(LocalTable) <= core::kWindowBytes && sizeof(LocalTable) % 4096 == 0);

void SetThisCoreTable(LocalTable* table) { core::MapWindow(table, sizeof(LocalTable), table != EmptyTable()); }

LocalTable* ThisCoreBacking() { return const_cast<LocalTable*>(static_cast<const LocalTable*>(core::WindowPages())); }

}  // namespace fox::ebb
