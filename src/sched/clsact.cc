// clsact and the tc hook points (net/sched/sch_ingress.c, net/core/dev.c).
#include "sched/clsact.h"
#include "sched/clsact_inline.h"

#include <arpa/inet.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "core/dev_rx.h"
#include "core/dev_xmit.h"
#include "core/rcu.h"
#include "core/bpf_engine.h"
#include "core/net.h"
#include "core/sysctl.h"
#include "sched/qdisc.h"

namespace pktpath::tc {

namespace {

// Per-Net tc state (pernet): the writer lock (the rtnl lock's role), the devices that
// have hook state, deferred frees, and the egress switches.
struct TcDevState;

struct TcNet final : PernetState {
  std::mutex mu;
  // Devices that have hook state, for the engine switch and the egress_hooks A/B.
  std::set<TcDevState*> registry;
  // Deferred frees (call_rcu): what writers unpublished, freed in batches after a grace
  // period. Guarded by mu.
  RcuRetireList retired;
  std::atomic<bool> egress_hooks_on{true};
  // Forces the netfilter egress check into every device's egress hook, as if netfilter
  // egress were enabled everywhere with no chain (document 000's "with netfilter hook").
  std::atomic<int> nf_hook_point{0};  // NfHookPoint
};

const PernetRegistrar tc_pernet{{"tc", [](Net&) -> std::unique_ptr<PernetState> {
                                   return std::make_unique<TcNet>();
                                 }}};

TcNet& tc_net(Net& net) { return net.generic<TcNet>(tc_pernet.id); }

// Writer-side state of one device: the clsact's filters in run order and its counters,
// plus whether netfilter egress is in use. Lives in NetDevice::hooks_state(); made and
// destroyed while the device is in one Net.
struct TcDevState final : DevHooksState {
  explicit TcDevState(NetDevice& d) : dev(d), net(tc_net(d.net())) {}
  ~TcDevState() override;

  NetDevice& dev;
  TcNet& net;
  bool clsact = false;
  bool ingress_only = false;  // the `ingress` kind: no egress list
  bool nf_egress = false;
  std::vector<std::unique_ptr<TcFilter>> filters[2];
  TcStats qstats[2];

