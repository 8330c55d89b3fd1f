// A filter chain: prefs in order, nodes by handle (net/sched/cls_api.c).
#include "sched/tcf_chain.h"

#include <string>

#include "sched/clsact.h"

namespace pktpath::tc {

std::vector<const TcFilter*> TcfChain::nodes_of(const TcfProto& tp) {
  std::vector<const TcFilter*> v;
  v.reserve(tp.nodes.size());
  for (const auto& [h, f] : tp.nodes) v.push_back(f.get());
  return v;
}

void TcfChain::rebind(TcfProto& tp, RcuRetireList& retired) {
  std::unique_ptr<TcFilter> fresh = tp.nodes.empty() ? nullptr : tp.ops->pref_ops->bind(nodes_of(tp));
  tp.bound.swap(fresh);
  retired.retire(std::move(fresh));
}

// mirrors tc_new_tfilter: tcf_auto_prio, tcf_chain_tp_find (one kind and protocol per
// pref), the handle (the kind's ->change picks a free one), then the node in its place.
Result<TcfChain::Added> TcfChain::add(Net& net, const FilterSpec& spec_in, bool replace, RcuRetireList& retired) {
  const FilterOps* ops = tcf_proto_lookup_ops(spec_in.kind());
  if (!ops) return unexpected(std::string("unknown filter kind \"") + spec_in.kind() + "\"", spec_in.kind());
  std::unique_ptr<FilterSpec> owned = spec_in.clone();
  FilterSpec& spec = *owned;
  // tcf_auto_prio: 0xC000 for the first filter, then one less than the current first.
  if (spec.pref == 0) {
    const uint32_t first = protos_.empty() ? 0 : protos_.begin()->first;
    spec.pref = protos_.empty() ? 49152 : (first > 1 ? first - 1 : 1);
  }
  auto pit = protos_.find(spec.pref);
  TcfProto* tp = pit == protos_.end() ? nullptr : &pit->second;
  const PrefOps* pops = ops->pref_ops;
  if (pops && pops->check_add) {
    std::vector<const TcFilter*> pref;
    if (tp && tp->ops == ops) pref = nodes_of(*tp);
    auto checked = pops->check_add(spec, pref, common_for(ops));
    if (!checked) return unexpected(checked.error());
    switch (*checked) {
      case PrefOps::Add::Nothing:
        return Added{spec.pref, pref.front()->handle()};
      case PrefOps::Add::Node:
        break;
    }
  }
  // `replace` without a handle means the pref's (first) filter, if it has one.
  if (spec.handle == 0 && replace && tp && !tp->nodes.empty()) spec.handle = tp->nodes.begin()->first;
  if (tp && !tp->nodes.empty() && (tp->ops != ops || tp->protocol != spec.protocol) &&
      !(replace && tp->nodes.size() == 1 && tp->nodes.count(spec.handle)))
    return unexpected("Filter kind and protocol do not match those at pref " + std::to_string(spec.pref) + " (" +
                      tp->ops->kind + ")");
  if (spec.handle == 0) {
    const uint32_t max = tp && !tp->nodes.empty() ? tp->nodes.rbegin()->first : 0;
    spec.handle = ops->new_handle ? ops->new_handle(max) : max + 1;
  }
  const bool exists = tp && tp->nodes.count(spec.handle);
  if (exists && !replace)
    return unexpected("Exclusivity flag on, cannot modify (filter pref " + std::to_string(spec.pref) + " handle 0x" +
                      std::to_string(spec.handle) + " exists)");
  auto created = ops->create(spec, net);
  if (!created) return unexpected(created.error());
  std::unique_ptr<TcFilter> f = std::move(*created);
  const Added added{spec.pref, spec.handle};
  if (!tp) tp = &protos_[spec.pref];
  if (tp->nodes.empty()) {
    tp->ops = ops;
    tp->protocol = spec.protocol;
  }
  if (exists) {
    // The swap is one publication: a kind with a bound object replaces the node in it
    // where it can, else is rebound around the new node.
    std::unique_ptr<TcFilter>& slot = tp->nodes[spec.handle];
    forget(tp->ops, *slot);
    remember(ops, *f);
    const bool in_place = pops && pops->bind_replace && tp->bound && tp->ops == ops;
    if (in_place) pops->bind_replace(*tp->bound, *slot, *f, retired);
    slot.swap(f);
    tp->ops = ops;
    tp->protocol = spec.protocol;
    if (pops && !in_place)
      rebind(*tp, retired);
    else if (!pops)
      retired.retire(std::move(tp->bound));
    retired.retire(std::move(f));
    return added;
  }
  if (pops && pops->bind_add && tp->bound) {
    if (Status s = pops->bind_add(*tp->bound, *f, retired); !s) {
      if (tp->nodes.empty()) protos_.erase(spec.pref);
      return unexpected(s.error());
    }
    remember(ops, *f);
    tp->nodes.emplace(spec.handle, std::move(f));
  } else {
    remember(ops, *f);
    tp->nodes.emplace(spec.handle, std::move(f));
    if (pops) rebind(*tp, retired);
  }
  ++count_;
  return added;
}

TcfChain::~TcfChain() {
  if (commons_.use_count() > 1)
    for (const auto& [pref, tp] : protos_)
      for (const auto& [h, f] : tp.nodes) forget(tp.ops, *f);
}

void TcfChain::share_commons(TcfChain& with) { commons_ = with.commons_; }

PrefCommon* TcfChain::common_for(const FilterOps* ops) {
  if (!ops->pref_ops || !ops->pref_ops->make_common) return nullptr;
  std::unique_ptr<PrefCommon>& c = (*commons_)[ops];
  if (!c) c = ops->pref_ops->make_common();
  return c.get();
}

void TcfChain::remember(const FilterOps* ops, const TcFilter& node) {
  if (PrefCommon* c = common_for(ops)) c->remember(node);
}

void TcfChain::forget(const FilterOps* ops, const TcFilter& node) {
  if (PrefCommon* c = common_for(ops)) c->forget(node);
}

// mirrors tc_del_tfilter (a kind with PrefOps says which nodes go with the one named).
Status TcfChain::del(uint32_t pref, uint32_t handle, RcuRetireList& retired) {
  const auto not_found = [] { return unexpected("Filter with specified priority/protocol not found"); };
  if (pref == 0) {
    if (empty()) return not_found();
    clear(retired);
    return {};
  }
  auto pit = protos_.find(pref);
  if (pit == protos_.end() || pit->second.nodes.empty()) return not_found();
  TcfProto& tp = pit->second;
  const PrefOps* pops = tp.ops->pref_ops;
  if (handle == 0) {
    drop_pref(pit, retired);
    return {};
  }
  std::vector<uint32_t> gone{handle};
  if (pops) {
    if (Status st = pops->del_set(handle, nodes_of(tp), &gone); !st) return st;
  }
  size_t removed = 0;
  std::unique_ptr<FilterSpec> gone_spec;  // one node deleted, for the common's verdict on the rest
  for (uint32_t h : gone) {
    auto it = tp.nodes.find(h);
    if (it == tp.nodes.end()) continue;
    if (pops && pops->bind_del && tp.bound && gone.size() == 1) pops->bind_del(*tp.bound, *it->second, retired);
    forget(tp.ops, *it->second);
    if (!gone_spec) gone_spec = it->second->spec_base().clone();
    retired.retire(std::move(it->second));
    tp.nodes.erase(it);
    ++removed;
  }
  if (!removed) return not_found();
  count_ -= removed;
  PrefCommon* common = common_for(tp.ops);
  if (common && common->pref_goes(*gone_spec)) {
    drop_pref(pit, retired);
    return {};
  }
  if (tp.nodes.empty() && common && pops->husk) {
    std::unique_ptr<TcFilter> husk = pops->husk(*gone_spec);
    remember(tp.ops, *husk);
    tp.nodes.emplace(husk->handle(), std::move(husk));
    ++count_;
  }
  if (tp.nodes.empty()) {
    retired.retire(std::move(tp.bound));
    protos_.erase(pit);
  } else if (pops && !(pops->bind_del && gone.size() == 1)) {
    rebind(tp, retired);
  }
  return {};
}

void TcfChain::drop_pref(std::map<uint32_t, TcfProto>::iterator pit, RcuRetireList& retired) {
  TcfProto& tp = pit->second;
  for (auto& [h, f] : tp.nodes) {
    forget(tp.ops, *f);
    retired.retire(std::move(f));
  }
  count_ -= tp.nodes.size();
  retired.retire(std::move(tp.bound));
  protos_.erase(pit);
}

void TcfChain::clear(RcuRetireList& retired) {
  while (!protos_.empty()) drop_pref(protos_.begin(), retired);
  count_ = 0;
}

std::unique_ptr<const Miniq> TcfChain::make_miniq(TcStats* qstats) const {
  if (empty()) return nullptr;
  auto m = std::make_unique<Miniq>();
  m->qstats = qstats;
  m->all_bpf = true;
  for (const auto& [pref, tp] : protos_) {
    if (tp.bound) {
      m->filters.push_back(tp.bound.get());
      m->all_bpf = false;
      continue;
    }
    for (const auto& [h, f] : tp.nodes) {
      m->filters.push_back(f.get());
      m->all_bpf = m->all_bpf && f->is_bpf();
    }
  }
  if (count_ == 1) {
    const TcFilter* only = m->filters.front();
    if (only->protocol() == kEthPAll && only->is_bpf()) {
      const auto* b = static_cast<const BpfFilter*>(only);
      if (b->spec().da) m->only_da = b;
    }
  }
  return m;
}

}  // namespace pktpath::tc
