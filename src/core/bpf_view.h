// Filling bpf's PacketView from a Packet: the packet's side of running a classic BPF
// program on it (bpf knows no Packet; core fills the view it reads).
#pragma once

#include "base/compiler.h"
#include "bpf/packet_view.h"
#include "core/packet.h"

namespace pktpath::bpf {

// Optional device facts for a view built from a Packet (NetDevice lives elsewhere).
struct DeviceInfo {
  int32_t ifindex = 0;
  uint16_t type = 1;  // ARPHRD_*
};

// A view of pktpath::Packet: head, frags and metadata. net_off defaults to 14 clipped to
// the head (an Ethernet frame after eth_type_trans); cpu is the caller's cpu id.
// The data part of a view of `p`: head, lengths, header offsets, fragments.
PP_ALWAYS_INLINE void view_fill_data(PacketView& v, const Packet& p, uint32_t net_off) {
  v.data = p.data();
  v.headlen = p.headlen();
  v.len = p.len;
  v.wire_len = p.len;
  v.mac_off = 0;
  v.net_off = net_off < v.headlen ? net_off : v.headlen;
  v.nr_frags = p.nr_frags;
  v.frags = p.frags;
}

// The metadata part: what ancillary loads read.
PP_ALWAYS_INLINE void view_fill_meta(PacketView& v, const Packet& p, const DeviceInfo* dev, uint32_t cpu) {
  v.meta.mark = p.mark;
  v.meta.hash = p.hash;
  v.meta.protocol = p.protocol;
  v.meta.queue_mapping = p.queue_mapping;
  v.meta.vlan_tci = p.vlan_tci;
  v.meta.vlan_proto = p.vlan_proto;
  v.meta.vlan_present = p.vlan_present;
  v.meta.pkt_type = p.pkt_type;
  v.meta.cpu = cpu;
  v.meta.has_dev = dev != nullptr;
  v.meta.ifindex = dev ? dev->ifindex : 0;
  v.meta.hatype = dev ? dev->type : 1;
}

// Inline: the tc classifier builds one per packet.
PP_ALWAYS_INLINE PacketView view_of(const Packet& p, const DeviceInfo* dev = nullptr, uint32_t net_off = 14,
                                    uint32_t cpu = 0) {
  PacketView v;
  view_fill_data(v, p, net_off);
  view_fill_meta(v, p, dev, cpu);
  return v;
}

}  // namespace pktpath::bpf
