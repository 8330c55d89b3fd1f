// u32 (net/sched/cls_u32.c): 32-bit value/mask keys at offsets from the network header,
// all ANDed in one selector. One level: nodes of the default table 800: (bucket 0),
// handles 800::800, 800::801, ...; no divisor, hashkey or link.
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
inline constexpr uint32_t u32_htid(uint32_t h) { return h & 0xfff00000u; }  // TC_U32_HTID
inline constexpr uint32_t u32_hash(uint32_t h) { return (h >> 12) & 0xffu; }  // TC_U32_HASH
inline constexpr uint32_t u32_node(uint32_t h) { return h & 0xfffu; }         // TC_U32_NODE

struct U32Spec : FilterSpecOf<U32Spec> {
  static constexpr const char* kKind = "u32";
  std::vector<U32Key> keys;  // tc_u32_sel.keys
  bool terminal = false;     // TC_U32_TERMINAL: a classid or an action was given
};

}  // namespace pktpath::tc