  std::atomic<const Miniq*>& head(Dir d) {
    return d == Dir::Egress ? dev.tc_egress() : dev.tc_ingress();
  }
};

template <typename T>
void retire(TcNet& tn, std::unique_ptr<T> obj) {
  tn.retired.retire(std::move(obj));
}

TcDevState::~TcDevState() {
  // The device is going away: no reader can run on it any more (NetDevice contract).
  std::lock_guard g(net.mu);
  net.registry.erase(this);
  for (Dir d : {Dir::Egress, Dir::Ingress}) rcu_publish(head(d), std::unique_ptr<const Miniq>());
  dev.set_egress_hook(nullptr, nullptr);
  net.retired.barrier();
}

TcDevState& state_of(NetDevice& dev) {
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s) {
    auto fresh = std::make_unique<TcDevState>(dev);
    s = fresh.get();
    dev.set_hooks_state(std::move(fresh));
    s->net.registry.insert(s);
  }
  return *s;
}

// Install or remove the egress hook pointer: present while tc egress filters or
// netfilter egress are in use (and the A/B switch allows it).
void update_egress_hook(TcDevState& s) {
  const bool want = s.net.egress_hooks_on.load(std::memory_order_relaxed) &&
                    (s.nf_egress || (s.clsact && !s.filters[0].empty()));
  const auto point = static_cast<NfHookPoint>(s.net.nf_hook_point.load(std::memory_order_relaxed));
  EgressHookFn fn = dev_egress_tc_only;
  if (point == NfHookPoint::BeforeFix)
    fn = dev_egress_hooks_outline;
  else if (s.nf_egress || point == NfHookPoint::On)
    fn = dev_egress_hooks;
  s.dev.set_egress_hook(want ? fn : nullptr, nullptr);
}

// Publish the current filter list of a direction; the old list is freed after a grace
// period (retire).
using FilterList = std::vector<std::unique_ptr<TcFilter>>;

// The run list of `list` (nullptr when empty), counting into `qstats`.
std::unique_ptr<const Miniq> make_miniq(const FilterList& list, TcStats* qstats) {
  if (list.empty()) return nullptr;
  auto m = std::make_unique<Miniq>();
  m->qstats = qstats;
  m->all_bpf = true;
  for (size_t i = 0; i < list.size();) {
    const TcFilter* f = list[i].get();
    const FilterOps* ops = tcf_proto_lookup_ops(f->kind());
    if (ops && ops->pref_ops) {
      // The pref's nodes, bound into the one object that runs them.
      std::vector<const TcFilter*> pref;
      for (; i < list.size() && list[i]->pref() == f->pref(); ++i) pref.push_back(list[i].get());
      std::unique_ptr<TcFilter> b = ops->pref_ops->bind(pref);
      m->filters.push_back(b.get());
      m->bound.push_back(std::move(b));
      m->all_bpf = false;
      continue;
    }
    m->filters.push_back(f);
    m->all_bpf = m->all_bpf && f->is_bpf();
    ++i;
  }
  if (list.size() == 1 && list[0]->protocol() == kEthPAll && list[0]->is_bpf()) {
    const auto* b = static_cast<const BpfFilter*>(list[0].get());
    if (b->spec().da) m->only_da = b;
  }
  return m;
}

void publish(TcDevState& s, Dir d) {
  std::unique_ptr<const Miniq> fresh;
  if (s.clsact) fresh = make_miniq(s.filters[static_cast<int>(d)], &s.qstats[static_cast<int>(d)]);
  std::unique_ptr<const Miniq> old = rcu_publish(s.head(d), std::move(fresh));
  if (d == Dir::Egress) update_egress_hook(s);
  retire(s.net, std::move(old));
}

bool run_order(const std::unique_ptr<TcFilter>& a, const std::unique_ptr<TcFilter>& b) {
  return a->pref() != b->pref() ? a->pref() < b->pref() : a->handle() < b->handle();
}

// Reload every filter attached in `net` (the Net's engine switch).
bool reload_filters(Net& net, const BpfLoadConfig& cfg, std::string* err) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(net);
  std::lock_guard g(tn.mu);
  for (TcDevState* s : tn.registry)
    for (auto& list : s->filters)
      for (auto& f : list) {
        if (!f->is_bpf()) continue;  // only cls_bpf loads programs
        auto o = static_cast<BpfFilter*>(f.get())->reload(cfg.engine, cfg.jit, err);
        if (!o) return false;
        retire(tn, std::move(o));
      }
  return true;
}
const BpfEngineUser tc_engine_user{reload_filters};

const SysctlRegistrar egress_hooks_sysctl{
    {"net.pktpath.egress_hooks", "egress_hooks", "on|off",
     [](Net& n) { return std::string(tc_net(n).egress_hooks_on.load() ? "on" : "off"); },
     [](Net& n, const std::string& v) -> std::optional<std::string> {
       bool on = false;
       if (auto e = sysctl_parse_on_off("net.pktpath.egress_hooks", v, &on)) return e;
       tc_egress_hooks_enable(n, on);
       return std::nullopt;
     }}};
const SysctlRegistrar nf_hook_point_sysctl{
    {"net.pktpath.nf_hook_point", "nf_hook_point", "on|off|before_fix",
     [](Net& n) {
       const int p = tc_net(n).nf_hook_point.load();
       return std::string(p == 1 ? "on" : p == 2 ? "before_fix" : "off");
     },
     [](Net& n, const std::string& v) -> std::optional<std::string> {
       if (v != "on" && v != "off" && v != "before_fix")
         return "net.pktpath.nf_hook_point: expected on, off or before_fix, not '" + v + "'";
       tc_nf_hook_point_force(n, v == "on"    ? NfHookPoint::On
                                 : v == "off" ? NfHookPoint::Off
                                              : NfHookPoint::BeforeFix);
       return std::nullopt;
     }}};

}  // namespace

const char* dir_name(Dir d) { return d == Dir::Egress ? "egress" : "ingress"; }

bool tc_nf_skip_egress() { return tls_nf_skip_egress; }
void tc_set_nf_skip_egress(bool on) { tls_nf_skip_egress = on; }


int tcf_classify(const TcContext& ctx, Packet* p, const Miniq& mq, TcResult& res) {
  return classify_inline(ctx, p, mq, res);
}

