// u32 (net/sched/cls_u32.c), the one-level form.
#include "sched/cls_u32.h"

#include <cstring>

namespace pktpath::tc {
namespace {

class U32Filter final : public FilterOf<U32Spec> {
 public:
  using FilterOf::FilterOf;
  // mirrors u32_classify for one knode of a table without links: every key must hold;
  // a key past the packet's end ends the walk without a match (skb_header_pointer
  // failing: "goto out"); a non-terminal node never matches.
  int classify(const TcContext& ctx, Packet* p, TcResult& res) const override {
    TcStats::Slot& s = count(ctx, p);
    const int nh = tc_network_offset(p);
    if (nh < 0) return TC_ACT_UNSPEC;
    const uint8_t* d = p->data();
    const int64_t n = p->headlen();
    for (const U32Key& k : spec_.keys) {
      const int64_t toff = nh + static_cast<int64_t>(k.off);
      if (toff < 0 || toff + 4 > n) return TC_ACT_UNSPEC;
      uint32_t w;
      std::memcpy(&w, d + toff, 4);
      if ((w ^ k.val) & k.mask) return TC_ACT_UNSPEC;
    }
    s.matched.add();  // the keys held (tc_u32_pcnt's rhit), terminal or not
    if (!spec_.terminal) return TC_ACT_UNSPEC;
    return exts_exec(ctx, p, spec_, res);
  }
};

// mirrors u32_change for a new knode of 800:
std::unique_ptr<TcFilter> u32_create(const FilterSpec& spec, Net&, std::string* err) {
  const auto* s = filter_spec_as<U32Spec>(spec, err);
  if (!s) return nullptr;
  if (u32_htid(s->handle) != kU32RootHt || u32_hash(s->handle) != 0 || u32_node(s->handle) == 0) {
    if (err) *err = "u32: only nodes of the default table 800: bucket 0 are supported (handle 800::N)";
    return nullptr;
  }
  for (const U32Key& k : s->keys)
    if (k.off % 4 != 0) {
      if (err) *err = "u32: key offsets must be multiples of 4";
      return nullptr;
    }
  return std::make_unique<U32Filter>(*s);
}

// gen_new_kid: node ids from 0x800 up, within 800:
uint32_t u32_new_handle(uint32_t max) {
  const uint32_t node = max ? u32_node(max) + 1 : 0x800;
  return kU32RootHt | (node < 0x800 ? 0x800 : node);
}

const FilterRegistrar kU32{{U32Spec::kKind, u32_create, u32_new_handle}};  // cls_u32_ops

}  // namespace
}  // namespace pktpath::tc
