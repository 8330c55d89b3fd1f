// PacketView: what a classic BPF program sees of a packet — the linear head, optional
// page fragments after it (like an skb with frags), the mac/network header offsets the
// negative-offset loads use, and the metadata the ancillary loads (SKF_AD_*) read.
// core/bpf_view.h fills one from a Packet.
//
// A view does not own bytes; it is cheap to build and valid while its source lives.
#pragma once

#include <cstdint>
#include <span>

#include "base/packet_frag.h"

namespace pktpath::bpf {

// Metadata for ancillary loads. Byte order follows the skb: protocol and vlan_proto are
// network order (the loads convert them, as the kernel's ntohs does).
struct PacketMeta {
  uint32_t mark = 0;
  uint32_t hash = 0;          // skb->hash (SKF_AD_RXHASH)
  int32_t ifindex = 0;        // skb->dev->ifindex
  uint32_t cpu = 0;           // what SKF_AD_CPU returns (raw cpu id of the caller)
  uint16_t protocol = 0;      // skb->protocol, network order
  uint16_t queue_mapping = 0;
  uint16_t vlan_tci = 0;
  uint16_t vlan_proto = 0;    // network order
  uint16_t hatype = 1;        // skb->dev->type (ARPHRD_ETHER = 1)
  uint8_t pkt_type = 0;
  bool vlan_present = false;
  bool has_dev = false;       // false: IFINDEX/HATYPE end the program (skb->dev == NULL)
};

struct PacketView {
  const uint8_t* data = nullptr;  // linear head (skb->data)
  uint32_t headlen = 0;           // bytes in the head (skb_headlen)
  uint32_t len = 0;               // head + fragments (skb->len): the bound for loads
  uint32_t wire_len = 0;          // what LD/LDX LEN return: len, or a capture's original
                                  // length when only a snapshot of it is present
  uint32_t mac_off = 0;           // mac header, relative to data (SKF_LL_OFF base)
  uint32_t net_off = 0;           // network header, relative to data (SKF_NET_OFF base)
  uint32_t nr_frags = 0;
  const PacketFrag* frags = nullptr;  // nr_frags fragments following the head, in order
  PacketMeta meta;

  // A linear packet of n bytes; the network header right after an Ethernet header.
  static PacketView linear(const uint8_t* p, uint32_t n) {
    PacketView v;
    v.data = p;
    v.headlen = n;
    v.len = n;
    v.wire_len = n;
    v.net_off = n < 14 ? n : 14;
    return v;
  }
  // The same holding a snapshot of n bytes of a packet that was wire_len long on the wire.
  static PacketView linear(const uint8_t* p, uint32_t n, uint32_t wire_len) {
    PacketView v = linear(p, n);
    v.wire_len = wire_len;
    return v;
  }
};

}  // namespace pktpath::bpf
