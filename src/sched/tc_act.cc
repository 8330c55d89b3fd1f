// gact, mirred and skbedit, and the action pipeline (net/sched/act_api.c, act_gact.c,
// act_mirred.c, act_skbedit.c).
#include "sched/tc_act.h"

#include <cstring>

#include "core/dev_rx.h"
#include "core/dev_xmit.h"
#include "core/netdevice.h"

namespace pktpath::tc {

const char* tc_act_name(int v) {
  switch (v) {
    case TC_ACT_UNSPEC: return "continue";
    case TC_ACT_OK: return "pass";
    case TC_ACT_RECLASSIFY: return "reclassify";
    case TC_ACT_SHOT: return "drop";
    case TC_ACT_PIPE: return "pipe";
    case TC_ACT_STOLEN: return "stolen";
    case TC_ACT_QUEUED: return "queued";
    case TC_ACT_REPEAT: return "repeat";
    case TC_ACT_REDIRECT: return "redirect";
    case TC_ACT_TRAP: return "trap";
    default: return "unknown";
  }
}

TcStats::Sum TcStats::sum() const {
  Sum s;
  for (unsigned i = 0; i < kMaxCpus; ++i) {
    s.packets += slots_[i].packets.get();
    s.bytes += slots_[i].bytes.get();
    s.drops += slots_[i].drops.get();
    s.overlimits += slots_[i].overlimits.get();
    s.matched += slots_[i].matched.get();
  }
  return s;
}

// mirrors tcf_gact_act (no random part): count, then the configured verdict.
int GactAction::act(const TcContext& ctx, Packet* p, TcResult&) {
  TcStats::Slot& s = stats.at(ctx.cpu);
  s.packets.add();
  s.bytes.add(p->len);
  if (verdict_ == TC_ACT_SHOT) s.drops.add();
  return verdict_;
}

std::string GactAction::describe() const { return std::string("gact action ") + tc_act_name(verdict_); }

MirredAction::MirredAction(Dir dir, Kind kind, NetDevice* target, std::string target_name)
    : dir_(dir),
      kind_(kind),
      retval_(kind == Kind::Redirect ? TC_ACT_STOLEN : TC_ACT_PIPE),
      target_(target),
      target_name_(std::move(target_name)) {}

namespace {

// A private copy for mirror (skb_clone in the kernel; pktpath copies, the packets are
// small and the copy keeps ownership simple). nullptr when the pool is exhausted.
Packet* mirror_copy(Cpu& cpu, const Packet* p) {
  Packet* c = cpu.alloc();
  if (!c) return nullptr;
  uint8_t* dst = c->put(p->len);
  if (!dst || !p->copy_bits(0, dst, p->len)) {
    cpu.free(c);
    return nullptr;
  }
  c->protocol = p->protocol;
  c->pkt_type = p->pkt_type;
  c->mark = p->mark;
  c->priority = p->priority;
  c->hash = p->hash;
  c->queue_mapping = p->queue_mapping;
  c->vlan_tci = p->vlan_tci;
  c->vlan_proto = p->vlan_proto;
  c->vlan_present = p->vlan_present;
  c->tc_index = p->tc_index;
  return c;
}

}  // namespace

// mirrors tcf_mirred_act: redirect hands the packet itself on (the kernel's reinsert
// path), mirror sends a copy; both re-enter the target's transmit or receive path on this
// Cpu, nested, so a loop ends at the recursion limit.
int MirredAction::act(const TcContext& ctx, Packet* p, TcResult&) {
  Cpu& cpu = ctx.cpu;
  TcStats::Slot& s = stats.at(cpu);
  s.packets.add();
  s.bytes.add(p->len);
  const bool redirect = kind_ == Kind::Redirect;
  if (PP_UNLIKELY(cpu.xmit_recursion >= kXmitRecursionLimit)) {
    s.overlimits.add();
    if (!redirect) return retval_;  // the mirror copy is simply not made
    cpu.free_reason(p, DropReason::XMIT_RECURSION);
    return TC_ACT_CONSUMED;
  }
  if (PP_UNLIKELY(!target_->is_up())) {
    s.overlimits.add();
    return redirect ? TC_ACT_SHOT : retval_;
  }
  Packet* out = p;
  if (!redirect) {
    out = mirror_copy(cpu, p);
    if (!out) {
      s.overlimits.add();
      return retval_;
    }
  }
  out->skb_iif = p->dev ? p->dev->ifindex() : 0;
  out->dev = target_;
  ++cpu.xmit_recursion;
  if (dir_ == Dir::Egress)
    dev_queue_xmit(cpu, out);
  else
    netif_receive_skb(cpu, out);
  --cpu.xmit_recursion;
  return redirect ? TC_ACT_CONSUMED : retval_;
}

std::string MirredAction::describe() const {
  std::string s = "mirred (";
  s += dir_ == Dir::Egress ? "Egress " : "Ingress ";
  s += kind_ == Kind::Redirect ? "Redirect" : "Mirror";
  s += " to device " + target_name_ + ") ";
  s += tc_act_name(retval_);
  return s;
}

// mirrors tcf_skbedit_act
int SkbeditAction::act(const TcContext& ctx, Packet* p, TcResult&) {
  stats.count(ctx.cpu, p);
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

std::string SkbeditAction::describe() const {
  std::string s = "skbedit";
  if (p_.queue_mapping) s += " queue_mapping " + std::to_string(*p_.queue_mapping);
  if (p_.priority) {
    char b[32];
    std::snprintf(b, sizeof b, " priority %x:%x", *p_.priority >> 16, *p_.priority & 0xffff);
    s += b;
  }
  if (p_.mark) s += " mark " + std::to_string(*p_.mark);
  s += " ";
  s += tc_act_name(p_.verdict);
  return s;
}

// mirrors tcf_action_exec (no jump/goto chain: pktpath's actions never return them)
int tcf_action_exec(const TcContext& ctx, Packet* p, const ActionList& actions, TcResult& res) {
  int ret = TC_ACT_OK;
  for (const auto& a : actions) {
    int repeat_ttl = 32;
    do {
      ret = a->act(ctx, p, res);
    } while (PP_UNLIKELY(ret == TC_ACT_REPEAT) && --repeat_ttl != 0);
    if (ret == TC_ACT_REPEAT) return TC_ACT_OK;
    if (ret != TC_ACT_PIPE) break;
  }
  return ret;
}

}  // namespace pktpath::tc
