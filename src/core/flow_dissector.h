// Flow keys and flow hashes of a frame (net/core/flow_dissector.c, the part qdiscs use):
// where the network header starts, skb_get_hash (computed once, kept in Packet::hash) and
// skb_get_hash_perturb (keyed, never stored). Frames start at the Ethernet header; in-band
// 802.1Q/802.1ad tags are skipped.
#pragma once

#include <cstdint>

#include "core/packet.h"

namespace pktpath {

// The network header after the Ethernet header and any in-band VLAN tags: its offset
// from data() and its ethertype (host order). false when the linear part is too short.
struct NetworkHeader {
  uint32_t off = 0;
  uint16_t proto = 0;
};
bool find_network_header(const Packet& p, NetworkHeader& nh);

// mirrors __skb_get_hash_symmetric's keys hashed with `key` (flow_hash_from_keys): the
// IPv4/IPv6 addresses, the L4 protocol and, for unfragmented TCP/UDP/UDP-Lite/SCTP/DCCP,
// the ports, ordered so both directions hash alike. Never 0.
uint32_t flow_hash_from_headers(const Packet& p, uint64_t key);

// mirrors skb_get_hash: the packet's hash, computed from its headers with a fixed key on
// first use and kept in p.hash.
inline uint32_t skb_get_hash(Packet& p) {
  if (PP_UNLIKELY(p.hash == 0)) p.hash = flow_hash_from_headers(p, 0);
  return p.hash;
}

// mirrors skb_get_hash_perturb: the headers' hash under `perturbation` (sfq).
inline uint32_t skb_get_hash_perturb(const Packet& p, uint64_t perturbation) {
  return flow_hash_from_headers(p, perturbation);
}

// mirrors reciprocal_scale: val * ep_ro / 2^32, a value in [0, ep_ro).
inline uint32_t reciprocal_scale(uint32_t val, uint32_t ep_ro) {
  return static_cast<uint32_t>((static_cast<uint64_t>(val) * ep_ro) >> 32);
}

}  // namespace pktpath
