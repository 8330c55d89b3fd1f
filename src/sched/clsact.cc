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
#include "sched/tcf_chain.h"

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
  explicit TcDevState(NetDevice& d) : dev(d), net(tc_net(d.net())) {
    filters[1].share_commons(filters[0]);  // one qdisc: u32 numbers its tables across both
  }
  ~TcDevState() override;

  NetDevice& dev;
  TcNet& net;
  bool clsact = false;
  bool ingress_only = false;  // the `ingress` kind: no egress list
  bool nf_egress = false;
  TcfChain filters[2];
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
void publish(TcDevState& s, Dir d) {
  std::unique_ptr<const Miniq> fresh;
  if (s.clsact) fresh = s.filters[static_cast<int>(d)].make_miniq(&s.qstats[static_cast<int>(d)]);
  std::unique_ptr<const Miniq> old = rcu_publish(s.head(d), std::move(fresh));
  if (d == Dir::Egress) update_egress_hook(s);
  retire(s.net, std::move(old));
}

// Reload every filter attached in `net` (the Net's engine switch).
bool reload_filters(Net& net, const BpfLoadConfig& cfg, std::string* err) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(net);
  std::lock_guard g(tn.mu);
  bool ok = true;
  for (TcDevState* s : tn.registry)
    for (auto& chain : s->filters)
      chain.for_each_mut([&](TcFilter& f) {
        if (!ok || !f.is_bpf()) return;  // only cls_bpf loads programs
        auto o = static_cast<BpfFilter&>(f).reload(cfg.engine, cfg.jit);
        if (!o) {
          ok = false;
          if (err) *err = o.error().msg;
          return;
        }
        retire(tn, std::move(*o));
      });
  return ok;
}
const BpfEngineUser tc_engine_user{reload_filters};

const SysctlRegistrar egress_hooks_sysctl{
    {"net.pktpath.egress_hooks", "egress_hooks", "on|off",
     [](Net& n) { return std::string(tc_net(n).egress_hooks_on.load() ? "on" : "off"); },
     [](Net& n, const std::string& v) -> Status {
       bool on = false;
       if (Status st = sysctl_parse_on_off("net.pktpath.egress_hooks", v, &on); !st) return st;
       tc_egress_hooks_enable(n, on);
       return {};
     }}};
const SysctlRegistrar nf_hook_point_sysctl{
    {"net.pktpath.nf_hook_point", "nf_hook_point", "on|off|before_fix",
     [](Net& n) {
       const int p = tc_net(n).nf_hook_point.load();
       return std::string(p == 1 ? "on" : p == 2 ? "before_fix" : "off");
     },
     [](Net& n, const std::string& v) -> Status {
       if (v != "on" && v != "off" && v != "before_fix")
         return unexpected("net.pktpath.nf_hook_point: expected on, off or before_fix, not '" + v + "'", v);
       tc_nf_hook_point_force(n, v == "on"    ? NfHookPoint::On
                                 : v == "off" ? NfHookPoint::Off
                                              : NfHookPoint::BeforeFix);
       return {};
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

Status clsact_add(NetDevice& dev, bool ingress_only) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  TcDevState& s = state_of(dev);
  if (s.clsact)
    return unexpected("Exclusivity flag on, cannot modify (clsact already present on " + dev.name() + ")");
  s.clsact = true;
  s.ingress_only = ingress_only;
  return {};
}

const char* ingress_qdisc_kind(NetDevice& dev) {
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) return nullptr;
  return s->ingress_only ? "ingress" : "clsact";
}

Status clsact_del(NetDevice& dev) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact)
    return unexpected("Cannot find specified qdisc on specified device (no clsact on " + dev.name() + ")");
  s->clsact = false;
  // Unpublish both lists (publish() waits for readers), then free the filters.
  publish(*s, Dir::Egress);
  publish(*s, Dir::Ingress);
  for (auto& chain : s->filters) chain.clear(s->net.retired);  // unpublished above
  return {};
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
    for (auto& chain : s->filters) chain.clear(tn.retired);
    tn.retired.barrier();
  }
  dev.set_hooks_state(nullptr);  // ~TcDevState takes the lock itself
}

bool clsact_present(NetDevice& dev) {
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  return s && s->clsact;
}

Status filter_add(NetDevice& dev, Dir dir, const FilterSpec& spec_in, bool replace, uint32_t* pref_out,
                  uint32_t* handle_out) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact)
    return unexpected("Parent Qdisc doesn't exists (no clsact qdisc on " + dev.name() + ": tc qdisc add dev " +
                      dev.name() + " clsact)");
  if (dir == Dir::Egress && s->ingress_only)
    return unexpected("the ingress qdisc on " + dev.name() + " has no egress side (use clsact)");
  // What the change unlinks is freed a grace period after the new list is published.
  RcuRetireList staged = RcuRetireList::staging();
  auto added = s->filters[static_cast<int>(dir)].add(dev.net(), spec_in, replace, staged);
  if (!added) return unexpected(added.error());
  publish(*s, dir);
  s->net.retired.splice(staged);
  if (pref_out) *pref_out = added->pref;
  if (handle_out) *handle_out = added->handle;
  return {};
}

Status filter_del(NetDevice& dev, Dir dir, uint32_t pref, uint32_t handle) {
  RcuWriterScope writer;
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact)
    return unexpected("no clsact qdisc on " + dev.name());
  RcuRetireList staged = RcuRetireList::staging();
  if (Status st = s->filters[static_cast<int>(dir)].del(pref, handle, staged); !st) return st;
  publish(*s, dir);
  s->net.retired.splice(staged);
  return {};
}

// --- a classful qdisc's filter list.

FilterBlock::~FilterBlock() { delete head.exchange(nullptr, std::memory_order_acq_rel); }

namespace {
void block_publish(TcNet& tn, FilterBlock& b, RcuRetireList& staged) {
  retire(tn, rcu_publish(b.head, b.filters.make_miniq(&b.qstats)));
  tn.retired.splice(staged);
}
}  // namespace

Status block_filter_add(NetDevice& dev, FilterBlock& b, const FilterSpec& spec, bool replace) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(dev.net());
  std::lock_guard g(tn.mu);
  RcuRetireList staged = RcuRetireList::staging();
  auto added = b.filters.add(dev.net(), spec, replace, staged);
  if (!added) return unexpected(added.error());
  block_publish(tn, b, staged);
  return {};
}

Status block_filter_del(NetDevice& dev, FilterBlock& b, uint32_t pref, uint32_t handle) {
  RcuWriterScope writer;
  TcNet& tn = tc_net(dev.net());
  std::lock_guard g(tn.mu);
  RcuRetireList staged = RcuRetireList::staging();
  if (Status st = b.filters.del(pref, handle, staged); !st) return st;
  block_publish(tn, b, staged);
  return {};
}

void block_filter_walk(NetDevice& dev, const FilterBlock& b, const std::function<void(const TcFilter&)>& fn) {
  std::lock_guard g(tc_net(dev.net()).mu);
  b.filters.for_each(fn);
}

void filter_walk_all(NetDevice& dev, Dir dir, const std::function<void(const TcFilter&)>& fn) {
  std::lock_guard g(tc_net(dev.net()).mu);
  auto* s = static_cast<TcDevState*>(dev.hooks_state());
  if (!s || !s->clsact) return;
  s->filters[static_cast<int>(dir)].for_each(fn);
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
