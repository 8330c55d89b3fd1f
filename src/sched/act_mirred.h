// mirred: mirror (copy) or redirect a packet to another device (net/sched/act_mirred.c).
#pragma once

#include <string>

#include "sched/act_api.h"

namespace pktpath::tc {

// Mirror or redirect to another device's egress (dev_queue_xmit) or ingress
// (netif_receive_skb). Mirrors tcf_mirred_act; nesting is bounded by
// Cpu::xmit_recursion (limit 8): past it the packet is dropped and counted under
// XMIT_RECURSION, and the action's overlimits count it.
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
  ActionOptions dump() const override;
  NetDevice* target() const { return target_; }

 private:
  Dir dir_;
  Kind kind_;
  int retval_;  // what the action returns after a mirror/redirect (PIPE / STOLEN)
  NetDevice* target_;
  std::string target_name_;
};

// The device is named; init resolves it. A dump has `verdict` set: what the action
// returns after its work (tc prints it: stolen for redirect, pipe for mirror).
struct MirredOptions : KindOptionsBase {
  MirredAction::Dir dir = MirredAction::Dir::Egress;
  MirredAction::Kind kind = MirredAction::Kind::Redirect;
  std::string dev;
  int verdict = TC_ACT_STOLEN;
};

}  // namespace pktpath::tc
