// nftables rules of the netdev family: typed matches, a rule, and its evaluation.
//
// Mirrors the expressions nft compiles these matches to (net/netfilter/nft_meta.c,
// nft_payload.c, nft_cmp.c, nft_range.c, nft_counter.c, nft_immediate.c) and the rule
// walk of nft_do_chain (net/netfilter/nf_tables_core.c), folded into one typed match per
// selector instead of a register machine.
//
// Evaluation reads the packet from Packet::data(), which must point at the Ethernet
// header (true at the egress hook; the receive path must present ingress packets the same
// way). It never reads beyond Packet::len and never allocates.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/counter.h"
#include "core/cpu.h"
#include "core/packet.h"
#include "core/result.h"

namespace pktpath::nf {

enum class NftKey : uint8_t {
  META_MARK,      // skb->mark
  META_PROTOCOL,  // skb->protocol (ethertype)
  IP_SADDR,
  IP_DADDR,
  TCP_SPORT,
  TCP_DPORT,
  UDP_SPORT,
  UDP_DPORT,
  META_L4PROTO,  // the transport protocol (IPv4's, or IPv6's after its extension headers)
  IP_PROTOCOL,
  IP_LENGTH,     // total length
  IP_DSCP,       // the TOS byte's upper six bits
  ETHER_TYPE,    // the frame's type field (offset 12)
  IP6_NEXTHDR,   // the IPv6 header's own next-header field
  // Compared as bytes (NftMatch::bytes): addresses wider than 32 bits.
  ETHER_SADDR,
  ETHER_DADDR,
  IP6_SADDR,
  IP6_DADDR,
};

// Keys whose value is an address of more than 32 bits, compared byte by byte.
inline bool nft_key_is_bytes(NftKey k) {
  return k == NftKey::ETHER_SADDR || k == NftKey::ETHER_DADDR || k == NftKey::IP6_SADDR || k == NftKey::IP6_DADDR;
}

// value matches when (x & mask) is in [lo, hi]; `neg` inverts (nft's "!="). A packet that
// lacks the header a key reads (not IPv4, not TCP, a later fragment...) matches neither
// the key nor its negation, as in nft where the implicit protocol dependency fails first.
// Byte keys (nft_key_is_bytes) match when (field & bytes_mask) == bytes over nbytes.
// A set lookup: the selector's keys (a concatenation when more than one) looked up in a
// named set (`@name`) or in the rule's own anonymous set (`{ ... }`); with vmap, the
// element's verdict ends the rule.
struct NftSetSpec;
class NftSet;
// A rule's `add @set { KEY [timeout T] [counter] }` / `update @set { ... }` (nft_dynset)
// is a lookup spec too, with `dynset` set: it adds the packet's key to a named set.
struct NftLookupSpec {
  std::vector<NftKey> keys;
  std::string set;                   // "" for an anonymous set
  bool vmap = false;
  std::shared_ptr<NftSetSpec> anon;  // the anonymous set's declaration and elements
  bool dynset = false;               // add|update @set { ... }
  bool update = false;               // update, not add
  uint64_t timeout_ns = 0;           // dynset: the new element's timeout (0: the set's)
  bool elem_counter = false;         // dynset: the new element gets a counter
  bool mark_set = false;             // meta mark set KEY map @m|{ K : V }: the value is the mark
};

// How deep jumps nest (NFT_JUMP_STACK_SIZE).
inline constexpr unsigned kNftJumpStack = 16;

// The NftMatch::nbytes of a set lookup, and of `meta mark set VALUE` (value in lo).
inline constexpr uint8_t kNftLookup = 0xff;
inline constexpr uint8_t kNftSetMark = 0xfe;

struct NftMatch {
  NftKey key = NftKey::META_MARK;
  bool neg = false;
  uint8_t prefix = 32;  // address keys: prefix length, for printing
  uint8_t nbytes = 0;   // byte keys: 6 (Ethernet) or 16 (IPv6)
  uint32_t mask = 0xffffffffu;
  uint32_t lo = 0;  // host byte order
  uint32_t hi = 0;
  std::array<uint8_t, 16> bytes{};       // network order, already masked
  std::array<uint8_t, 16> bytes_mask{};  // the prefix's mask
  std::shared_ptr<const NftLookupSpec> lookup;  // nbytes == kNftLookup
  NftSet* set = nullptr;  // the set it reads (or a dynset writes), bound when the rule is added
};

// How a rule ends when all its matches hold. VMAP: the verdict is the element a verdict
// map lookup found (NftPktInfo::vmap).
enum class NftRuleVerdict : uint8_t { CONTINUE, ACCEPT, DROP, JUMP, GOTO, RETURN, VMAP };

// A verdict as a rule or a verdict map's element gives it: jump and goto name a chain of
// the same table.
struct NftChain;
struct NftVerdictData {
  NftRuleVerdict code = NftRuleVerdict::CONTINUE;
  uint32_t value = 0;  // a data map's element: its mark
  const NftChain* chain = nullptr;  // JUMP, GOTO
};

// counter statement: one slot per Cpu id, each written only by that Cpu's thread (as the
// kernel's per-cpu nft_counter), summed when listed.
class NftCounter {
 public:
  void add(uint16_t cpu_id, uint32_t bytes) {
    Slot& s = slots_[cpu_id % kMaxCpus];
    s.packets.add();
    s.bytes.add(bytes);
  }
  uint64_t packets() const;
  uint64_t bytes() const;
  void set_initial(uint64_t packets, uint64_t bytes) { base_packets_ = packets; base_bytes_ = bytes; }

