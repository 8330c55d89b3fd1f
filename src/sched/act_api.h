// tc actions (net/sched/act_api.c): the verdict codes (include/uapi/linux/pkt_cls.h),
// per-Cpu statistics, the action interface, the kind registry (tcf_register_action) and
// the pipeline runner tcf_action_exec. Each kind is one act_<kind>.{h,cc} that registers
// itself with an ActionRegistrar.
//
// Concurrency: an action object is immutable once its filter is published (except its
// per-Cpu statistics, one writer per Cpu slot) and may run on any number of Cpus at once.
// It lives until a grace period after the filter that holds it was unpublished.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/counter.h"
#include "core/cpu.h"
#include "core/percpu.h"
#include "core/packet.h"
#include "core/result.h"
#include "sched/qdisc_options.h"

namespace pktpath {
class NetDevice;
class DeviceTable;
}

namespace pktpath::tc {

// Verdicts (TC_ACT_*), with the UAPI values.
inline constexpr int TC_ACT_UNSPEC = -1;
inline constexpr int TC_ACT_OK = 0;
inline constexpr int TC_ACT_RECLASSIFY = 1;
inline constexpr int TC_ACT_SHOT = 2;
inline constexpr int TC_ACT_PIPE = 3;
inline constexpr int TC_ACT_STOLEN = 4;
inline constexpr int TC_ACT_QUEUED = 5;
inline constexpr int TC_ACT_REPEAT = 6;
inline constexpr int TC_ACT_REDIRECT = 7;
inline constexpr int TC_ACT_TRAP = 8;
// Kernel-internal (TC_ACT_VALUE_MAX + 1): the action already took the packet over
// (mirred redirect hands the packet itself on), the caller must not touch it again.
inline constexpr int TC_ACT_CONSUMED = 9;

// tc's names for verdicts ("ok", "drop", "pipe", "continue", ...), for show output.
const char* tc_act_name(int v);

// TC_H_MAJ / TC_H_MIN.
inline constexpr uint32_t tc_h_maj(uint32_t h) { return h & 0xffff0000u; }
inline constexpr uint32_t tc_h_min(uint32_t h) { return h & 0x0000ffffu; }

// What a classifier hands back besides the verdict (tcf_result).
struct TcResult {
  uint32_t classid = 0;
};

// Where an action or classifier runs (the hook, and the Cpu whose slots it counts on).
struct TcContext {
  Cpu& cpu;
  bool at_ingress;
};

// The kernel's skb->len at a tc hook: on ingress eth_type_trans has pulled the Ethernet
// header (pktpath's receive path keeps it), on egress the whole frame. Byte counters count it.
inline uint32_t tc_skb_len(const TcContext& ctx, const Packet* p) {
  return ctx.at_ingress ? p->len - (p->len < 14 ? p->len : 14) : p->len;
}

// Per-Cpu statistics (gnet_stats_basic + queue drops/overlimits), one slot per Cpu id,
// each written only by its Cpu's thread; like the kernel's percpu counters they cost
// memory only for the Cpus that count (core/percpu.h).
class TcStats {
 public:
  struct alignas(kCacheLine) Slot {
    Counter packets, bytes, drops, overlimits;
    Counter matched;  // filters: packets the classifier matched (returned a verdict for)
  };
  struct Sum {
    uint64_t packets = 0, bytes = 0, drops = 0, overlimits = 0, matched = 0;
  };
  Slot& at(const Cpu& cpu) { return slots_.at(cpu.id()); }
  void count(const TcContext& ctx, const Packet* p) {
    Slot& s = at(ctx.cpu);
    s.packets.add();
    s.bytes.add(tc_skb_len(ctx, p));
  }
  Sum sum() const;

 private:
  PerCpu<Slot, kMaxCpus> slots_;
};

// Where a classifier runs: the packet is on its way out (egress) or has come in (ingress).
// The index space of one action kind in one Net (tcf_idrinfo's action_idr): each new
// action takes the lowest free index from 1, as idr_alloc_u32 hands them out, and gives it
// back when it goes (tcf_idr_remove), which may be on another thread after a grace period.
class ActionIdr {
 public:
  uint32_t alloc();
  void release(uint32_t index);

 private:
  std::mutex mu_;
  uint32_t next_ = 1;        // every index from here on is free
  std::set<uint32_t> free_;  // freed indexes below next_
};

// One action (struct tc_action + tc_action_ops->act).
class TcAction {
 public:
  virtual ~TcAction() {
    if (idr_) idr_->release(index);
  }
  // Returns a TC_ACT_* verdict. TC_ACT_CONSUMED: the packet is gone (handed on or freed
  // with its reason) — the caller must not touch it.
  virtual int act(const TcContext& ctx, Packet* p, TcResult& res) = 0;
  virtual const char* kind() const = 0;
  // The action's parameters as its kind's typed options (ops->dump); the CLI's
  // tc/m_<kind>.cc prints them.
  virtual ActionOptions dump() const = 0;

  // tc's action index (shown as "index N"): from its kind's ActionIdr in the Net it was
  // made in (tcf_action_init), 0 for an action made directly.
  uint32_t index = 0;
  mutable TcStats stats;

 private:
  friend Result<std::shared_ptr<TcAction>> tcf_action_init(std::string_view, const ActionOptions&, DeviceTable&);
  std::shared_ptr<ActionIdr> idr_;
};

using ActionList = std::vector<std::shared_ptr<TcAction>>;

// An action kind (struct tc_action_ops): its name and how an action is made from its
// typed options (ops->init; devices are resolved through the table).
struct ActionOps {
  const char* kind;
  Result<std::shared_ptr<TcAction>> (*init)(const ActionOptions& opts, DeviceTable& table);
};
// mirrors tcf_register_action: called by ActionRegistrar objects during static
// initialisation. A duplicate kind aborts.
void tcf_register_action(const ActionOps& ops);
struct ActionRegistrar {
  explicit ActionRegistrar(const ActionOps& ops) { tcf_register_action(ops); }
};
// mirrors tc_lookup_action_n; nullptr for an unknown kind.
const ActionOps* tc_lookup_action(std::string_view kind);
// mirrors tcf_action_init_1: look up the kind, make the action, and give it the lowest
// free index of its kind in the table's Net (tcf_idr_check_alloc).
Result<std::shared_ptr<TcAction>> tcf_action_init(std::string_view kind, const ActionOptions& opts,
                                                  DeviceTable& table);

// mirrors tcf_action_exec: run actions in order while they say PIPE; the first other
// verdict ends the pipeline. An empty list gives TC_ACT_OK.
int tcf_action_exec(const TcContext& ctx, Packet* p, const ActionList& actions, TcResult& res);

}  // namespace pktpath::tc
