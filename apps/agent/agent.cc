// The pool agent: what an idle node of a `fox cluster up` pool runs between
// jobs (DESIGN.md "Frontend and jobs"). It brings the network up, starts
// the AM transport with the cluster's key and node id (fox.key, fox.node,
// fox.peers=0@<frontend>), says it is idle, and waits. Its heartbeats to the
// frontend (node 0) are frames authenticated with the cluster key: the
// frontend's switch counts a node as joined when it has seen one, and
// refuses (and logs, with the node's address) a node whose frames fail the
// key. A job does not run here: the supervisor boots the node into the job.
//
//   boot args: fox.node=I fox.ip=... fox.key=K fox.job=J fox.peers=0@IP
#include <cstdio>

#include "fox/future.h"
#include "fox/net/am.h"
#ifdef FOX_NATIVE
#include "fox/net/ip.h"
#endif

int main(int, char**) {
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
#ifdef FOX_NATIVE
  auto net_config = fox::net::ConfigFromBootArgs();
  if (!net_config.ok()) return 2;
  auto info = fox::net::Start(*net_config).Block();
  if (info.status != fox::net::Status::kOk) {
    std::printf("agent: node %u: network: %s\n", config->self, fox::net::StatusName(info.status));
    return 1;
  }
  std::string where = info.address.ToString();
#else
  std::string where = "a Linux process";
#endif
  if (auto r = fox::am::Start(*config); !r.ok()) {
    std::printf("agent: node %u: cannot start the transport: %s\n", config->self, fox::ErrorName(r.error()));
    return 1;
  }
  std::printf("agent: node %u idle at %s, waiting for a job\n", config->self, where.c_str());
  std::fflush(stdout);
  fox::Promise<int> never;  // the supervisor stops or reboots this node
  return never.GetFuture().Block();
}
