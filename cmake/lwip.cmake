# lwIP for compute-node images (NATIVE build only): the OBJECT library
# `fox_lwip` = lwIP 2.1.3's C sources (IPv4, raw/UDP/TCP, DHCP, ICMP,
# Ethernet/ARP) + fox's port and C++ API (net/lwip, net/include/fox/net/ip.h).
#
# No third-party source is committed: the sources are unpacked at BUILD time
# (not configure time, so configuring needs no network) from Debian's `lwip`
# source package by boot/fetch_lwip.sh into ${FOX_LWIP_DIR}. The fetch is a
# custom command whose outputs are the lwIP sources, so the first build runs
# it and later builds do not (the script is also idempotent by itself).
# It needs apt with a deb-src entry (the script adds one) and dpkg-source
# (Debian package dpkg-dev, installed by `make deps`).
#
# Usage (cmake/native.cmake): include(cmake/lwip.cmake), then link images
# with $<TARGET_OBJECTS:fox_lwip> and give their objects fox_lwip's usage
# requirements (target_link_libraries(X_objs PRIVATE fox_lwip)) for
# net/include.
set(FOX_LWIP_DIR "${CMAKE_BINARY_DIR}/third_party/lwip" CACHE PATH
    "where boot/fetch_lwip.sh unpacks lwIP 2.1.3 (Debian's source package)")

set(FOX_LWIP_C_SOURCES)
foreach(f
    core/init.c core/def.c core/inet_chksum.c core/ip.c core/mem.c core/memp.c core/netif.c
    core/pbuf.c core/raw.c core/stats.c core/sys.c core/tcp.c core/tcp_in.c core/tcp_out.c
    core/timeouts.c core/udp.c
    core/ipv4/dhcp.c core/ipv4/etharp.c core/ipv4/icmp.c core/ipv4/ip4.c core/ipv4/ip4_addr.c
    core/ipv4/ip4_frag.c
    netif/ethernet.c)
  list(APPEND FOX_LWIP_C_SOURCES "${FOX_LWIP_DIR}/src/${f}")
endforeach()

add_custom_command(
  OUTPUT ${FOX_LWIP_C_SOURCES} "${FOX_LWIP_DIR}/.fox-lwip-version"
  COMMAND "${CMAKE_SOURCE_DIR}/boot/fetch_lwip.sh" "${FOX_LWIP_DIR}"
  DEPENDS "${CMAKE_SOURCE_DIR}/boot/fetch_lwip.sh"
  COMMENT "Fetching lwIP 2.1.3 (Debian source package) into ${FOX_LWIP_DIR}"
  VERBATIM)

add_library(fox_lwip OBJECT
  ${FOX_LWIP_C_SOURCES}
  net/lwip/address.cc
  net/lwip/config.cc
  net/lwip/netif.cc
  net/lwip/packet.cc
  net/lwip/ping.cc
  net/lwip/stack.cc
  net/lwip/sys_arch.cc
  net/lwip/tcp.cc
  net/lwip/udp.cc)
target_include_directories(fox_lwip
  PUBLIC net/include
  PRIVATE net/lwip/port "${FOX_LWIP_DIR}/src/include" net/lwip
          kernel)  # net/lwip/netif.cc posts through the loop's queue (common/event/loop.h)
target_link_libraries(fox_lwip PRIVATE fox_kernel)

# lwIP's own code is not ours to clean up: its warnings stay visible but are
# not errors (2.1.3 currently compiles warning-free with the project's
# flags; a newer compiler must not break the build over it). The port
# (net/lwip/*.cc) keeps the project's full warning set, -Werror included.
set_source_files_properties(${FOX_LWIP_C_SOURCES} PROPERTIES COMPILE_OPTIONS "-Wno-error")
