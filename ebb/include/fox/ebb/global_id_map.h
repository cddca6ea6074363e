// GlobalIdMap: the job's directory of Ebb ids (EbbRT's GlobalIdMap), a
// shared system Ebb at kGlobalIdMapId. One node serves it (the frontend, or
// node 0 by default: SetServer); every node reaches it through the
// Messenger. It hands out job-wide dynamic id ranges (from
// kFirstGlobalDynamicId up, never twice) and keeps a small value per id
// (what a distributed Ebb publishes so that other nodes can find its root).
//
//   auto map = GlobalIdMap::Get();
//   SetIdRangeSource(map->RangeSource());   // AllocateId() is job-wide now
//   map->Set(id, bytes).Block();  map->Lookup(id).Block();
//
// Requests are answered as futures (through Rpc); they fail with kPeerDead
// if the server is (or becomes) dead, kTimedOut after Rpc's default
// timeout. Event context. The transport must be started.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/id_allocator.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/future.h"
#include "fox/net/am.h"

namespace fox::ebb {

class GlobalIdMap : public SharedEbb<GlobalIdMap> {
 public:
  static EbbRef<GlobalIdMap> Get() { return EbbRef<GlobalIdMap>(kGlobalIdMapId); }
  // Values are at most this long (one message).
  static constexpr size_t kMaxValue = 1024;

  GlobalIdMap();
  ~GlobalIdMap();

  // The node that serves the map (default 0). Set it before the first request.
  void SetServer(NodeId node) { server_ = node; }
  NodeId server() const { return server_; }

  // `count` ids nobody in the job got before. kOutOfRange when exhausted.
  Future<Result<IdRange>> AcquireRange(uint32_t count);
  // Stores `value` (<= kMaxValue bytes) for `id`, replacing any earlier one.
  Future<Result<void>> Set(EbbId id, std::string value);
  // The value stored for `id`; kNotFound if none.
  Future<Result<std::string>> Lookup(EbbId id);

  // An IdRangeSource over AcquireRange (blocks the calling event).
  IdRangeSource* RangeSource();

  // Served here: ranges handed out, values held.
  uint64_t ranges_served() const { return ranges_served_; }

 private:
  class Source;
  void Serve(NodeId from, HandlerId handler, const uint8_t* data, size_t length);

  NodeId server_ = 0;
  std::unique_ptr<Source> source_;
  // Server state (touched only by the listener's core).
  uint64_t next_id_ = Raw(kFirstGlobalDynamicId);
  std::map<EbbId, std::string> values_;
  uint64_t ranges_served_ = 0;
};

}  // namespace fox::ebb
