// A page fragment (skb_frag_t): bytes outside the linear buffer, not owned by the
// packet. Shared by core's Packet and bpf's PacketView, which reads fragments in place.
#pragma once

#include <cstdint>

namespace pktpath {

struct PacketFrag {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
};

}  // namespace pktpath
