// The Dht's protocol codecs (protocol.h).
#include "protocol.h"

#include <algorithm>

#include "fox/net/wire.h"

namespace fox::ebb::dht {

uint64_t Tag(const DhtRing& ring) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (NodeId n : ring.nodes()) {
    for (int i = 0; i < 4; ++i) h = (h ^ ((n >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  }
  return h == kSwitched ? h - 1 : h;
}

std::vector<uint8_t> TagBytes(uint64_t tag) {
  std::vector<uint8_t> b(8);
  net::wire::StoreLe<uint64_t>(b.data(), tag);
  return b;
}

std::vector<uint8_t> ReplicateBody(const std::string& key, const DhtEntry& entry, uint64_t epoch) {
  std::vector<uint8_t> state = dht_wire::EncodeReplicate(key, entry, clock::NowNs());
  std::vector<uint8_t> body(8 + state.size());
  net::wire::StoreLe<uint64_t>(body.data(), epoch);
  std::copy(state.begin(), state.end(), body.begin() + 8);
  return body;
}

std::vector<uint8_t> EncodeRing(const DhtRing& ring) {
  std::vector<uint8_t> b = TagBytes(ring.epoch());
  b.resize(12 + 4 * ring.nodes().size());
  net::wire::StoreLe<uint32_t>(b.data() + 8, uint32_t(ring.nodes().size()));
  for (size_t i = 0; i < ring.nodes().size(); ++i) net::wire::StoreLe<uint32_t>(b.data() + 12 + 4 * i, ring.nodes()[i]);
  return b;
}

bool DecodeRing(const uint8_t* data, size_t length, uint64_t* epoch, std::vector<NodeId>* nodes) {
  if (length < 12) return false;
  uint32_t count = net::wire::Load32(data + 8);
  if (count > 4096 || length != 12 + 4 * size_t(count)) return false;
  *epoch = net::wire::Load64(data);
  nodes->resize(count);
  for (uint32_t i = 0; i < count; ++i) (*nodes)[i] = net::wire::Load32(data + 12 + 4 * i);
  return true;
}

std::vector<uint8_t> ReplyBytes(Error status, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> reply(4 + payload.size());
  net::wire::StoreLe<uint32_t>(reply.data(), uint32_t(status));
  std::copy(payload.begin(), payload.end(), reply.begin() + 4);
  return reply;
}

void Answer(NodeId to, uint64_t id, Error status, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> reply = ReplyBytes(status, payload);
  (void)Rpc::Reply(to, id, reply.data(), reply.size());  // kNotFound: the client died; nobody waits
}

Error StatusOf(const Result<Rpc::Bytes>& r) {
  if (!r.ok()) return r.error();
  const Rpc::Bytes& bytes = r.value();
  return bytes.size() >= 4 ? Error(net::wire::Load32(bytes.data())) : Error::kCorrupt;
}

}  // namespace fox::ebb::dht
