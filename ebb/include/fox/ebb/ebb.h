// The Ebb object model in one include: ids, EbbRef, the flavours, lifetime,
// id allocation and counters. See ebb/README.md.
#pragma once

#include "fox/ebb/ebb_id.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/errors.h"
#include "fox/ebb/id_allocator.h"
#include "fox/ebb/lifetime.h"
#include "fox/ebb/multicore_ebb.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/ebb/stats.h"
