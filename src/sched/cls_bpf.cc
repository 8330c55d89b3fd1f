// cls_bpf: classic BPF classifier (net/sched/cls_bpf.c).
#include "sched/cls_bpf.h"

#include <arpa/inet.h>

#include "bpf/packet_view.h"
#include "core/netdevice.h"

namespace pktpath::tc {

namespace {

// mirrors cls_bpf_exec_opcode: direct-action programs may only say these; anything else
// (PIPE, RECLASSIFY, values outside the table) means "continue with the next filter".
int da_opcode(int code) {
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

}  // namespace

std::unique_ptr<BpfFilter> BpfFilter::create(BpfFilterSpec spec, bpf::Engine engine, std::string* err) {
  auto prog = bpf::Program::load(spec.insns, engine, err);
  if (!prog) return nullptr;
  std::unique_ptr<BpfFilter> f(new BpfFilter(std::move(spec)));
  f->owned_ = std::make_unique<const bpf::Program>(std::move(*prog));
  f->prog_.store(f->owned_.get(), std::memory_order_release);
  return f;
}

BpfFilter::~BpfFilter() = default;

std::unique_ptr<const bpf::Program> BpfFilter::reload(bpf::Engine engine, std::string* err) {
  auto prog = bpf::Program::load(spec_.insns, engine, err);
  if (!prog) return nullptr;
  auto fresh = std::make_unique<const bpf::Program>(std::move(*prog));
  prog_.store(fresh.get(), std::memory_order_release);
  std::swap(owned_, fresh);
  return fresh;  // the old program
}

// mirrors cls_bpf_classify (one program per filter here). The packet's data starts at
// the Ethernet header on both sides, which is what the kernel arranges at ingress by
// pushing mac_len around the run.
int BpfFilter::classify(const TcContext& ctx, Packet* p, TcResult& res) const {
  const bpf::Program* prog = prog_.load(std::memory_order_acquire);
  TcStats::Slot& s = stats.at(ctx.cpu);
  s.packets.add();
  s.bytes.add(p->len);
  bpf::DeviceInfo di;
  if (p->dev) di.ifindex = p->dev->ifindex();
  const bpf::PacketView v = bpf::view_of(*p, p->dev ? &di : nullptr, 14, ctx.cpu.id());
  const int filter_res = static_cast<int>(prog->run(v));

  if (spec_.da) {
    res.classid = spec_.classid;
    const int ret = da_opcode(filter_res);
    if (ret != TC_ACT_UNSPEC) {
      s.matched.add();
      if (ret == TC_ACT_SHOT) s.drops.add();
    }
    return ret;
  }
  if (filter_res == 0) return TC_ACT_UNSPEC;
  s.matched.add();
  res.classid = filter_res == -1 ? spec_.classid : static_cast<uint32_t>(filter_res);
  const int ret = tcf_action_exec(ctx, p, spec_.actions, res);
  // A negative pipeline verdict (continue) goes on with the next filter.
  return ret < 0 ? TC_ACT_UNSPEC : ret;
}

}  // namespace pktpath::tc