Packet* sch_handle_egress(Cpu& cpu, Packet* p, const Miniq& mq, int* rc) {
  return handle_inline<false>(cpu, p, mq, rc);
}

Packet* sch_handle_ingress(Cpu& cpu, Packet* p, const Miniq& mq, int* rc) {
  return handle_inline<true>(cpu, p, mq, rc);
}


// The egress hook: netfilter egress (unless tc redirected the packet here), then tc.
Packet* dev_egress_hooks(Cpu& cpu, Packet* p, NetDevice& dev, void* ctx) {
  return dev_egress_hooks_outline(cpu, p, dev, ctx);
}

Packet* dev_egress_hooks_outline(Cpu& cpu, Packet* p, NetDevice& dev, void*) {
  if (!tls_nf_skip_egress) {
    const nf::NfVerdict v = nf::nf_hook_egress(dev.nf_hooks(), p, cpu);
    if (PP_UNLIKELY(v != nf::NfVerdict::ACCEPT)) {
      // DROP: already freed and counted (NETFILTER_DROP); STOLEN: the hook has it.
      netdev_xmit_hook_rc(v == nf::NfVerdict::DROP ? NET_XMIT_DROP : NET_XMIT_SUCCESS);
      return nullptr;
    }
  }
  return dev_egress_tc_only(cpu, p, dev, nullptr);
}

// The egress hook of a device on which netfilter egress was never enabled (the resolver
// enables it before a chain can be registered): tc alone, without the netfilter check.
Packet* dev_egress_tc_only(Cpu& cpu, Packet* p, NetDevice& dev, void*) {
  int rc = NET_XMIT_SUCCESS;
  p = tc_egress_run(cpu, p, dev, &rc);
  if (!p) netdev_xmit_hook_rc(rc);
  return p;
}

// --- configuration.

bool clsact_add(NetDevice& dev, std::string* err, bool ingress_only) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  TcDevState& s = state_of(dev);
  if (s.clsact) {
    if (err) *err = "Exclusivity flag on, cannot modify (clsact already present on " + dev.name() + ")";
    return false;
  }
  s.clsact = true;
  s.ingress_only = ingress_only;
  return true;
}

const char* ingress_qdisc_kind(NetDevice& dev) {
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) return nullptr;
  return s->ingress_only ? "ingress" : "clsact";
}

bool clsact_del(NetDevice& dev, std::string* err) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) {
    if (err) *err = "Cannot find specified qdisc on specified device (no clsact on " + dev.name() + ")";
    return false;
  }
  s->clsact = false;
  // Unpublish both lists (publish() waits for readers), then free the filters.
  publish(*s, Dir::Egress);
  publish(*s, Dir::Ingress);
  for (auto& l : s->filters)
    for (auto& f : l) retire(s->net, std::move(f));
  for (auto& l : s->filters) l.clear();
  return true;
}

void tc_rcu_barrier(Net& net) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(net);
  std::lock_guard g(tn.mu);
  tn.retired.barrier();
}

// The device leaves its Net (dev_change_net_namespace's dev_shutdown and
// tcf_block teardown): filters, clsact and hook state go; the device starts bare.
void tc_dev_unregister(NetDevice& dev) {
  {
    RcuWriterScope writer;
    TcNet& tn = tc_net(dev.net());
    std::lock_guard g(tn.mu);
    auto* s = static_cast<TcDevState*>(dev.hooks_state());
    if (!s) return;
    s->clsact = false;
    publish(*s, Dir::Egress);
    publish(*s, Dir::Ingress);
    for (auto& l : s->filters)
      for (auto& f : l) retire(tn, std::move(f));
    for (auto& l : s->filters) l.clear();
    tn.retired.barrier();
  }
  dev.set_hooks_state(nullptr);  // ~TcDevState takes the lock itself
}

bool clsact_present(NetDevice& dev) {
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  return s && s->clsact;
}

