// The flow hash the receive side steers by (skb_get_hash): computed once from the
// addresses and ports of an Ethernet IPv4/IPv6 frame and kept in Packet::hash.
#pragma once

#include <cstdint>

#include "core/packet.h"

namespace pktpath {

// mirrors __skb_get_hash over the flow dissector's keys (addresses, ports, protocol):
// never 0 once computed, so 0 means "not computed".
uint32_t flow_hash_compute(const Packet& p);

inline uint32_t skb_get_hash(Packet& p) {
  if (PP_UNLIKELY(p.hash == 0)) p.hash = flow_hash_compute(p);
  return p.hash;
}

}  // namespace pktpath
