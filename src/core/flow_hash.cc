#include "core/flow_hash.h"

#include <cstring>

namespace pktpath {

namespace {

uint32_t mix(uint32_t h, uint32_t v) {
  // murmur3's block step and finaliser: cheap, and spreads every input bit.
  v *= 0xcc9e2d51u;
  v = (v << 15) | (v >> 17);
  v *= 0x1b873593u;
  h ^= v;
  h = (h << 13) | (h >> 19);
  return h * 5 + 0xe6546b64u;
}

uint32_t load32(const uint8_t* b) {
  uint32_t v;
  std::memcpy(&v, b, 4);
  return v;
}

}  // namespace

uint32_t flow_hash_compute(const Packet& p) {
  const uint8_t* d = p.data();
  const uint32_t n = p.headlen();
  uint32_t h = 0x9747b28cu;
  if (n < 14) return 1;
  uint32_t off = 12;
  uint16_t proto = static_cast<uint16_t>(d[off] << 8 | d[off + 1]);
  off += 2;
  if (proto == 0x8100 && n >= off + 4) {
    proto = static_cast<uint16_t>(d[off + 2] << 8 | d[off + 3]);
    off += 4;
  }
  uint8_t l4 = 0;
  uint32_t l4_off = 0;
  if (proto == 0x0800 && n >= off + 20) {
    const uint8_t* ip = d + off;
    h = mix(h, load32(ip + 12));
    h = mix(h, load32(ip + 16));
    l4 = ip[9];
    const bool fragment = (ip[6] & 0x3f) != 0 || ip[7] != 0;  // MF or an offset: no ports
    if (!fragment) l4_off = off + (ip[0] & 0x0f) * 4u;
  } else if (proto == 0x86dd && n >= off + 40) {
    const uint8_t* ip = d + off;
    for (unsigned i = 8; i < 40; i += 4) h = mix(h, load32(ip + i));
    l4 = ip[6];
    l4_off = off + 40;
  } else {
    h = mix(h, proto);
  }
  h = mix(h, l4);
  if (l4_off && (l4 == 6 || l4 == 17 || l4 == 132) && n >= l4_off + 4) h = mix(h, load32(d + l4_off));
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h ? h : 1;
}

}  // namespace pktpath
