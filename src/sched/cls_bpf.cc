// cls_bpf: classic BPF classifier (net/sched/cls_bpf.c).
#include "sched/cls_bpf.h"

#include <arpa/inet.h>

#include "bpf/jit.h"
#include "bpf/packet_view.h"
#include "core/bpf_engine.h"
#include "core/netdevice.h"

namespace pktpath::tc {

Result<std::unique_ptr<BpfFilter>> BpfFilter::create(BpfFilterSpec spec, bpf::Engine engine,
                                                     const bpf::JitOptions& jit) {
  std::string err;
  auto prog = bpf::Program::load(spec.insns, engine, jit, &err);
  if (!prog) return unexpected(err);
  std::unique_ptr<BpfFilter> f(new BpfFilter(std::move(spec)));
  f->owned_ = std::make_unique<const bpf::Program>(std::move(*prog));
  f->prog_.store(f->owned_.get(), std::memory_order_release);
  return f;
}

BpfFilter::~BpfFilter() = default;

namespace {

// cls_bpf_change: load the program as the filter's Net says.
Result<std::unique_ptr<TcFilter>> bpf_create(const FilterSpec& spec, Net& net) {
  auto s = filter_spec_as<BpfFilterSpec>(spec);
  if (!s) return unexpected(s.error());
  const BpfLoadConfig lc = net_bpf_config(net);
  auto f = BpfFilter::create(**s, lc.engine, lc.jit);
  if (!f) return unexpected(f.error());
  return std::unique_ptr<TcFilter>(std::move(*f));
}

const FilterRegistrar kBpf{{BpfFilterSpec::kKind, bpf_create}};  // cls_bpf_ops

}  // namespace

Result<std::unique_ptr<const bpf::Program>> BpfFilter::reload(bpf::Engine engine, const bpf::JitOptions& jit) {
  std::string err;
  auto prog = bpf::Program::load(spec_.insns, engine, jit, &err);
  if (!prog) return unexpected(err);
  auto fresh = std::make_unique<const bpf::Program>(std::move(*prog));
  prog_.store(fresh.get(), std::memory_order_release);
  std::swap(owned_, fresh);
  return fresh;  // the old program
}

int BpfFilter::classify_actions(const TcContext& ctx, Packet* p, TcResult& res, int filter_res,
                                TcStats::Slot& s) const {
  if (filter_res == 0) return TC_ACT_UNSPEC;
  s.matched.add();
  res.classid = filter_res == -1 ? spec_.classid : static_cast<uint32_t>(filter_res);
  const int ret = tcf_action_exec(ctx, p, spec_.actions, res);
  // A negative pipeline verdict (continue) goes on with the next filter.
  return ret < 0 ? TC_ACT_UNSPEC : ret;
}

}  // namespace pktpath::tc
