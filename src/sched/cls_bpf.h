// cls_bpf with classic BPF programs (net/sched/cls_bpf.c): one filter = one program at a
// (pref, handle), in direct-action mode or with a classid and an action list.
//
// Concurrency: a published filter is immutable except for its program pointer (replaced
// by reload() when the engine switch changes; readers load it once per packet) and its
// per-Cpu statistics. It is freed a grace period after it was unpublished.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "bpf/insn.h"
#include "bpf/program.h"
#include "sched/tc_act.h"

namespace pktpath::tc {

inline constexpr uint16_t kEthPAll = 0x0003;  // ETH_P_ALL

// What `tc filter add ... bpf ...` asks for, already parsed.
struct BpfFilterSpec {
  uint32_t pref = 0;    // 0: automatic (49152, then one less than the current first)
  uint32_t handle = 0;  // 0: automatic (1, 2, ... within the pref)
  uint16_t protocol = kEthPAll;  // host order; kEthPAll matches every packet
  bool da = false;               // direct-action
  bpf::Insns insns;
  std::string source;  // how tc shows the program: "bytecode '…'" or "expr '…'"
  uint32_t classid = 0;
  bool classid_set = false;
  ActionList actions;
};

class BpfFilter {
 public:
  // Loads the program on `engine` (Program::load runs the kernel checker); nullptr with
  // *err on a rejected program.
  static std::unique_ptr<BpfFilter> create(BpfFilterSpec spec, bpf::Engine engine, std::string* err);
  ~BpfFilter();

  // mirrors cls_bpf_classify for one program: TC_ACT_UNSPEC to go on with the next
  // filter, else the verdict (da) or the action pipeline's verdict.
  int classify(const TcContext& ctx, Packet* p, TcResult& res) const;

  // Writer side: load the program again on another engine and publish it. Returns the
  // program it replaced, for the caller to free after a grace period.
  std::unique_ptr<const bpf::Program> reload(bpf::Engine engine, std::string* err);

  const BpfFilterSpec& spec() const { return spec_; }
  uint32_t pref() const { return spec_.pref; }
  uint32_t handle() const { return spec_.handle; }
  bpf::Engine engine() const { return prog_.load(std::memory_order_relaxed)->engine(); }
  mutable TcStats stats;  // packets it ran on; matched; drops (da SHOT)

 private:
  explicit BpfFilter(BpfFilterSpec spec) : spec_(std::move(spec)) {}
  BpfFilterSpec spec_;
  std::atomic<const bpf::Program*> prog_{nullptr};
  std::unique_ptr<const bpf::Program> owned_;  // what prog_ points to
};

}  // namespace pktpath::tc
