#include "bpf/packet_view.h"

namespace pktpath::bpf {

PacketView view_of(const Packet& p, const DeviceInfo* dev, uint32_t net_off, uint32_t cpu) {
  PacketView v;
  v.data = p.data();
  v.headlen = p.headlen();
  v.len = p.len;
  v.wire_len = p.len;
  v.mac_off = 0;
  v.net_off = net_off < v.headlen ? net_off : v.headlen;
  v.nr_frags = p.nr_frags;
  v.frags = p.frags;
  v.meta.mark = p.mark;
  v.meta.hash = p.hash;
  v.meta.protocol = p.protocol;
  v.meta.queue_mapping = p.queue_mapping;
  v.meta.vlan_tci = p.vlan_tci;
  v.meta.vlan_proto = p.vlan_proto;
  v.meta.vlan_present = p.vlan_present;
  v.meta.pkt_type = p.pkt_type;
  v.meta.cpu = cpu;
  if (dev) {
    v.meta.has_dev = true;
    v.meta.ifindex = dev->ifindex;
    v.meta.hatype = dev->type;
  }
  return v;
}

}  // namespace pktpath::bpf
