// Rule evaluation for the netdev family (see nft_rule.h).
#include <cstring>

#include "base/compiler.h"
#include "netfilter/nft_rule.h"
#include "netfilter/nft_ruleset.h"
#include "netfilter/nft_set.h"

namespace pktpath::nf {

namespace {
constexpr uint32_t kEthHlen = 14;
constexpr uint16_t kEthPIp = 0x0800;
constexpr uint16_t kEthPIpv6 = 0x86dd;
constexpr uint8_t kIpProtoTcp = 6;
constexpr uint8_t kIpProtoUdp = 17;

// mirrors skb_header_pointer: n bytes at off, from the linear part when they lie there,
// else copied (from fragments) into buf; nullptr when the packet is too short.
const uint8_t* header_pointer(const Packet* p, uint32_t off, uint32_t n, uint8_t* buf) {
  if (PP_LIKELY(off + n <= p->headlen())) return p->data() + off;
  if (off + n > p->len) return nullptr;
  return p->copy_bits(off, buf, n) ? buf : nullptr;
}

uint16_t rd16(const uint8_t* b) { return static_cast<uint16_t>(b[0] << 8 | b[1]); }
uint32_t rd32(const uint8_t* b) {
  return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3];
}

// The ports of a TCP or UDP header at thoff.
void read_ports(NftPktInfo& k, uint32_t thoff) {
  if (k.l4proto != kIpProtoTcp && k.l4proto != kIpProtoUdp) return;
  uint8_t pbuf[4];
  const uint8_t* th = header_pointer(k.p, thoff, 4, pbuf);
  if (!th) return;
  k.l4 = true;
  k.sport = rd16(th);
  k.dport = rd16(th + 2);
}

// mirrors nft_set_pktinfo_ipv6_validate: a whole IPv6 header, then ipv6_find_hdr's walk
// over hop-by-hop, routing, fragment, authentication and destination options headers to
// the transport header (none after a fragment header with a nonzero offset).
void parse_ipv6(NftPktInfo& k, uint32_t nhoff) {
  const Packet* p = k.p;
  uint8_t buf[40];
  const uint8_t* ip6 = header_pointer(p, nhoff, 40, buf);
  if (!ip6 || (ip6[0] >> 4) != 6) return;
  const uint32_t plen = rd16(ip6 + 4);
  if (plen + 40 > p->len - nhoff) return;
  k.ipv6 = true;
  k.nhoff = nhoff;
  k.nexthdr = ip6[6];
  uint8_t nh = ip6[6];
  uint32_t off = nhoff + 40;
  const uint32_t end = nhoff + 40 + plen;
  for (int hops = 0; hops < 8; ++hops) {
    if (nh != 0 && nh != 43 && nh != 44 && nh != 51 && nh != 60) break;
    uint8_t hb[8];
    const uint8_t* h = off + 8 <= end ? header_pointer(p, off, 8, hb) : nullptr;
    if (!h) return;
    if (nh == 44) {
      if (rd16(h + 2) & 0xfff8) {  // a later fragment: the transport header is elsewhere
        k.l4proto = h[0];
        return;
      }
      off += 8;
    } else {
      off += nh == 51 ? (h[1] + 2u) * 4 : (h[1] + 1u) * 8;
    }
    nh = h[0];
  }
  k.l4proto = nh;
  if (off <= end) read_ports(k, off);
}

// mirrors nft_set_pktinfo_ipv4_validate (and its IPv6 twin) + the transport offset.
PP_NOINLINE void parse_l3(NftPktInfo& k) {
  k.l3_done = true;
  const Packet* p = k.p;
  const uint16_t proto = nft_packet_protocol(p);
  if (proto != kEthPIp && proto != kEthPIpv6) return;
  // The network header follows the Ethernet header, or an in-band 802.1Q/802.1ad tag
  // when skb->protocol names the inner protocol.
  uint8_t tbuf[2];
  const uint8_t* et = header_pointer(p, 12, 2, tbuf);
  if (!et) return;
  const uint32_t nhoff = (rd16(et) == 0x8100 || rd16(et) == 0x88a8) ? kEthHlen + 4 : kEthHlen;
  if (proto == kEthPIpv6) return parse_ipv6(k, nhoff);
  uint8_t buf[20];
  const uint8_t* ip = header_pointer(p, nhoff, 20, buf);
  if (!ip) return;
  const uint32_t ihl = ip[0] & 0x0f;
  const uint32_t tot_len = rd16(ip + 2);
  if ((ip[0] >> 4) != 4 || ihl < 5) return;
  if (tot_len < ihl * 4 || tot_len > p->len - nhoff) return;
  k.ipv4 = true;
  k.nhoff = nhoff;
  k.saddr = rd32(ip + 12);
  k.daddr = rd32(ip + 16);
  k.l4proto = ip[9];
  k.tos = ip[1];
  k.tot_len = static_cast<uint16_t>(tot_len);
  const bool later_fragment = (rd16(ip + 6) & 0x1fff) != 0;
  if (!later_fragment) read_ports(k, nhoff + ihl * 4);
}

// A byte key's field: the Ethernet addresses (offsets 6 and 0) or IPv6's (8 and 24 into
// its header); nullptr when the packet has none.
const uint8_t* load_bytes(const NftMatch& m, NftPktInfo& k, uint8_t* buf) {
  switch (m.key) {
    case NftKey::ETHER_SADDR: return header_pointer(k.p, 6, 6, buf);
    case NftKey::ETHER_DADDR: return header_pointer(k.p, 0, 6, buf);
    default: break;
  }
  if (!k.l3_done) parse_l3(k);
  if (!k.ipv6) return nullptr;
  return header_pointer(k.p, k.nhoff + (m.key == NftKey::IP6_SADDR ? 8 : 24), 16, buf);
}

// Fetch the key's value; false when the packet has no such field.
bool load_key(const NftMatch& m, NftPktInfo& k, uint32_t& v);

// mirrors nft_lookup_eval: the selector's keys into one padded key, looked up in the set;
// a packet without one of the fields matches neither the set nor its negation. A dynset
// (add|update @set) writes the key instead (nft_dynset_eval).
bool match_lookup(const NftMatch& m, NftPktInfo& k) {
  uint8_t key[kNftMaxKeyLen];
  unsigned off = 0;
  for (NftKey sel : m.lookup->keys) {
    const NftType t = *nft_key_type(sel);
    const unsigned len = nft_type_info(t).len, stride = nft_type_stride(t);
    NftMatch one;
    one.key = sel;
    if (nft_key_is_bytes(sel)) {
      uint8_t buf[16];
      const uint8_t* f = load_bytes(one, k, buf);
      if (!f) return false;
      std::memcpy(key + off, f, len);
    } else {
      uint32_t v;
      if (!load_key(one, k, v)) return false;
      for (unsigned i = 0; i < len; ++i) key[off + i] = static_cast<uint8_t>(v >> (8 * (len - 1 - i)));
    }
    std::memset(key + off + len, 0, stride - len);
    off += stride;
  }
  uint64_t now = 0;
  if (PP_UNLIKELY(m.set->has_timeouts()))
    now = k.cpu ? k.cpu->clock().now_ns() : MonotonicClock::instance().now_ns();
  if (PP_UNLIKELY(m.lookup->dynset)) {  // nft_dynset_eval: a full set breaks the rule
    const NftDynsetOp op{m.lookup->update, m.lookup->timeout_ns, m.lookup->elem_counter};
    return m.set->dynamic_update(key, op, now, k.len);
  }
  const NftVerdictData* d = m.set->lookup(key, now, k.len);
  if (PP_UNLIKELY(m.lookup->mark_set)) {  // meta mark set KEY map: no element breaks the rule
    if (!d) return false;
    k.p->mark = d->value;
    return true;
  }
  if (m.lookup->vmap) {
    if (!d) return false;
    k.vmap = *d;
    return true;
  }
  return (d != nullptr) != m.neg;
}

PP_NOINLINE bool match_bytes(const NftMatch& m, NftPktInfo& k) {
  if (m.nbytes == kNftLookup) return match_lookup(m, k);
  if (m.nbytes == kNftSetMark) {  // nft_meta_set_eval
    k.p->mark = m.lo;
    return true;
  }
  uint8_t buf[16];
  const uint8_t* f = load_bytes(m, k, buf);
  if (!f) return false;
  bool in = true;
  for (unsigned i = 0; i < m.nbytes; ++i) in = in && (f[i] & m.bytes_mask[i]) == m.bytes[i];
  return in != m.neg;
}

PP_ALWAYS_INLINE bool load_key(const NftMatch& m, NftPktInfo& k, uint32_t& v) {
  switch (m.key) {
    case NftKey::META_MARK:
      v = k.p->mark;
      return true;
    case NftKey::META_PROTOCOL:
      v = nft_packet_protocol(k.p);
      return true;
    case NftKey::ETHER_TYPE: {
      uint8_t b[2];
      const uint8_t* t = header_pointer(k.p, 12, 2, b);
      if (!t) return false;
      v = rd16(t);
      return true;
    }
    default:
      break;
  }
  if (!k.l3_done) parse_l3(k);
  switch (m.key) {
    case NftKey::IP_SADDR: v = k.saddr; return k.ipv4;
    case NftKey::IP_DADDR: v = k.daddr; return k.ipv4;
    case NftKey::TCP_SPORT: v = k.sport; return k.l4 && k.l4proto == kIpProtoTcp;
    case NftKey::TCP_DPORT: v = k.dport; return k.l4 && k.l4proto == kIpProtoTcp;
    case NftKey::UDP_SPORT: v = k.sport; return k.l4 && k.l4proto == kIpProtoUdp;
    case NftKey::UDP_DPORT: v = k.dport; return k.l4 && k.l4proto == kIpProtoUdp;
    case NftKey::META_L4PROTO: v = k.l4proto; return k.ipv4 || k.ipv6;
    case NftKey::IP_PROTOCOL: v = k.l4proto; return k.ipv4;
    case NftKey::IP6_NEXTHDR: v = k.nexthdr; return k.ipv6;
    case NftKey::IP_LENGTH: v = k.tot_len; return k.ipv4;
    case NftKey::IP_DSCP: v = k.tos >> 2; return k.ipv4;
    default: return false;
  }
}

PP_ALWAYS_INLINE bool match_one(const NftMatch& m, NftPktInfo& k) {
  if (PP_UNLIKELY(m.nbytes != 0)) return match_bytes(m, k);
  uint32_t v;
  if (!load_key(m, k, v)) return false;  // the dependency (meta protocol / l4proto) fails
  v &= m.mask;
  const bool in = v >= m.lo && v <= m.hi;
  return in != m.neg;
}
}  // namespace

