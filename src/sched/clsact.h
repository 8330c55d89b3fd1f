// clsact (net/sched/sch_ingress.c) and the tc hook points of the datapath
// (sch_handle_egress / sch_handle_ingress in net/core/dev.c).
//
// clsact has no queue: it is two filter lists per device, egress and ingress, each run
// in pref order (then handle order). `tc qdisc add dev D clsact` sits beside whatever
// root qdisc the device has.
//
// Read side: the datapath loads NetDevice::tc_egress()/tc_ingress() (a Miniq, immutable
// once published) and uses it, its filters and their actions until its thread's next RCU
// quiescent state (core/rcu.h: the same liburcu QSBR domain as netfilter). No
// lock.
// Write side: every function below that changes configuration takes its Net's tc mutex
// (the rtnl lock's role; tc state is per Net, reached through dev.net()), builds a new Miniq and publishes it; what it replaced is freed
// after a grace period (call_rcu style: retired objects are freed in batches of 64 after
// one rcu_synchronize, and all at once by tc_rcu_barrier or when a device with hooks
// is destroyed). The caller must not hold an RCU read-side reference (a registered
// reader calling these is fine: liburcu takes it offline while waiting).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bpf/program.h"
#include "core/netdevice.h"
#include "sched/cls_api.h"
#include "sched/cls_bpf.h"
#include "sched/tcf_chain.h"

