// In-VM tests of the lwIP port (net/lwip) against QEMU's restricted user
// network (--net user: gateway 10.0.2.2 answers ARP and ICMP, serves DHCP
// with 10.0.2.15; nothing beyond it is reachable). Native images only.
#pragma once

namespace vmtest {

// DHCP obtains 10.0.2.15/24 and the gateway 10.0.2.2.
int NetDhcp(int argc, char** argv);
// Pings the gateway (raw ICMP) and this node itself (lwIP answers), and
// times out on an address nobody has.
int NetPing(int argc, char** argv);
// `-- net_static [A.B.C.D/NN GW]`: a static address from the arguments, or
// from fox.ip=/fox.gw= boot arguments when none are given; pings the gateway.
int NetStatic(int argc, char** argv);
// TCP inside lwIP: an echo server on core 0, a client on core 1 connecting
// to the node's own address; data echoed and verified; refused connect.
int NetTcpLoopback(int argc, char** argv);
// Send backpressure: a reader that does not read stalls the sender's
// futures; once it reads, all complete and the data is intact. An abort
// reaches the peer as a reset.
int NetTcpBackpressure(int argc, char** argv);
int NetTcpHomes(int argc, char** argv);
// UDP echo to the node's own address, the client on another core.
int NetUdpLoopback(int argc, char** argv);

}  // namespace vmtest
