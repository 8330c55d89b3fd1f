#include "bpf/semantics.h"

#include <cstring>

namespace pktpath::bpf {

namespace {

uint32_t be_value(const uint8_t* p, uint32_t size) {
  uint32_t v = 0;
  for (uint32_t i = 0; i < size; ++i) v = (v << 8) | p[i];
  return v;
}

// Copies n bytes at offset off >= 0 spanning the head and the fragments (skb_copy_bits).
// The caller has checked off + n <= v.len.
bool copy_span(const PacketView& v, uint32_t off, uint8_t* dst, uint32_t n) {
  if (off < v.headlen) {
    uint32_t c = v.headlen - off < n ? v.headlen - off : n;
    std::memcpy(dst, v.data + off, c);
    dst += c;
    n -= c;
    off = 0;
  } else {
    off -= v.headlen;
  }
  for (uint32_t i = 0; i < v.nr_frags && n; ++i) {
    const PacketFrag& f = v.frags[i];
    if (off >= f.len) {
      off -= f.len;
      continue;
    }
    uint32_t c = f.len - off < n ? f.len - off : n;
    std::memcpy(dst, f.data + off, c);
    dst += c;
    n -= c;
    off = 0;
  }
  return n == 0;
}

}  // namespace

// Mirrors bpf_skb_load_helper_* (offset >= 0: head, then skb_copy_bits into the frags)
// and bpf_internal_load_pointer_neg_helper (negative: SKF_NET_OFF / SKF_LL_OFF relative,
// the whole read inside the head).
uint64_t load_packet(const PacketView& v, int32_t off, uint32_t size) {
  uint8_t buf[4];
  if (off >= 0) {
    uint32_t o = static_cast<uint32_t>(off);
    if (o > v.len || v.len - o < size) return kLoadFail;
    if (o < v.headlen && v.headlen - o >= size) return be_value(v.data + o, size);
    if (!copy_span(v, o, buf, size)) return kLoadFail;
    return be_value(buf, size);
  }
  int64_t pos;
  if (off >= SKF_NET_OFF)
    pos = int64_t{off} - SKF_NET_OFF + v.net_off;
  else if (off >= SKF_LL_OFF)
    pos = int64_t{off} - SKF_LL_OFF + v.mac_off;
  else
    return kLoadFail;
  if (pos < 0 || pos + size > v.headlen) return kLoadFail;
  return be_value(v.data + pos, size);
}

// Mirrors __skb_get_poff over the flow dissector's result for the common protocols:
// network header + IPv4 IHL*4 (or IPv6's 40 bytes) + the L4 header's size.
// 0 when the network header does not fit or the protocol is not IPv4/IPv6.
namespace {
bool read(const PacketView& v, uint32_t off, uint32_t size, uint32_t* out) {
  uint64_t r = load_packet(v, static_cast<int32_t>(off), size);
  *out = static_cast<uint32_t>(r);
  return !load_failed(r);
}
}  // namespace

uint32_t ancillary_pay_offset(const PacketView& v) {
  uint32_t nh = v.net_off;
  uint16_t proto = static_cast<uint16_t>((v.meta.protocol >> 8) | (v.meta.protocol << 8));
  uint32_t poff;
  uint32_t l4proto;
  uint32_t w;
  if (proto == 0x0800) {
    if (!read(v, nh, 4, &w)) return 0;
    uint32_t ihl = (w >> 24) & 0xf;
    if ((w >> 28) != 4 || ihl < 5) return 0;
    uint32_t b;
    if (!read(v, nh + ihl * 4 - 1, 1, &b)) return 0;  // whole header
    uint32_t frag;
    if (!read(v, nh + 6, 2, &frag)) return 0;
    if (!read(v, nh + 9, 1, &l4proto)) return 0;
    poff = nh + ihl * 4;
    if (frag & 0x1fff) return poff;  // a later fragment carries no L4 header
  } else if (proto == 0x86dd) {
    if (!read(v, nh + 39, 1, &w)) return 0;
    if (!read(v, nh + 6, 1, &l4proto)) return 0;
    poff = nh + 40;
  } else {
    return 0;
  }
  switch (l4proto) {
    case 6: {  // TCP: data offset, at least the 20-byte header
      uint32_t doff;
      if (!read(v, poff + 12, 1, &doff)) return poff;
      doff = (doff >> 4) * 4;
      return poff + (doff < 20 ? 20 : doff);
    }
    case 17: case 136: return poff + 8;  // UDP, UDP-Lite
    case 1: case 58: case 2: return poff + 8;  // ICMP, ICMPv6, IGMP
    case 33: return poff + 16;  // DCCP
    case 132: return poff + 12;  // SCTP
    default: return poff;
  }
}

namespace {

// nla_find over [start, start + rem): headers in host order, 4-byte aligned steps,
// type mask 0x3fff. Returns the attribute's offset from data, or 0.
uint32_t nla_find_at(const PacketView& v, uint32_t start, int64_t rem, uint32_t type) {
  uint32_t pos = start;
  while (rem >= 4) {
    uint16_t nla_len, nla_type;
    std::memcpy(&nla_len, v.data + pos, 2);
    std::memcpy(&nla_type, v.data + pos + 2, 2);
    if (nla_len < 4 || nla_len > rem) break;
    if (static_cast<uint32_t>(nla_type & 0x3fff) == type) return pos;
    uint32_t step = (nla_len + 3u) & ~3u;
    pos += step;
    rem -= step;
  }
  return 0;
}

}  // namespace

// Mirrors bpf_skb_get_nlattr.
uint32_t ancillary_nlattr(const PacketView& v, uint32_t a, uint32_t x) {
  if (v.len != v.headlen) return 0;
  if (v.len < 4 || a > v.len - 4) return 0;
  return nla_find_at(v, a, int64_t{v.len} - a, x);
}

// Mirrors bpf_skb_get_nlattr_nest.
uint32_t ancillary_nlattr_nest(const PacketView& v, uint32_t a, uint32_t x) {
  if (v.len != v.headlen) return 0;
  if (v.len < 4 || a > v.len - 4) return 0;
  uint16_t outer;
  std::memcpy(&outer, v.data + a, 2);
  if (outer > v.len - a) return 0;
  return nla_find_at(v, a + 4, int64_t{outer} - 4, x);
}

uint32_t ancillary_random() {
  // xorshift32 per thread, like the kernel's per-cpu prandom state.
  thread_local uint32_t state = 0x9e3779b9u;
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}

// Mirrors convert_bpf_extensions.
uint64_t load_ancillary(const PacketView& v, uint32_t ad, uint32_t a, uint32_t x) {
  const PacketMeta& m = v.meta;
  switch (ad) {
    case SKF_AD_PROTOCOL: return static_cast<uint16_t>((m.protocol >> 8) | (m.protocol << 8));
    case SKF_AD_PKTTYPE: return m.pkt_type & 7u;
    case SKF_AD_IFINDEX:
      if (!m.has_dev) return kLoadFail;
      return static_cast<uint32_t>(m.ifindex);
    case SKF_AD_HATYPE:
      if (!m.has_dev) return kLoadFail;
      return m.hatype;
    case SKF_AD_NLATTR: return ancillary_nlattr(v, a, x);
    case SKF_AD_NLATTR_NEST: return ancillary_nlattr_nest(v, a, x);
    case SKF_AD_MARK: return m.mark;
    case SKF_AD_QUEUE: return m.queue_mapping;
    case SKF_AD_RXHASH: return m.hash;
    case SKF_AD_CPU: return m.cpu;
    case SKF_AD_ALU_XOR_X: return a ^ x;
    case SKF_AD_VLAN_TAG: return m.vlan_tci;
    case SKF_AD_VLAN_TAG_PRESENT: return m.vlan_present ? 1 : 0;
    case SKF_AD_PAY_OFFSET: return ancillary_pay_offset(v);
    case SKF_AD_RANDOM: return ancillary_random();
    case SKF_AD_VLAN_TPID: return static_cast<uint16_t>((m.vlan_proto >> 8) | (m.vlan_proto << 8));
    default: return kLoadFail;  // unreachable for checked programs
  }
}

}  // namespace pktpath::bpf
