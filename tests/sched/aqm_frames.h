// IPv4/UDP frames for the flow-hashing and ECN qdisc tests (fq_codel, codel, sfq).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/cpu.h"
#include "core/packet.h"

namespace pktpath::testing {

// RFC 1071 checksum of an IPv4 header; 0 when the header's checksum is right.
inline uint16_t ipv4_csum(const uint8_t* h, unsigned len = 20) {
  uint32_t s = 0;
  for (unsigned i = 0; i < len; i += 2) s += static_cast<uint32_t>(h[i] << 8 | h[i + 1]);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s);
}

// An Ethernet + IPv4 + UDP frame of `size` bytes (>= 42): 10.0.0.1 -> 10.0.0.2, the
// given ports and TOS, valid header checksum, zero payload, `mark` set.
inline Packet* udp_frame(Cpu& cpu, uint32_t mark, uint16_t sport, uint16_t dport = 9,
                         uint8_t tos = 0, uint32_t size = 1000) {
  Packet* p = cpu.alloc();
  uint8_t* f = p->put(size);
  std::memset(f, 0, size);
  f[12] = 0x08;  // IPv4
  uint8_t* ip = f + 14;
  ip[0] = 0x45;
  ip[1] = tos;
  const uint16_t tot = static_cast<uint16_t>(size - 14);
  ip[2] = static_cast<uint8_t>(tot >> 8);
  ip[3] = static_cast<uint8_t>(tot);
  ip[8] = 64;
  ip[9] = 17;
  const uint8_t addrs[8] = {10, 0, 0, 1, 10, 0, 0, 2};
  std::memcpy(ip + 12, addrs, 8);
  const uint16_t c = ipv4_csum(ip);
  ip[10] = static_cast<uint8_t>(c >> 8);
  ip[11] = static_cast<uint8_t>(c);
  uint8_t* udp = ip + 20;
  udp[0] = static_cast<uint8_t>(sport >> 8);
  udp[1] = static_cast<uint8_t>(sport);
  udp[2] = static_cast<uint8_t>(dport >> 8);
  udp[3] = static_cast<uint8_t>(dport);
  p->mark = mark;
  p->protocol = 0x0008;
  return p;
}

inline uint8_t frame_tos(const Packet* p) { return p->data()[15]; }

}  // namespace pktpath::testing
