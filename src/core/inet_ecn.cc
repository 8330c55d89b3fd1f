#include "core/inet_ecn.h"

#include "core/flow_dissector.h"

namespace pktpath {

namespace {

// mirrors IP_ECN_set_ce
bool ip_ecn_set_ce(uint8_t* iph) {
  const uint32_t ecn = (iph[1] + 1u) & INET_ECN_MASK;
  // ecn is now 01 Not-ECT, 10 ECT(1), 11 ECT(0), 00 CE.
  if (!(ecn & 2)) return ecn == 0;
  // TOS grows by 2 (ECT(1)) or 1 (ECT(0)): add the one's complement of that.
  uint32_t sum = static_cast<uint32_t>(iph[10] << 8 | iph[11]) + 0xfffbu + ecn;
  sum = (sum & 0xffff) + (sum >> 16);
  iph[10] = static_cast<uint8_t>(sum >> 8);
  iph[11] = static_cast<uint8_t>(sum);
  iph[1] |= INET_ECN_CE;
  return true;
}

// mirrors IP6_ECN_set_ce (no CHECKSUM_COMPLETE here to fix up)
bool ip6_ecn_set_ce(uint8_t* ip6h) {
  const uint8_t dsfield = static_cast<uint8_t>((ip6h[0] << 4) | (ip6h[1] >> 4));
  if ((dsfield & INET_ECN_MASK) == INET_ECN_NOT_ECT) return false;
  ip6h[1] |= INET_ECN_CE << 4;
  return true;
}

}  // namespace

bool inet_ecn_set_ce(Packet& p) {
  NetworkHeader nh;
  if (!find_network_header(p, nh)) return false;
  uint8_t* h = p.data() + nh.off;
  const uint32_t room = p.headlen() - nh.off;
  if (nh.proto == 0x0800 && room >= 20) return ip_ecn_set_ce(h);
  if (nh.proto == 0x86dd && room >= 40) return ip6_ecn_set_ce(h);
  return false;
}

}  // namespace pktpath