uint16_t nft_packet_protocol(const Packet* p) {
  if (PP_LIKELY(p->protocol != 0))
    return static_cast<uint16_t>((p->protocol >> 8) | (p->protocol << 8));
  uint8_t buf[2];
  const uint8_t* t = header_pointer(p, 12, 2, buf);
  return t ? rd16(t) : 0;
}

uint64_t NftCounter::packets() const {
  uint64_t s = base_packets_;
  for (const Slot& x : slots_) s += x.packets.get();
  return s;
}
uint64_t NftCounter::bytes() const {
  uint64_t s = base_bytes_;
  for (const Slot& x : slots_) s += x.bytes.get();
  return s;
}

// mirrors the expression loop of nft_do_chain for one rule: the first failing match ends
// the rule (NFT_BREAK); a counter counts the packets that reached it.
// Inlined into the chain walk below; the exported nft_rule_eval wraps it.
PP_ALWAYS_INLINE static bool rule_eval(const NftRule& r, NftPktInfo& pkt, uint16_t cpu_id) {
  const NftMatch* m = r.spec.matches.data();
  const int n = static_cast<int>(r.spec.matches.size());
  const int counter_at = r.spec.counter_at;
  for (int i = 0; i < n; ++i) {
    if (i == counter_at) r.counter->add(cpu_id, pkt.len);
    if (!match_one(m[i], pkt)) return false;
  }
  if (counter_at == n) r.counter->add(cpu_id, pkt.len);
  return true;
}