namespace {

// The list part of tcf_new_tproto / tc_new_tfilter: automatic pref and handle, one kind
// and protocol per pref, a new filter made and put in run order (or swapped for the one
// at its place with `replace`, returned in *old). The Net's tc mutex is held.
bool list_add(Net& net, FilterList& list, const FilterSpec& spec_in, bool replace, std::string* err,
              std::unique_ptr<TcFilter>* old, uint32_t* pref_out, uint32_t* handle_out) {
  const FilterOps* ops = tcf_proto_lookup_ops(spec_in.kind());
  if (!ops) {
    if (err) *err = std::string("unknown filter kind \"") + spec_in.kind() + "\"";
    return false;
  }
  std::unique_ptr<FilterSpec> owned = spec_in.clone();
  FilterSpec& spec = *owned;
  // tcf_auto_prio: 0xC000 for the first filter, then one less than the current first.
  if (spec.pref == 0) spec.pref = list.empty() ? 49152 : (list.front()->pref() > 1 ? list.front()->pref() - 1 : 1);
  if (ops->pref_ops) {
    std::vector<const TcFilter*> pref;
    for (const auto& f : list)
      if (f->pref() == spec.pref && std::string_view(f->kind()) == spec.kind()) pref.push_back(f.get());
    switch (ops->pref_ops->check_add(spec, pref, err)) {
      case PrefOps::Add::Refused:
        return false;
      case PrefOps::Add::Nothing:
        if (pref_out) *pref_out = spec.pref;
        if (handle_out) *handle_out = pref.front()->handle();
        return true;
      case PrefOps::Add::Node:
        break;
    }
  }
  if (spec.handle == 0 && replace) {
    // `replace` without a handle means the pref's (first) filter, if it has one.
    for (const auto& f : list)
      if (f->pref() == spec.pref) {
        spec.handle = f->handle();
        break;
      }
  }
  // One kind and protocol per pref (a tcf_proto): tc refuses to mix them.
  for (const auto& f : list)
    if (f->pref() == spec.pref && (std::string_view(f->kind()) != spec.kind() || f->protocol() != spec.protocol) &&
        !(replace && f->handle() == spec.handle)) {
      if (err) *err = "Filter kind and protocol do not match those at pref " + std::to_string(spec.pref) + " (" +
                      f->kind() + ")";
      return false;
    }
  if (spec.handle == 0) {
    uint32_t h = 0;
    for (const auto& f : list)
      if (f->pref() == spec.pref) h = std::max(h, f->handle());
    spec.handle = ops->new_handle ? ops->new_handle(h) : h + 1;
  }
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const auto& f) { return f->pref() == spec.pref && f->handle() == spec.handle; });
  if (it != list.end() && !replace) {
    if (err) *err = "Exclusivity flag on, cannot modify (filter pref " + std::to_string(spec.pref) + " handle 0x" +
                    std::to_string(spec.handle) + " exists)";
    return false;
  }
  const uint32_t pref = spec.pref, handle = spec.handle;
  std::unique_ptr<TcFilter> f = ops->create(spec, net, err);
  if (!f) return false;
  if (it != list.end()) {
    *old = std::move(*it);
    *it = std::move(f);
  } else {
    list.push_back(std::move(f));
    std::stable_sort(list.begin(), list.end(), run_order);
  }
  if (pref_out) *pref_out = pref;
  if (handle_out) *handle_out = handle;
  return true;
}

// tc_del_tfilter's list part: pref 0 = all, handle 0 = every handle of the pref. What was
// removed goes to `removed`; false with *err when nothing matched.
bool list_del(FilterList& list, uint32_t pref, uint32_t handle, FilterList& removed, std::string* err) {
  // A kind with PrefOps says which nodes go with the one named.
  std::vector<uint32_t> gone{handle};
  if (pref && handle) {
    std::vector<const TcFilter*> nodes;
    for (const auto& f : list)
      if (f->pref() == pref) nodes.push_back(f.get());
    const FilterOps* ops = nodes.empty() ? nullptr : tcf_proto_lookup_ops(nodes.front()->kind());
    if (ops && ops->pref_ops && !ops->pref_ops->del_set(handle, nodes, &gone, err)) return false;
  }
  auto named = [&](uint32_t h) { return handle == 0 || std::find(gone.begin(), gone.end(), h) != gone.end(); };
  for (auto it = list.begin(); it != list.end();) {
    if ((pref == 0 || (*it)->pref() == pref) && named((*it)->handle())) {
      removed.push_back(std::move(*it));
      it = list.erase(it);
    } else {
      ++it;
    }
  }
  if (removed.empty() && err) *err = "Filter with specified priority/protocol not found";
  return !removed.empty();
}

}  // namespace

