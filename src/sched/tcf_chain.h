// A filter chain (struct tcf_chain in net/sched/cls_api.c): its prefs in order, each a
// tcf_proto holding one kind's nodes by handle. Writers (holding the Net's tc mutex) add
// and delete nodes in O(log n); the datapath runs a Miniq built from the chain, one entry
// per node, or one per pref for a kind whose nodes of a pref make one structure
// (PrefOps: u32's tables, flower's masks). Such a pref's bound object is kept across
// publications and rebuilt only when that pref changes, or updated in place when the
// kind can (flower adds and removes single nodes under RCU).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/rcu.h"
#include "core/result.h"
#include "sched/cls_api.h"

namespace pktpath {
class Net;
}

namespace pktpath::tc {

struct Miniq;

// One pref (struct tcf_proto): its kind, protocol and nodes.
struct TcfProto {
  const FilterOps* ops = nullptr;
  uint16_t protocol = 0;
  std::map<uint32_t, std::unique_ptr<TcFilter>> nodes;  // by handle
  std::unique_ptr<TcFilter> bound;                      // PrefOps kinds: what runs for the pref
};

class TcfChain {
 public:
  TcfChain() = default;
  // The nodes go with the list; a common shared with other lists forgets them.
  ~TcfChain();
  TcfChain(const TcfChain&) = delete;
  TcfChain& operator=(const TcfChain&) = delete;

  // mirrors tc_new_tfilter's chain part (tcf_auto_prio, tcf_chain_tp_find, ->change): a
  // new node, or with `replace` the one at (pref, handle) swapped. Replaced and unbound
  // objects go to `retired`. Returns the pref and handle chosen.
  struct Added {
    uint32_t pref = 0, handle = 0;
  };
  Result<Added> add(Net& net, const FilterSpec& spec, bool replace, RcuRetireList& retired);
  // mirrors tc_del_tfilter: pref 0 = every node, handle 0 = every node of the pref.
  Status del(uint32_t pref, uint32_t handle, RcuRetireList& retired);
  // Every node and bound object to `retired` (the chain is unpublished first).
  void clear(RcuRetireList& retired);

  // This list and `with` keep one PrefCommon per kind from now on (the lists of one
  // qdisc; both still empty).
  void share_commons(TcfChain& with);

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }

  // What the datapath runs for the chain now, counting into `qstats`; nullptr when empty.
  std::unique_ptr<const Miniq> make_miniq(TcStats* qstats) const;

  // Every node in dump order: by pref, then by handle or as the kind's walk dumps them
  // (PrefOps::dump_order).
  template <class F>
  void for_each(F&& fn) const {
    for (const auto& [pref, tp] : protos_) {
      if (tp.ops && tp.ops->pref_ops && tp.ops->pref_ops->dump_order) {
        std::vector<const TcFilter*> v = nodes_of(tp);
        tp.ops->pref_ops->dump_order(v);
        for (const TcFilter* f : v) fn(*f);
        continue;
      }
      for (const auto& [handle, f] : tp.nodes) fn(*f);
    }
  }
  template <class F>
  void for_each_mut(F&& fn) {
    for (auto& [pref, tp] : protos_)
      for (auto& [handle, f] : tp.nodes) fn(*f);
  }

 private:
  static std::vector<const TcFilter*> nodes_of(const TcfProto& tp);
  // Rebuilds a PrefOps pref's bound object from its nodes (the old one retired).
  static void rebind(TcfProto& tp, RcuRetireList& retired);

  // The qdisc's state for a PrefOps kind (PrefOps::make_common), told of every node.
  PrefCommon* common_for(const FilterOps* ops);
  void remember(const FilterOps* ops, const TcFilter& node);
  void forget(const FilterOps* ops, const TcFilter& node);
  // Every node of the pref forgotten and retired, and the pref erased.
  void drop_pref(std::map<uint32_t, TcfProto>::iterator pit, RcuRetireList& retired);

  using Commons = std::map<const FilterOps*, std::unique_ptr<PrefCommon>>;
  std::map<uint32_t, TcfProto> protos_;  // by pref
  std::shared_ptr<Commons> commons_ = std::make_shared<Commons>();  // shared by the qdisc's lists
  size_t count_ = 0;
};

}  // namespace pktpath::tc