bool nft_rule_eval(const NftRule& r, NftPktInfo& pkt, uint16_t cpu_id) { return rule_eval(r, pkt, cpu_id); }

// The policy of the base chain a walk started in.
static NfVerdict chain_policy(const NftChain* base) {
  return static_cast<NfVerdict>(base->policy.load(std::memory_order_relaxed));
}

// The rest of nft_do_chain once a rule said jump, goto, return or a verdict map's element
// did: `v` is that verdict, from rule i of snapshot s. jump pushes the rest of the chain
// (NFT_JUMP_STACK_SIZE deep), goto does not, return or a regular chain's end pops; the
// base chain's end is its policy. Out of line: chains without jumps never come here.
PP_NOINLINE static NfVerdict chain_walk(const NftChain* base, const NftRuleSnapshot* s, size_t i, NftVerdictData v,
                                        NftPktInfo& pkt, uint16_t cpu) {
  struct Frame {
    const NftRuleSnapshot* s;
    size_t i;
  } stack[kNftJumpStack];
  unsigned sp = 0;
  for (;;) {
    switch (v.code) {
      case NftRuleVerdict::ACCEPT: return NfVerdict::ACCEPT;
      case NftRuleVerdict::DROP: return NfVerdict::DROP;
      case NftRuleVerdict::CONTINUE: ++i; break;
      case NftRuleVerdict::JUMP:
        if (PP_UNLIKELY(sp == kNftJumpStack)) return NfVerdict::DROP;  // refused when added; never here
        stack[sp++] = {s, i + 1};
        s = v.chain->snapshot.get();
        i = 0;
        break;
      case NftRuleVerdict::GOTO:
        s = v.chain->snapshot.get();
        i = 0;
        break;
      case NftRuleVerdict::RETURN:
      case NftRuleVerdict::VMAP: i = s->rules.size(); break;
    }
    for (;;) {  // the next rule that matches, popping at each chain's end
      if (i >= s->rules.size()) {
        if (sp == 0) return chain_policy(base);
        --sp;
        s = stack[sp].s;
        i = stack[sp].i;
        continue;
      }
      const NftRule* r = s->rules[i];
      if (rule_eval(*r, pkt, cpu)) {
        v = r->verdict.code == NftRuleVerdict::VMAP ? pkt.vmap : r->verdict;
        break;
      }
      ++i;
    }
  }
}

