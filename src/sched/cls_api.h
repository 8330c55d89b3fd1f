// The classifier interface (net/sched/cls_api.c, struct tcf_proto_ops): what every filter
// kind shares — its common spec (pref, handle, protocol, classid, actions), the filter
// object the tc hooks run, and the kind registry (register_tcf_proto_ops). Each kind is
// one cls_<kind>.{h,cc} that registers itself with a FilterRegistrar.
//
// Concurrency: a published filter is immutable except for its per-Cpu statistics (and
// what a kind documents, e.g. cls_bpf's program pointer); it may run on any number of
// Cpus at once and is freed a grace period after it was unpublished.
#pragma once

#include <arpa/inet.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/packet.h"
#include "core/rcu.h"
#include "core/result.h"
#include "sched/act_api.h"
#include "sched/qdisc_options.h"

namespace pktpath {
class Net;
}

namespace pktpath::tc {

inline constexpr uint16_t kEthPAll = 0x0003;  // ETH_P_ALL

// What `tc filter add ... KIND ...` asks for, already parsed: the words every kind takes
// (tcf_proto's pref/protocol, the handle, tcf_exts and the classid of tcf_result). Each
// kind's spec derives from it (through FilterSpecOf) and adds its own keys.
struct FilterSpec : KindOptionsBase {
  uint32_t pref = 0;    // 0: automatic (49152, then one less than the current first)
  uint32_t handle = 0;  // 0: automatic (the kind's first handle, then the next)
  uint16_t protocol = kEthPAll;  // host order; kEthPAll matches every packet
  uint32_t classid = 0;
  bool classid_set = false;
  bool skip_hw = false;  // accepted and shown; pktpath has no offload
  ActionList actions;

  virtual const char* kind() const = 0;
  virtual std::unique_ptr<FilterSpec> clone() const = 0;
};

// The kind's spec type T names its kind with `static constexpr const char* kKind`.
template <class T>
struct FilterSpecOf : FilterSpec {
  const char* kind() const override { return T::kKind; }
  std::unique_ptr<FilterSpec> clone() const override {
    return std::make_unique<T>(static_cast<const T&>(*this));
  }
};

// One filter at a (pref, handle) (a tcf_proto's node: cls_bpf_prog, u32 knode,
// cls_fl_filter, cls_mall_head). pktpath flattens tcf_proto per pref with its nodes into
// one list in run order.
class TcFilter {
 public:
  virtual ~TcFilter() = default;
  // mirrors tcf_proto_ops->classify: TC_ACT_UNSPEC (< 0) to go on with the next filter,
  // else the verdict; res.classid is what the filter matched with.
  virtual int classify(const TcContext& ctx, Packet* p, TcResult& res) const = 0;
  virtual const char* kind() const = 0;
  // The spec the filter was made from (pref and handle as chosen), for show.
  virtual const FilterSpec& spec_base() const = 0;

  uint32_t pref() const { return pref_; }
  uint32_t handle() const { return handle_; }
  uint16_t protocol() const { return protocol_; }
  // The hook runs cls_bpf without an indirect call (INDIRECT_CALL_1 in the kernel's
  // tc_wrapper.h): set by cls_bpf only.
  bool is_bpf() const { return is_bpf_; }
  // Packets it ran on, bytes; matched; drops (cls_bpf da SHOT).
  mutable TcStats stats;

 protected:
  TcFilter(const FilterSpec& s, bool is_bpf)
      : pref_(s.pref), handle_(s.handle), protocol_(s.protocol), is_bpf_(is_bpf) {}
  // mirrors tcf_exts_exec after a match: the filter's classid into res, then the actions
  // (none: TC_ACT_OK); a negative pipeline verdict (continue) goes on with the next filter.
  static int exts_exec(const TcContext& ctx, Packet* p, const FilterSpec& s, TcResult& res) {
    res.classid = s.classid;
    const int ret = tcf_action_exec(ctx, p, s.actions, res);
    return ret < 0 ? TC_ACT_UNSPEC : ret;
  }
  // The per-Cpu count every classify starts with.
  TcStats::Slot& count(const TcContext& ctx, const Packet* p) const {
    TcStats::Slot& s = stats.at(ctx.cpu);
    s.packets.add();
    s.bytes.add(tc_skb_len(ctx, p));
    return s;
  }

 private:
  uint32_t pref_, handle_;
  uint16_t protocol_;
  bool is_bpf_;
};

// The usual shape of a kind's filter: it keeps a copy of its spec.
template <class Spec>
class FilterOf : public TcFilter {
 public:
  explicit FilterOf(const Spec& s) : TcFilter(s, false), spec_(s) {}
  const char* kind() const override { return Spec::kKind; }
  const FilterSpec& spec_base() const override { return spec_; }
  const Spec& spec() const { return spec_; }

