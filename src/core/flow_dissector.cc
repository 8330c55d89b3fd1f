#include "core/flow_dissector.h"

#include <algorithm>
#include <cstring>

namespace pktpath {

namespace {

constexpr uint32_t kEthHlen = 14;
constexpr uint16_t kEthPIp = 0x0800, kEthPIpv6 = 0x86dd, kEthP8021Q = 0x8100, kEthP8021AD = 0x88a8;

uint16_t rd16(const uint8_t* b) { return static_cast<uint16_t>(b[0] << 8 | b[1]); }
uint32_t rd32(const uint8_t* b) {
  uint32_t v;
  std::memcpy(&v, b, 4);
  return v;  // byte order does not matter for hashing
}

bool has_ports(uint8_t proto) {
  return proto == 6 || proto == 17 || proto == 136 || proto == 132 || proto == 33;
}

// A keyed word mixer (murmur3's constants and finaliser); not the kernel's siphash, but
// the same role: a keyed hash of the flow keys.
uint32_t mix(uint32_t h, uint32_t w) {
  w *= 0xcc9e2d51u;
  w = (w << 15) | (w >> 17);
  w *= 0x1b873593u;
  h ^= w;
  h = (h << 13) | (h >> 19);
  return h * 5 + 0xe6546b64u;
}
uint32_t finish(uint32_t h, uint32_t n) {
  h ^= n;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

}  // namespace

bool find_network_header(const Packet& p, NetworkHeader& nh) {
  const uint8_t* d = p.data();
  const uint32_t n = p.headlen();
  uint32_t off = kEthHlen;
  if (n < off) return false;
  uint16_t proto = rd16(d + 12);
  for (int tags = 0; tags < 2 && (proto == kEthP8021Q || proto == kEthP8021AD); ++tags) {
    if (n < off + 4) return false;
    proto = rd16(d + off + 2);
    off += 4;
  }
  nh.off = off;
  nh.proto = proto;
  return true;
}

// mirrors __skb_get_hash / __flow_hash_from_keys (after __flow_hash_consistentify).
uint32_t flow_hash_from_headers(const Packet& p, uint64_t key) {
  uint32_t w[10] = {};  // src[4], dst[4], ports, proto
  unsigned addr_words = 0;
  NetworkHeader nh;
  if (find_network_header(p, nh)) {
    const uint8_t* d = p.data() + nh.off;
    const uint32_t room = p.headlen() - nh.off;
    uint8_t l4 = 0;
    uint32_t l4_off = 0;
    bool ports = false;
    if (nh.proto == kEthPIp && room >= 20 && (d[0] >> 4) == 4) {
      const uint32_t ihl = (d[0] & 0xfu) * 4u;
      w[0] = rd32(d + 12);
      w[4] = rd32(d + 16);
      addr_words = 1;
      l4 = d[9];
      const bool frag = (rd16(d + 6) & 0x3fff) != 0;  // MF or an offset
      l4_off = ihl;
      ports = ihl >= 20 && !frag && has_ports(l4) && room >= ihl + 4;
    } else if (nh.proto == kEthPIpv6 && room >= 40 && (d[0] >> 4) == 6) {
      for (unsigned i = 0; i < 4; ++i) {
        w[i] = rd32(d + 8 + 4 * i);
        w[4 + i] = rd32(d + 24 + 4 * i);
      }
      addr_words = 4;
      l4 = d[6];
      l4_off = 40;
      ports = has_ports(l4) && room >= 44;
    }
    uint16_t sport = 0, dport = 0;
    if (ports) {
      sport = rd16(d + l4_off);
      dport = rd16(d + l4_off + 2);
    }
    // consistentify: the lower address (then port) first, so both directions match.
    int cmp = 0;
    for (unsigned i = 0; i < addr_words && cmp == 0; ++i)
      cmp = w[4 + i] < w[i] ? -1 : w[4 + i] > w[i] ? 1 : 0;
    if (cmp < 0 || (cmp == 0 && dport < sport)) {
      std::swap_ranges(w, w + addr_words, w + 4);
      std::swap(sport, dport);
    }
    w[8] = static_cast<uint32_t>(sport) << 16 | dport;
    w[9] = static_cast<uint32_t>(l4) << 16 | nh.proto;
  }
  uint32_t h = static_cast<uint32_t>(key) ^ static_cast<uint32_t>(key >> 32) ^ 0x9e3779b9u;
  for (uint32_t v : w) h = mix(h, v);
  h = finish(h, sizeof(w));
  return h ? h : 1;
}

}  // namespace pktpath
