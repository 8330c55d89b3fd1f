// The receive path's tail: what happens to a packet a driver (or pktgen's netif_receive
// mode, or a tc ingress redirect) hands to the stack.
//
// netif_receive_skb(cpu, p) may be called by any number of threads at once, each with its
// own bound Cpu. p->dev must be set. It takes ownership of p.
#pragma once

#include "core/cpu.h"
#include "core/netdevice.h"

namespace pktpath {

inline constexpr int NET_RX_SUCCESS = 0;
inline constexpr int NET_RX_DROP = 1;

// mirrors __netif_receive_skb_core's hook part: tc ingress (sch_handle_ingress), then
// netfilter ingress (nf_hook_ingress), then delivery. pktpath has no protocol stack:
// delivery is the Net's host sink, which counts and frees the packet (consumed, not a
// drop). Drops are counted under one reason (DEV_READY, TC_INGRESS, NETFILTER_DROP, ...).
// The device's rx_packets/rx_bytes are the driver's to count (dev_sw_netstats_rx_add),
// as in Linux: pktgen's netif_receive mode and a mirred redirect to ingress count none.
// Returns NET_RX_SUCCESS when the packet was delivered, stolen or redirected, else NET_RX_DROP.
int netif_receive_skb(Cpu& cpu, Packet* p) __attribute__((nonnull(2)));

// mirrors netif_rx (netif_rx_internal): the packet goes to a Cpu's input queue, the
// one RPS picks by flow hash from the device's map (get_rps_cpu), else this Cpu's;
// that Cpu's net_rx_action runs netif_receive_skb on it. A down device drops
// (DEV_READY), a full queue drops (CPU_BACKLOG); both count rx_dropped. Any thread.
int netif_rx(Cpu& cpu, Packet* p) __attribute__((nonnull(2)));

// What a NAPI poll hands each packet to (napi_gro_receive without aggregation, then
// netif_receive_skb_list_internal): with the device's RPS map the packet goes to its
// flow's Cpu's input queue (CPU_BACKLOG and rx_dropped when full), else netif_receive_skb
// on this Cpu. Any thread.
int netif_receive_skb_rps(Cpu& cpu, Packet* p) __attribute__((nonnull(2)));

// mirrors dev_sw_netstats_rx_add: a driver counts the frame it takes in, before the stack
// decides its fate (tc or nft may drop or redirect it; it is still received).
inline void dev_sw_netstats_rx_add(Cpu& cpu, NetDevice& dev, uint32_t len) {
  DevCpuStats& s = dev.stats(cpu);
  s.rx_packets.add();
  s.rx_bytes.add(len);
}

// mirrors eth_type_trans without the pull (pktpath's receive path keeps data at the
// Ethernet header): sets p.dev, pkt_type (host, broadcast, multicast, other host) and
// protocol from the frame. The frame must hold 14 bytes.
void eth_type_trans(Packet& p, NetDevice& dev);

// mirrors get_rps_cpu: the map's Cpu for this packet's flow.
Cpu& get_rps_cpu(const RpsMap& map, Packet& p);

// The same as a Cpu::RxHandler, for process_backlog (Cpu::set_rx_handler).
inline void netif_receive_skb_rx_handler(Cpu& cpu, Packet* p) { netif_receive_skb(cpu, p); }

}  // namespace pktpath