 protected:
  Spec spec_;
};

// The spec as the kind's type, or "KIND: bad options".
template <class Spec>
Result<const Spec*> filter_spec_as(const FilterSpec& s) {
  const auto* t = dynamic_cast<const Spec*>(&s);
  if (!t) return unexpected(std::string(Spec::kKind) + ": bad options");
  return t;
}

// A kind's state shared by the prefs of every filter list of one qdisc (u32's
// tc_u_common, which the kernel keys by the qdisc: clsact's ingress and egress share
// it, an htb qdisc's list and its classes' too), told of every node added and removed.
struct PrefCommon {
  virtual ~PrefCommon() = default;
  virtual void remember(const TcFilter& node) = 0;
  virtual void forget(const TcFilter& node) = 0;
  // After a delete in the pref of `gone` (one of the nodes deleted, already forgotten):
  // whether the rest of the pref goes too (the kernel's `*last` from ->delete).
  virtual bool pref_goes(const FilterSpec& /*gone*/) const { return false; }
};

// A kind whose nodes of one pref make one structure (u32's hash tables and the knodes
// in their buckets; the kernel's tcf_proto with its private data): the pref's list
// holds every node (shown and deleted by handle), and the datapath runs one object bound
// from them, rebuilt when the pref changes or updated in place (bind_add, bind_del).
struct PrefOps {
  enum class Add { Nothing, Node };
  // Checks a new node against the pref's others (`pref`: in run order) and completes its
  // handle, or refuses it; Nothing when the line asks only for what exists (an empty u32
  // line on a pref that has nodes; never for an empty pref). `common`: the block's state
  // for the kind (make_common's), nullptr without one. nullptr: every node is added.
  Result<Add> (*check_add)(FilterSpec& spec, const std::vector<const TcFilter*>& pref, PrefCommon* common);
  // The handles deleting `handle` removes (a table takes its nodes); an error when the
  // kind refuses (a table still linked to).
  Status (*del_set)(uint32_t handle, const std::vector<const TcFilter*>& pref, std::vector<uint32_t>* gone);
  // What tcf_classify runs for the pref; it may keep pointers to the nodes, which outlive
  // every list published with them.
  std::unique_ptr<TcFilter> (*bind)(const std::vector<const TcFilter*>& pref);
  // Optional, for a kind that updates its bound object in place while readers run it
  // (flower's per-mask hash tables): add one new node (an error leaves `bound` as it
  // was), remove one. What readers may still see goes to `retired`.
  Status (*bind_add)(TcFilter& bound, const TcFilter& node, RcuRetireList& retired) = nullptr;
  void (*bind_del)(TcFilter& bound, const TcFilter& node, RcuRetireList& retired) = nullptr;
  // Optional with them: `now` takes `old`'s place (`tc filter replace`), readers seeing
  // one or the other throughout.
  void (*bind_replace)(TcFilter& bound, const TcFilter& old, const TcFilter& now, RcuRetireList& retired) = nullptr;
  // Optional: the pref's nodes (given in handle order) put in the order the kind's
  // tcf_proto_ops->walk dumps them (u32: newest table first, each with its knodes).
  void (*dump_order)(std::vector<const TcFilter*>& pref) = nullptr;
  // Optional: the kind's state for one qdisc's lists, made when its first node is added.
  std::unique_ptr<PrefCommon> (*make_common)() = nullptr;
  // Optional: what stays of a pref a delete emptied while the common keeps it (u32: the
  // pref's root table), made from `gone`, a node deleted. nullptr: an empty pref goes.
  std::unique_ptr<TcFilter> (*husk)(const FilterSpec& gone) = nullptr;
};

// What a filter is made with: its Net (engine settings) and the spec with pref and
// handle chosen.
struct FilterOps {
  const char* kind;
  // mirrors tcf_proto_ops->change for a new node: an error on a rejected spec.
  Result<std::unique_ptr<TcFilter>> (*create)(const FilterSpec& spec, Net& net);
  // The handle of a new node in a pref whose highest handle is `max` (0: empty pref):
  // 1, 2, ... by default; u32 numbers its nodes 800::800, 800::801, ...
  uint32_t (*new_handle)(uint32_t max) = nullptr;
  const PrefOps* pref_ops = nullptr;
};
// mirrors register_tcf_proto_ops: called by FilterRegistrar objects during static
// initialisation. A duplicate kind aborts.
void register_tcf_proto_ops(const FilterOps& ops);
struct FilterRegistrar {
  explicit FilterRegistrar(const FilterOps& ops) { register_tcf_proto_ops(ops); }
};
// mirrors tcf_proto_lookup_ops; nullptr for an unknown kind.
const FilterOps* tcf_proto_lookup_ops(std::string_view kind);
// The registered kinds, comma separated ("bpf, flower, matchall, u32"), for messages.
std::string tcf_proto_kinds();

// skb_protocol(skb, false): the outer protocol, the accelerated VLAN tag's when present.
PP_ALWAYS_INLINE uint16_t tc_skb_protocol(const Packet* p) {
  return PP_UNLIKELY(p->vlan_present) ? p->vlan_proto : p->protocol;
}

// skb_network_offset for a frame whose data starts at the Ethernet header: 14, or past
// in-band 802.1Q/802.1ad tags (which the receive path would have pulled into the
// accelerated tag). -1 when the frame is too short for its link header.
inline int tc_network_offset(const Packet* p) {
  const uint8_t* d = p->data();
  const uint32_t n = p->headlen();
  uint32_t off = 12;
  for (int tags = 0; tags < 2; ++tags) {
    if (off + 2 > n) return -1;
    const uint16_t et = static_cast<uint16_t>(d[off] << 8 | d[off + 1]);
    if (et != 0x8100 && et != 0x88a8) break;
    off += 4;
  }
  return off + 2 > n ? -1 : static_cast<int>(off + 2);
}

}  // namespace pktpath::tc
