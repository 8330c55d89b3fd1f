// mirred: mirror (copy) or redirect a packet to another device (net/sched/act_mirred.c).
#pragma once

#include <atomic>
#include <string>

#include "core/netdev_notifier.h"
#include "sched/act_api.h"

namespace pktpath::tc {

// Mirror or redirect to another device's egress (dev_queue_xmit) or ingress
// (netif_receive_skb). Mirrors tcf_mirred_act; nesting is bounded by
// Cpu::xmit_recursion (limit 8): past it the packet is dropped and counted under
// XMIT_RECURSION, and the action's overlimits count it.
//
// The target may be deleted while the action lives: the action subscribes to the target's
// device events (`events`, the device table's chain) and on NETDEV_UNREGISTER forgets the
// target (mirrors mirred_device_event). A redirect to no device, or to a device that is
// down, is dropped by the caller (TC_ACT_SHOT: counted under TC_EGRESS / TC_INGRESS) and
// counted in the action's overlimits; a mirror makes no copy and counts the same.
class MirredAction final : public TcAction {
 public:
  enum class Dir : uint8_t { Egress, Ingress };
  enum class Kind : uint8_t { Redirect, Mirror };
  MirredAction(Dir dir, Kind kind, NetDevice* target, std::string target_name, NetdevNotifierChain& events);
  int act(const TcContext& ctx, Packet* p, TcResult& res) override;
  const char* kind() const override { return "mirred"; }
  ActionOptions dump() const override;
  // nullptr once the target was deleted.
  NetDevice* target() const { return target_.load(std::memory_order_acquire); }

 private:
  static void netdev_event(void* self, NetdevEvent ev, NetDevice& dev);

  Dir dir_;
  Kind kind_;
  int retval_;  // what the action returns after a mirror/redirect (PIPE / STOLEN)
  std::atomic<NetDevice*> target_;  // RCU-style: cleared on unregister, freed after a grace period
  std::string target_name_;
  NetdevSubscription events_;  // last: unsubscribes before the rest goes away
};

// The device is named; init resolves it. A dump names "*" once the target is gone
// (iproute2's ll_index_to_name of ifindex 0). A dump has `verdict` set: what the action
// returns after its work (tc prints it: stolen for redirect, pipe for mirror).
struct MirredOptions : KindOptionsBase {
  MirredAction::Dir dir = MirredAction::Dir::Egress;
  MirredAction::Kind kind = MirredAction::Kind::Redirect;
  std::string dev;
  int verdict = TC_ACT_STOLEN;
};

}  // namespace pktpath::tc