 private:
  struct Slot {
    Counter packets;
    Counter bytes;
  };
  std::array<Slot, kMaxCpus> slots_{};
  uint64_t base_packets_ = 0;  // "counter packets N bytes M" given on the command line
  uint64_t base_bytes_ = 0;
};

// What a rule says, as parsed. `counter_at` is the number of matches written before the
// `counter` statement (-1: no counter): the counter counts packets that got that far.
struct NftRuleSpec {
  std::vector<NftMatch> matches;
  int counter_at = -1;
  uint64_t counter_packets = 0;
  uint64_t counter_bytes = 0;
  NftRuleVerdict verdict = NftRuleVerdict::CONTINUE;
  std::string target;  // JUMP, GOTO: the chain
};

// A rule in a chain. Immutable after creation except its counter.
struct NftRule {
  NftRule();
  ~NftRule();
  uint64_t handle = 0;
  NftRuleSpec spec;
  std::unique_ptr<NftCounter> counter;  // set iff spec.counter_at >= 0
  NftVerdictData verdict;               // spec.verdict with its chain resolved
  std::vector<std::unique_ptr<NftSet>> anon_sets;  // the rule's `{ ... }` sets
};

// Headers parsed lazily, at most once per packet per chain walk (nft_pktinfo).
struct NftPktInfo {
  explicit NftPktInfo(Packet* pkt, uint32_t mac_len = 0, Cpu* c = nullptr)
      : p(pkt), cpu(c), len(pkt->len - mac_len) {}
  Packet* p;  // written by `meta mark set`
  Cpu* cpu;      // whose clock set timeouts read (null: the monotonic clock)
  uint32_t len;  // what counters count: skb->len, without the MAC header on ingress
  bool l3_done = false;
  bool ipv4 = false;   // a valid IPv4 header at offset 14
  bool ipv6 = false;   // a valid IPv6 header there
  bool l4 = false;     // ports readable (TCP or UDP, first fragment, header present)
  uint8_t l4proto = 0;  // the transport protocol (IPv6: after the extension headers)
  uint8_t nexthdr = 0;  // IPv6's own next-header field
  uint32_t nhoff = 0;   // where the network header starts
  uint8_t tos = 0;
  uint16_t tot_len = 0;
  uint32_t saddr = 0, daddr = 0;  // host order
  uint16_t sport = 0, dport = 0;  // host order
  NftVerdictData vmap;            // what the last verdict map lookup found
};

// The packet's protocol as `meta protocol` sees it (host order): skb->protocol, or, when
// the sender left it 0, the Ethernet type field.
uint16_t nft_packet_protocol(const Packet* p);

// Does the packet get through every match of the rule? Counts the counter on the way.
bool nft_rule_eval(const NftRule& r, NftPktInfo& pkt, uint16_t cpu_id);

}  // namespace pktpath::nf
