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
#include "bpf/packet_view.h"
#include "bpf/program.h"
#include "core/bpf_view.h"
#include "core/netdevice.h"
#include "sched/act_api.h"
#include "sched/cls_api.h"

namespace pktpath::tc {

// What `tc filter add ... bpf ...` asks for, already parsed (the common words in
// FilterSpec).
struct BpfFilterSpec : FilterSpecOf<BpfFilterSpec> {
  static constexpr const char* kKind = "bpf";
  bool da = false;  // direct-action
  bpf::Insns insns;
  std::string source;  // how tc shows the program: "bytecode '…'" or "expr '…'"
};

// final: a call through a BpfFilter pointer (the hook's only_da, the walk's cls_bpf
// case) is direct and inlined.
class BpfFilter final : public TcFilter {
 public:
  // Loads the program on `engine` with the JIT options of the filter's Net
  // (Program::load runs the kernel checker); the checker's error on a rejected program.
  static Result<std::unique_ptr<BpfFilter>> create(BpfFilterSpec spec, bpf::Engine engine, const bpf::JitOptions& jit);
  ~BpfFilter();

  // mirrors cls_bpf_classify for one program: TC_ACT_UNSPEC to go on with the next
  // filter, else the verdict (da) or the action pipeline's verdict. Inline: it runs in
  // the tc hook for every packet.
  PP_ALWAYS_INLINE int classify(const TcContext& ctx, Packet* p, TcResult& res) const override;
  const char* kind() const override { return BpfFilterSpec::kKind; }
  const FilterSpec& spec_base() const override { return spec_; }

  // Writer side: load the program again on another engine and publish it. Returns the
  // program it replaced, for the caller to free after a grace period.
  Result<std::unique_ptr<const bpf::Program>> reload(bpf::Engine engine, const bpf::JitOptions& jit);

  const BpfFilterSpec& spec() const { return spec_; }
  bpf::Engine engine() const { return prog_.load(std::memory_order_relaxed)->engine(); }

 private:
  explicit BpfFilter(BpfFilterSpec spec)
      : TcFilter(spec, true), da_(spec.da), classid_(spec.classid), spec_(std::move(spec)) {}
  // What a program that reads nothing of the packet is handed.
  static inline const bpf::PacketView kNoView{};
  // The classid/action side of classify (not direct-action).
  int classify_actions(const TcContext& ctx, Packet* p, TcResult& res, int filter_res, TcStats::Slot& s) const;
  // What classify reads, next to the base's counters (one cache line with them).
  std::atomic<const bpf::Program*> prog_{nullptr};
  const bool da_;
  const uint32_t classid_;
  BpfFilterSpec spec_;
  std::unique_ptr<const bpf::Program> owned_;  // what prog_ points to
};

// mirrors cls_bpf_exec_opcode: direct-action programs may only say these; anything else
// (PIPE, RECLASSIFY, values outside the table) means "continue with the next filter".
PP_ALWAYS_INLINE int cls_bpf_da_opcode(int code) {
  switch (code) {
    case TC_ACT_OK:
    case TC_ACT_SHOT:
    case TC_ACT_STOLEN:
    case TC_ACT_TRAP:
    case TC_ACT_REDIRECT:
    case TC_ACT_UNSPEC: return code;
    default: return TC_ACT_UNSPEC;
  }
}

// The packet's data starts at the Ethernet header on both sides, which is what the
// kernel arranges at ingress by pushing mac_len around the run.
PP_ALWAYS_INLINE int BpfFilter::classify(const TcContext& ctx, Packet* p, TcResult& res) const {
  const bpf::Program* prog = prog_.load(std::memory_order_acquire);
  TcStats::Slot& s = stats.at(ctx.cpu);
  s.packets.add();
  s.bytes.add(tc_skb_len(ctx, p));
  // The view holds only what the program reads (Program::view_needs): nothing for a
  // program without packet loads (document 000's `ret #0`), the bytes for most filters.
  const uint8_t needs = prog->view_needs();
  int filter_res;
  if (needs == bpf::kViewNeedsNothing) {
    filter_res = static_cast<int>(prog->run(kNoView));
  } else {
    bpf::PacketView v;
    bpf::view_fill_data(v, *p, 14);
    if (PP_UNLIKELY(needs & bpf::kViewNeedsMeta)) {
      bpf::DeviceInfo di;
      if (p->dev) di.ifindex = p->dev->ifindex();
      bpf::view_fill_meta(v, *p, p->dev ? &di : nullptr, ctx.cpu.id());
    }
    filter_res = static_cast<int>(prog->run(v));
  }

  if (PP_LIKELY(da_)) {
    res.classid = classid_;
    const int ret = cls_bpf_da_opcode(filter_res);
    if (ret != TC_ACT_UNSPEC) {
      s.matched.add();
      if (ret == TC_ACT_SHOT) s.drops.add();
    }
    return ret;
  }
  return classify_actions(ctx, p, res, filter_res, s);
}

}  // namespace pktpath::tc