bool filter_add(NetDevice& dev, Dir dir, const FilterSpec& spec_in, bool replace, std::string* err,
                uint32_t* pref_out, uint32_t* handle_out) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) {
    if (err) *err = "no clsact qdisc on " + dev.name() + " (tc qdisc add dev " + dev.name() + " clsact)";
    return false;
  }
  if (dir == Dir::Egress && s->ingress_only) {
    if (err) *err = "the ingress qdisc on " + dev.name() + " has no egress side (use clsact)";
    return false;
  }
  std::unique_ptr<TcFilter> old;
  if (!list_add(dev.net(), s->filters[static_cast<int>(dir)], spec_in, replace, err, &old, pref_out, handle_out))
    return false;
  publish(*s, dir);
  retire(s->net, std::move(old));
  return true;
}

bool filter_del(NetDevice& dev, Dir dir, uint32_t pref, uint32_t handle, std::string* err) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) {
    if (err) *err = "no clsact qdisc on " + dev.name();
    return false;
  }
  FilterList removed;
  if (!list_del(s->filters[static_cast<int>(dir)], pref, handle, removed, err)) return false;
  publish(*s, dir);
  for (auto& f : removed) retire(s->net, std::move(f));
  return true;
}

// --- a classful qdisc's filter list.

FilterBlock::~FilterBlock() { delete head.exchange(nullptr, std::memory_order_acq_rel); }

namespace {
void block_publish(TcNet& tn, FilterBlock& b) {
  retire(tn, rcu_publish(b.head, make_miniq(b.filters, &b.qstats)));
}
}  // namespace

bool block_filter_add(NetDevice& dev, FilterBlock& b, const FilterSpec& spec, bool replace, std::string* err) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(dev.net());
  std::lock_guard g(tn.mu);
  std::unique_ptr<TcFilter> old;
  if (!list_add(dev.net(), b.filters, spec, replace, err, &old, nullptr, nullptr)) return false;
  block_publish(tn, b);
  retire(tn, std::move(old));
  return true;
}

bool block_filter_del(NetDevice& dev, FilterBlock& b, uint32_t pref, uint32_t handle, std::string* err) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(dev.net());
  std::lock_guard g(tn.mu);
  FilterList removed;
  if (!list_del(b.filters, pref, handle, removed, err)) return false;
  block_publish(tn, b);
  for (auto& f : removed) retire(tn, std::move(f));
  return true;
}

void block_filter_walk(NetDevice& dev, const FilterBlock& b, const std::function<void(const TcFilter&)>& fn) {
  std::lock_guard g(tc_net(dev.net()).mu);
  for (const auto& f : b.filters) fn(*f);
}

void filter_walk_all(NetDevice& dev, Dir dir, const std::function<void(const TcFilter&)>& fn) {
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) return;
  for (const auto& f : s->filters[static_cast<int>(dir)]) fn(*f);
}

void filter_walk(NetDevice& dev, Dir dir, const std::function<void(const BpfFilter&)>& fn) {
  filter_walk_all(dev, dir, [&](const TcFilter& f) {
    if (f.is_bpf()) fn(static_cast<const BpfFilter&>(f));
  });
}

TcStats::Sum clsact_stats(NetDevice& dev, Dir dir) {
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) return {};
  return s->qstats[static_cast<int>(dir)].sum();
}

void netdev_nf_egress_enable(NetDevice& dev) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  TcDevState& s = state_of(dev);
  s.nf_egress = true;
  update_egress_hook(s);
}

void tc_egress_hooks_enable(Net& net, bool on) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(net);
  std::lock_guard g(tn.mu);
  tn.egress_hooks_on.store(on);
  for (TcDevState* s : tn.registry) update_egress_hook(*s);
}

void tc_nf_hook_point_force(Net& net, NfHookPoint mode) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(net);
  std::lock_guard g(tn.mu);
  tn.nf_hook_point.store(static_cast<int>(mode));
  for (TcDevState* s : tn.registry) update_egress_hook(*s);
}

}  // namespace pktpath::tc