namespace pktpath::tc {

enum class Dir : uint8_t { Egress = 0, Ingress = 1 };
const char* dir_name(Dir d);

// A published filter list (mini_Qdisc): the filters to run in order and the clsact's
// per-direction counters.
struct Miniq {
  TcStats* qstats = nullptr;  // owned by the clsact; outlives every Miniq of it
  // In run order; a kind with PrefOps has one bound object per pref here (owned by the
  // chain, which retires it only after a list without it is published).
  std::vector<const TcFilter*> filters;
  // Set when the list is one direct-action cls_bpf filter for every protocol (document
  // 000's setup): the hook runs it without the list walk and without an indirect call,
  // and without marking packets for a redirect no direct-action classic BPF program can
  // ask for.
  const BpfFilter* only_da = nullptr;
  // Every filter is cls_bpf: the walk calls them directly without asking each its kind.
  bool all_bpf = false;
};

// A classful qdisc's own filter list (its tcf_block: `tc filter ... parent MAJ:`),
// owned by the qdisc and published as clsact's lists are; its enqueue loads `head`
// (acquire) and runs tcf_classify on it. Writers hold the Net's tc mutex.
struct FilterBlock {
  std::atomic<const Miniq*> head{nullptr};
  TcfChain filters;
  TcStats qstats;
  FilterBlock() = default;
  FilterBlock(const FilterBlock&) = delete;
  FilterBlock& operator=(const FilterBlock&) = delete;
  // Frees the list at once: the qdisc goes only while no traffic runs (see NetDevice).
  ~FilterBlock();
};

// --- datapath.
// mirrors tcf_classify / __tcf_classify: first filter (whose protocol matches) with a
// verdict >= 0 decides; TC_ACT_UNSPEC when none did. RECLASSIFY restarts from the first
// filter, at most 16 times (then SHOT).
int tcf_classify(const TcContext& ctx, Packet* p, const Miniq& mq, TcResult& res);
// mirrors sch_handle_egress: nullptr when tc consumed the packet (dropped with
// TC_EGRESS, stolen, redirected); *rc then holds dev_queue_xmit's return code.
Packet* sch_handle_egress(Cpu& cpu, Packet* p, const Miniq& mq, int* rc);
// mirrors sch_handle_ingress: nullptr when consumed (dropped with TC_INGRESS, stolen,
// redirected); *rc then holds NET_RX_SUCCESS or NET_RX_DROP.
Packet* sch_handle_ingress(Cpu& cpu, Packet* p, const Miniq& mq, int* rc);
// Packets that tc egress or ingress redirects to a device's egress skip that device's
// netfilter egress hook (the kernel's skb->nf_skip_egress; tc redirects are below
// netfilter). True while this thread runs tc egress/ingress.
bool tc_nf_skip_egress();
void tc_set_nf_skip_egress(bool on);

// The function installed as the device's egress hook (dev_queue_xmit's hook point):
// netfilter egress, then tc egress — the kernel's order since netfilter egress came
// (__dev_queue_xmit: nf_hook_egress, then sch_handle_egress; netfilter_netdev.h: "on
// egress, the order is reversed for symmetry").
Packet* dev_egress_hooks(Cpu& cpu, Packet* p, NetDevice& dev, void* ctx);
// The same for a device without netfilter egress: tc egress only (installed instead).
Packet* dev_egress_tc_only(Cpu& cpu, Packet* p, NetDevice& dev, void* ctx);
// dev_queue_xmit runs both of the above inline (the netfilter part a predictable branch
// while no chain is attached). This one does what dev_egress_hooks does but is called
// through the hook pointer: document 000's "before" (`nf_hook_point=before_fix`).
Packet* dev_egress_hooks_outline(Cpu& cpu, Packet* p, NetDevice& dev, void* ctx);

// --- configuration (control side).
// ingress_only: the `ingress` kind (sch_ingress), which has no egress list.
Status clsact_add(NetDevice& dev, bool ingress_only = false);  // EEXIST-style error when present
Status clsact_del(NetDevice& dev);  // detaches and frees every filter
bool clsact_present(NetDevice& dev);
// "clsact" or "ingress" when one is attached, else nullptr.
const char* ingress_qdisc_kind(NetDevice& dev);
// rcu_barrier: wait for a grace period and free everything `net`'s tc retired so far.
void tc_rcu_barrier(Net& net);
// The device leaves its Net (netns move): its filters, clsact and hook state are freed.
void tc_dev_unregister(NetDevice& dev);

// `tc filter add` (replace=false) or `tc filter replace` (replace=true: the filter at
// (pref, handle) is swapped in one publication; readers see the old or the new one) of
// any registered kind (spec.kind(), cls_api.h). Fails (nothing changed) on a duplicate,
// a missing clsact, another kind at the same pref, or a spec the kind rejects. On
// success the pref/handle chosen automatically are returned.
Status filter_add(NetDevice& dev, Dir dir, const FilterSpec& spec, bool replace, uint32_t* pref_out = nullptr,
                  uint32_t* handle_out = nullptr);
// `tc filter del`: pref 0 = every filter of the direction; handle 0 = every handle of
// the pref. Fails when nothing matched.
Status filter_del(NetDevice& dev, Dir dir, uint32_t pref, uint32_t handle);
// The same three for a classful qdisc's filter list (tc filter ... parent MAJ:).
Status block_filter_add(NetDevice& dev, FilterBlock& b, const FilterSpec& spec, bool replace);
Status block_filter_del(NetDevice& dev, FilterBlock& b, uint32_t pref, uint32_t handle);
void block_filter_walk(NetDevice& dev, const FilterBlock& b, const std::function<void(const TcFilter&)>& fn);
// Calls fn for each filter of the direction in run order, under the config mutex.
void filter_walk_all(NetDevice& dev, Dir dir, const std::function<void(const TcFilter&)>& fn);
// The same for the cls_bpf filters only.
void filter_walk(NetDevice& dev, Dir dir, const std::function<void(const BpfFilter&)>& fn);
// The clsact's per-direction counters (what passed through, drops); zero when absent.
TcStats::Sum clsact_stats(NetDevice& dev, Dir dir);

// Programs load as the device's Net says (core/bpf_engine.h: net.pktpath.bpf_engine,
// net.core.bpf_jit_*); changing its engine reloads the filters attached in that Net.

// The netfilter egress hook of this device is in use (an nft chain was attached): make
// sure the device's egress hook pointer is installed (the kernel's egress_needed_key).
void netdev_nf_egress_enable(NetDevice& dev);

// net.pktpath.egress_hooks (`--ab egress_hooks=on|off`): off removes every device's
// egress hook pointer in `net` (so
// dev_queue_xmit takes the nothing-attached branch), on puts back those that have tc
// egress filters or netfilter egress in use.
void tc_egress_hooks_enable(Net& net, bool on);
// net.pktpath.nf_hook_point (`--ab nf_hook_point=on|off|before_fix`, document 000): on puts the netfilter egress
// check in every egress hook even where no netfilter egress is enabled (an empty check:
// always correct); off (the default) leaves it out until netfilter egress is enabled on
// the device; before_fix is on through the outlined hook (dev_egress_hooks_outline).
enum class NfHookPoint : int { Off = 0, On = 1, BeforeFix = 2 };
void tc_nf_hook_point_force(Net& net, NfHookPoint mode);

}  // namespace pktpath::tc