// mirrors nft_do_chain for a netdev base chain: rules in order, the first verdict wins,
// else the chain policy; jumps and verdict maps continue in chain_walk. Reads only
// published snapshots; allocates nothing.
NfVerdict nft_chain_hook(void* priv, Packet* p, const NfHookState& st) {
  const NftChain* c = static_cast<const NftChain*>(priv);
  const NftRuleSnapshot* s = c->snapshot.get();
  const size_t n = s->rules.size();
  if (n == 0) return chain_policy(c);
  // On ingress the kernel's skb->data is past the Ethernet header (eth_type_trans), so
  // counters count the frame without it; on egress it still starts at the MAC header.
  NftPktInfo pkt(p, st.hook == NfHookNum::INGRESS && p->len >= kEthHlen ? kEthHlen : 0, st.cpu);
  const uint16_t cpu = st.cpu->id();
  for (size_t i = 0; i < n; ++i) {
    const NftRule* r = s->rules[i];
    if (!rule_eval(*r, pkt, cpu)) continue;
    switch (r->verdict.code) {
      case NftRuleVerdict::CONTINUE: continue;
      case NftRuleVerdict::ACCEPT: return NfVerdict::ACCEPT;
      case NftRuleVerdict::DROP: return NfVerdict::DROP;
      default: return chain_walk(c, s, i, r->verdict.code == NftRuleVerdict::VMAP ? pkt.vmap : r->verdict, pkt, cpu);
    }
  }
  return chain_policy(c);
}

}  // namespace pktpath::nf
