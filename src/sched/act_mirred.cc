// mirred (net/sched/act_mirred.c).
#include "sched/act_mirred.h"

#include "core/dev_rx.h"
#include "core/dev_table.h"
#include "core/dev_xmit.h"
#include "core/netdevice.h"
#include "core/packet_copy.h"

namespace pktpath::tc {

MirredAction::MirredAction(Dir dir, Kind kind, NetDevice* target, std::string target_name,
                           NetdevNotifierChain& events)
    : dir_(dir),
      kind_(kind),
      retval_(kind == Kind::Redirect ? TC_ACT_STOLEN : TC_ACT_PIPE),
      target_(target),
      target_name_(std::move(target_name)),
      events_(events, &MirredAction::netdev_event, this) {}

// mirrors mirred_device_event: the target is going away; the device table frees it only
// after a grace period, so a packet that loaded it before this store is done with it.
void MirredAction::netdev_event(void* self, NetdevEvent ev, NetDevice& dev) {
  auto* m = static_cast<MirredAction*>(self);
  if (ev != NetdevEvent::UNREGISTER) return;
  NetDevice* expected = &dev;
  m->target_.compare_exchange_strong(expected, nullptr, std::memory_order_release);
}


// mirrors tcf_mirred_act: redirect hands the packet itself on (the kernel's reinsert
// path), mirror sends a copy; both re-enter the target's transmit or receive path on this
// Cpu, nested, so a loop ends at the recursion limit. Bytes are skb->len's (no Ethernet
// header on ingress); overlimits count what could not be sent and what the target refused.
int MirredAction::act(const TcContext& ctx, Packet* p, TcResult&) {
  Cpu& cpu = ctx.cpu;
  TcStats::Slot& s = stats.at(cpu);
  s.packets.add();
  s.bytes.add(tc_skb_len(ctx, p));
  const bool redirect = kind_ == Kind::Redirect;
  if (PP_UNLIKELY(cpu.xmit_recursion >= kXmitRecursionLimit)) {
    s.overlimits.add();
    if (!redirect) return retval_;  // the mirror copy is simply not made
    cpu.free_reason(p, DropReason::XMIT_RECURSION);
    return TC_ACT_CONSUMED;
  }
  // "target device is gone" / "device is down": tcf_mirred_act's out path.
  NetDevice* target = target_.load(std::memory_order_acquire);
  if (PP_UNLIKELY(!target || !target->is_up())) {
    s.overlimits.add();
    return redirect ? TC_ACT_SHOT : retval_;
  }
  Packet* out = p;
  if (!redirect) {
    out = packet_copy(cpu, p);
    if (!out) {
      s.overlimits.add();
      return retval_;
    }
  }
  out->skb_iif = p->dev ? p->dev->ifindex() : 0;
  out->dev = target;
  ++cpu.xmit_recursion;
  const int err = dir_ == Dir::Egress ? dev_queue_xmit(cpu, out) : netif_receive_skb(cpu, out);
  --cpu.xmit_recursion;
  // tcf_mirred_forward failed: the target's qdisc or receive path refused the packet
  // (it is gone either way; counted where it was dropped).
  if (err) s.overlimits.add();
  return redirect ? TC_ACT_CONSUMED : retval_;
}

ActionOptions MirredAction::dump() const {
  MirredOptions o;
  o.dir = dir_;
  o.kind = kind_;
  o.dev = target() ? target_name_ : "*";
  o.verdict = retval_;
  return o;
}

namespace {

// mirrors tcf_mirred_init: the target device must exist.
Result<std::shared_ptr<TcAction>> mirred_init(const ActionOptions& opts, DeviceTable& table) {
  const auto* o = opts.get<MirredOptions>();
  if (!o) return unexpected("mirred: bad options");
  NetDevice* t = table.find(o->dev);
  if (!t) return unexpected("mirred: cannot find device \"" + o->dev + "\"", o->dev);
  return std::shared_ptr<TcAction>(std::make_shared<MirredAction>(o->dir, o->kind, t, o->dev, table.notifier()));
}

const ActionRegistrar kMirred{{"mirred", mirred_init}};  // act_mirred_ops

}  // namespace

}  // namespace pktpath::tc
