// skbedit (net/sched/act_skbedit.c).
#include "sched/act_skbedit.h"

#include "core/dev_xmit.h"

namespace pktpath::tc {

// mirrors tcf_skbedit_act
int SkbeditAction::act(const TcContext& ctx, Packet* p, TcResult&) {
  stats.count(ctx, p);
  if (p_.priority) p->priority = *p_.priority;
  if (p_.mark) p->mark = *p_.mark;
  if (p_.queue_mapping) {
    p->queue_mapping = *p_.queue_mapping;
    // On egress the chosen queue replaces the device's own pick (the kernel does the same
    // through netdev_xmit_skip_txqueue).
    if (!ctx.at_ingress) netdev_xmit_skip_txqueue(true);
  }
  if (p_.verdict == TC_ACT_SHOT) stats.at(ctx.cpu).drops.add();
  return p_.verdict;
}

ActionOptions SkbeditAction::dump() const {
  SkbeditOptions o;
  o.params = p_;
  return o;
}

namespace {

// mirrors tcf_skbedit_init: at least one field to set.
Result<std::shared_ptr<TcAction>> skbedit_init(const ActionOptions& opts, DeviceTable&) {
  const auto* o = opts.get<SkbeditOptions>();
  if (!o) return unexpected("skbedit: bad options");
  const SkbeditAction::Params& p = o->params;
  if (!p.queue_mapping && !p.priority && !p.mark)
    return unexpected("skbedit: needs queue_mapping, priority or mark");
  return std::shared_ptr<TcAction>(std::make_shared<SkbeditAction>(p));
}

const ActionRegistrar kSkbedit{{"skbedit", skbedit_init}};  // act_skbedit_ops

}  // namespace

}  // namespace pktpath::tc
