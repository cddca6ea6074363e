/* lwIP configuration for fox compute nodes (net/lwip/README.md).
 *
 * NO_SYS=1: lwIP runs without threads, entirely in events of kernel core 0's
 * event loop (the NIC interrupt only copies frames into a ring). Nothing
 * here may run at interrupt level or on another core, so lwIP needs no
 * locking (SYS_LIGHTWEIGHT_PROT=0). Only the raw (callback) API is built;
 * fox's C++ API (fox/net/ip.h) is on top of it. Memory is lwIP's own
 * static heap and pools: no calls into the kernel allocator from lwIP. */
#ifndef FOX_LWIPOPTS_H
#define FOX_LWIPOPTS_H

/* ---- execution model ---- */
#define NO_SYS 1
#define SYS_LIGHTWEIGHT_PROT 0
#define LWIP_NETCONN 0
#define LWIP_SOCKET 0
#define LWIP_TIMERS 1

/* ---- protocols ---- */
#define LWIP_IPV4 1
#define LWIP_IPV6 0
#define LWIP_ARP 1
#define LWIP_ETHERNET 1
#define LWIP_ICMP 1
#define LWIP_RAW 1
#define LWIP_UDP 1
#define LWIP_TCP 1
#define LWIP_DHCP 1
/* The ARP probe of an offered address costs seconds at boot; the DHCP
 * server (QEMU's, or dnsmasq on the frontend) owns the addresses. */
#define DHCP_DOES_ARP_CHECK 0
#define LWIP_DNS 0
#define LWIP_IGMP 0
#define LWIP_AUTOIP 0
#define IP_REASSEMBLY 1
#define IP_FRAG 1
#define ETHARP_SUPPORT_STATIC_ENTRIES 1
/* Frames to this node's own address go through the netif's loop queue,
 * drained by an event (net/lwip/stack.cc). */
#define LWIP_NETIF_LOOPBACK 1
#define LWIP_LOOPBACK_MAX_PBUFS 128
#define LWIP_HAVE_LOOPIF 0
#define LWIP_NETIF_STATUS_CALLBACK 1
#define LWIP_NETIF_LINK_CALLBACK 0
#define LWIP_NETIF_HOSTNAME 0
#define LWIP_SINGLE_NETIF 0
#define SO_REUSE 1
#define LWIP_TCP_KEEPALIVE 1

/* ---- memory: lwIP's heap and pools, static ---- */
#define MEM_ALIGNMENT 8
/* The pools and the heap lie outside the BSS the kernel zeroes at boot
 * (arch/cc.h, kernel/x86_64/linker.ld): lwIP zeroes its pools when it starts
 * (memp_init), so a node that never starts the network never writes them. */
#define MEMP_MEM_INIT 1
#define MEM_SIZE (1024 * 1024)
#define MEMP_NUM_PBUF 256
#define MEMP_NUM_RAW_PCB 8
#define MEMP_NUM_UDP_PCB 32
#define MEMP_NUM_TCP_PCB 128
#define MEMP_NUM_TCP_PCB_LISTEN 16
#define MEMP_NUM_REASSDATA 8
#define IP_REASS_MAX_PBUFS 64
#define MEMP_NUM_FRAG_PBUF 32
#define MEMP_NUM_ARP_QUEUE 64
#define PBUF_POOL_SIZE 512
/* A pool pbuf holds a whole Ethernet frame (1514 bytes) in one piece. */
#define PBUF_POOL_BUFSIZE 1536

/* ---- TCP ---- */
#define TCP_MSS 1460
#define TCP_WND (32 * TCP_MSS)
#define LWIP_WND_SCALE 1
#define TCP_RCV_SCALE 2
#define TCP_SND_BUF (32 * TCP_MSS)
#define TCP_SND_QUEUELEN (4 * TCP_SND_BUF / TCP_MSS)
#define MEMP_NUM_TCP_SEG (2 * TCP_SND_QUEUELEN)
#define TCP_OVERSIZE TCP_MSS
#define TCP_LISTEN_BACKLOG 1
#define TCP_DEFAULT_LISTEN_BACKLOG 64
#define LWIP_TCP_TIMESTAMPS 0

/* ---- checksums: virtio-net offers no offload we negotiate ---- */
#define LWIP_CHKSUM_ALGORITHM 3

/* ---- observability (STYLE.md §12): lwIP's counters, read by net::GetStats ---- */
#define LWIP_STATS 1
#define LWIP_STATS_DISPLAY 0
#define LINK_STATS 1
#define ETHARP_STATS 1
#define IP_STATS 1
#define IPFRAG_STATS 1
#define ICMP_STATS 1
#define UDP_STATS 1
#define TCP_STATS 1
#define MEM_STATS 1
#define MEMP_STATS 1
#define SYS_STATS 0
#define LWIP_STATS_LARGE 1 /* 32-bit counters: lwIP's 16-bit ones wrap */
#define MIB2_STATS 1       /* for tcpretranssegs */

/* ---- debugging: lwIP's debug output is compiled in only when LWIP_DEBUG
 * is defined (to anything); then e.g. `#define TCP_DEBUG LWIP_DBG_ON`. It
 * goes to the fox log through LWIP_PLATFORM_DIAG. ---- */

#endif /* FOX_LWIPOPTS_H */
