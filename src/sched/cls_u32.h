// u32 (net/sched/cls_u32.c): 32-bit value/mask keys at offsets from the network header,
// all ANDed in one selector, in hash tables: the pref's root table 800: (one bucket) and
// tables of 1..256 buckets made with `divisor`, which a matching node continues in with
// `link` (the bucket picked by `hashkey mask M at OFF`), eight links deep at most.
// No variable offsets (offset, nexthdr+, eat), marks or indev.
//
// Every node and table is an entry of the pref's filter list (handle HT:BKT:NODE, a
// table's HT:); the datapath runs the tables bound from them (PrefOps). Table ids are
// numbered across the qdisc's filter lists as the kernel's tc_u_common does (the first
// pref's root is 800:, a later pref's 801:, ...), but a table belongs to its pref:
// naming another pref's table (`ht`, `link`) is refused, where the kernel shares it.
#pragma once

#include <vector>

#include "sched/cls_api.h"

namespace pktpath::tc {

// tc_u32_key: val and mask in network order, as compared against the packet's 4 bytes
// at the network header + off (off a multiple of 4).
struct U32Key {
  uint32_t val = 0;
  uint32_t mask = 0;
  int32_t off = 0;
};

inline constexpr uint32_t kU32RootHt = 0x80000000u;  // 800:
inline constexpr uint32_t kU32MaxDepth = 8;          // TC_U32_MAXDEPTH
inline constexpr uint32_t u32_htid(uint32_t h) { return h & 0xfff00000u; }  // TC_U32_HTID
inline constexpr uint32_t u32_hash(uint32_t h) { return (h >> 12) & 0xffu; }  // TC_U32_HASH
inline constexpr uint32_t u32_node(uint32_t h) { return h & 0xfffu; }         // TC_U32_NODE
inline constexpr uint32_t u32_key(uint32_t h) { return h & 0xfffffu; }        // TC_U32_KEY

struct U32Spec : FilterSpecOf<U32Spec> {
  static constexpr const char* kKind = "u32";
  std::vector<U32Key> keys;  // tc_u32_sel.keys
  bool terminal = false;     // TC_U32_TERMINAL: a classid or an action was given
  uint32_t divisor = 0;      // TCA_U32_DIVISOR: this entry is a table of that many buckets
  uint32_t htid = 0;         // TCA_U32_HASH (`ht HT:BKT:`): the table and bucket; 0: the root
  uint32_t link = 0;         // TCA_U32_LINK: the table a match continues in; 0: none
  uint32_t hmask = 0;        // tc_u32_sel.hmask (network order): the bits that pick the bucket
  int32_t hoff = 0;          // tc_u32_sel.hoff: where the hashed word is
  uint32_t root = kU32RootHt;  // the pref's root table (u32_init's root_ht); set by check_add
  uint32_t seq = 0;            // a table's creation order in its pref (the root's 0): dumps go newest first
};

}  // namespace pktpath::tc
