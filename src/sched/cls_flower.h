// flower (net/sched/cls_flower.c), a subset: Ethernet addresses, VLAN id, ethertype, IP
// protocol, IPv4/IPv6 addresses with prefixes, TOS, L4 ports (single or range). The
// packet is dissected once per run into a FlowerKey and compared with the filter's
// key under its mask (fl_classify), port ranges apart (fl_range_port_*_cmp).
#pragma once

#include "sched/cls_api.h"

namespace pktpath::tc {

// The dissected fields (flow_dissector keys flower uses); multi-byte fields in network
// order, as the kernel keeps them. 8-byte aligned, a whole number of words.
struct alignas(8) FlowerKey {
  uint8_t dst_mac[6];
  uint8_t src_mac[6];
  uint16_t vlan_id;  // host order, 12 bits
  uint16_t n_proto;  // ethertype after any VLAN tag
  uint8_t ip_proto;
  uint8_t tos;       // IPv4 TOS, IPv6 traffic class
  uint16_t src_port;
  uint16_t dst_port;
  uint8_t ttl;  // IPv4 TTL, IPv6 hop limit
  uint8_t pad;
  uint8_t src_ip[16];  // IPv4 in the first 4 bytes
  uint8_t dst_ip[16];
};
static_assert(sizeof(FlowerKey) % 8 == 0);

struct FlowerSpec : FilterSpecOf<FlowerSpec> {
  static constexpr const char* kKind = "flower";
  FlowerKey key{};   // already masked
  FlowerKey mask{};  // 0 bits: don't care
  // Port ranges (host order; the exact port's mask is 0 then).
  bool src_range = false, dst_range = false;
  uint16_t src_min = 0, src_max = 0, dst_min = 0, dst_max = 0;
};

// mirrors skb_flow_dissect for flower's keys: the frame from its Ethernet header.
void flower_dissect(const Packet* p, FlowerKey& k);

}  // namespace pktpath::tc
