// gact (net/sched/act_gact.c).
#include "sched/act_gact.h"

namespace pktpath::tc {

// mirrors tcf_gact_act (no random part): count, then the configured verdict.
int GactAction::act(const TcContext& ctx, Packet* p, TcResult&) {
  TcStats::Slot& s = stats.at(ctx.cpu);
  s.packets.add();
  s.bytes.add(tc_skb_len(ctx, p));
  if (verdict_ == TC_ACT_SHOT) s.drops.add();
  return verdict_;
}

ActionOptions GactAction::dump() const {
  GactOptions o;
  o.verdict = verdict_;
  return o;
}

namespace {

// mirrors tcf_gact_init
Result<std::shared_ptr<TcAction>> gact_init(const ActionOptions& opts, DeviceTable&) {
  const auto* o = opts.get<GactOptions>();
  if (!o) return unexpected("gact: bad options");
  return std::shared_ptr<TcAction>(std::make_shared<GactAction>(o->verdict));
}

const ActionRegistrar kGact{{"gact", gact_init}};  // act_gact_ops

}  // namespace

}  // namespace pktpath::tc
