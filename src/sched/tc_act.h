// tc actions: the verdict codes (include/uapi/linux/pkt_cls.h), per-Cpu statistics, the
// action interface and the three actions pktpath has (gact, mirred, skbedit), and the
// pipeline runner tcf_action_exec.
//
// Concurrency: an action object is immutable once its filter is published (except its
// per-Cpu statistics, one writer per Cpu slot) and may run on any number of Cpus at once.
// It lives until a grace period after the filter that holds it was unpublished.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/counter.h"
#include "core/cpu.h"
#include "core/packet.h"

namespace pktpath {
class NetDevice;
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

// Per-Cpu statistics (gnet_stats_basic + queue drops/overlimits), one slot per Cpu id,
// each written only by its Cpu's thread.
class TcStats {
 public:
  struct alignas(kCacheLine) Slot {
    Counter packets, bytes, drops, overlimits;
    Counter matched;  // filters: packets the classifier matched (returned a verdict for)
  };
  struct Sum {
    uint64_t packets = 0, bytes = 0, drops = 0, overlimits = 0, matched = 0;
  };
  TcStats() : slots_(new Slot[kMaxCpus]) {}
  Slot& at(const Cpu& cpu) { return slots_[cpu.id()]; }
  void count(const Cpu& cpu, const Packet* p) {
    Slot& s = at(cpu);
    s.packets.add();
    s.bytes.add(p->len);
  }
  Sum sum() const;

 private:
  std::unique_ptr<Slot[]> slots_;
};

// Where a classifier runs: the packet is on its way out (egress) or has come in (ingress).
struct TcContext {
  Cpu& cpu;
  bool at_ingress;
};

// One action (struct tc_action + tc_action_ops->act).
class TcAction {
 public:
  virtual ~TcAction() = default;
  // Returns a TC_ACT_* verdict. TC_ACT_CONSUMED: the packet is gone (handed on or freed
  // with its reason) — the caller must not touch it.
  virtual int act(const TcContext& ctx, Packet* p, TcResult& res) = 0;
  virtual const char* kind() const = 0;
  // tc's description after "action order N: ", e.g. "gact action drop".
  virtual std::string describe() const = 0;

  uint32_t index = 0;  // tc's action index (shown as "index N")
  mutable TcStats stats;
};

// gact: a fixed verdict (mirrors tcf_gact_act without the random part).
class GactAction final : public TcAction {
 public:
  explicit GactAction(int verdict) : verdict_(verdict) {}
  int act(const TcContext& ctx, Packet* p, TcResult& res) override;
  const char* kind() const override { return "gact"; }
  std::string describe() const override;
  int verdict() const { return verdict_; }

 private:
  int verdict_;
};

// mirred: mirror (copy) or redirect the packet to another device's egress
// (dev_queue_xmit) or ingress (netif_receive_skb). Mirrors tcf_mirred_act; nesting is
// bounded by Cpu::xmit_recursion (limit 8): past it the packet is dropped and counted
// under XMIT_RECURSION, and the action's overlimits count it.
class MirredAction final : public TcAction {
 public:
  enum class Dir : uint8_t { Egress, Ingress };
  enum class Kind : uint8_t { Redirect, Mirror };
  // `target` must outlive the action (the device table deletes a device's filters with it
  // and refuses to delete a mirred target only in the kernel; here the script author
  // keeps targets alive).
  MirredAction(Dir dir, Kind kind, NetDevice* target, std::string target_name);
  int act(const TcContext& ctx, Packet* p, TcResult& res) override;
  const char* kind() const override { return "mirred"; }
  std::string describe() const override;
  NetDevice* target() const { return target_; }

 private:
  Dir dir_;
  Kind kind_;
  int retval_;  // what the action returns after a mirror/redirect (PIPE / STOLEN)
  NetDevice* target_;
  std::string target_name_;
};

// skbedit: set queue_mapping, priority, mark (mirrors tcf_skbedit_act).
class SkbeditAction final : public TcAction {
 public:
  struct Params {
    std::optional<uint16_t> queue_mapping;
    std::optional<uint32_t> priority;
    std::optional<uint32_t> mark;
    int verdict = TC_ACT_PIPE;
  };
  explicit SkbeditAction(Params p) : p_(p) {}
  int act(const TcContext& ctx, Packet* p, TcResult& res) override;
  const char* kind() const override { return "skbedit"; }
  std::string describe() const override;

 private:
  Params p_;
};

using ActionList = std::vector<std::shared_ptr<TcAction>>;

// mirrors tcf_action_exec: run actions in order while they say PIPE; the first other
// verdict ends the pipeline. An empty list gives TC_ACT_OK.
int tcf_action_exec(const TcContext& ctx, Packet* p, const ActionList& actions, TcResult& res);

}  // namespace pktpath::tc
