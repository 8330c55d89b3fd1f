// The net.core.* sysctls core owns, and pktpath's own core switches (mirrors
// net/core/sysctl_net_core.c). Values live in each Net (Net::core(), Net::xmit_config()).
// dev_weight, netdev_budget, netdev_max_backlog and skb_defer_max are per machine in
// Linux; here each Net holds its own.
#include <limits>

#include "core/cpu_thread.h"
#include "core/net.h"
#include "core/sysctl.h"

namespace pktpath {

namespace {

constexpr uint32_t kIntMax = std::numeric_limits<int32_t>::max();

#define PP_CORE_UINT(var, key, lo)                                                    \
  const SysctlRegistrar var{                                                          \
      {key, nullptr, "N", [](Net& n) { return std::to_string(n.core().var.load()); }, \
       [](Net& n, const std::string& v) -> Status {                                   \
         uint32_t x = 0;                                                              \
         if (Status st = sysctl_parse_uint(key, v, lo, kIntMax, &x); !st) return st;  \
         n.core().var.store(x);                                                       \
         return {};                                                                   \
       }}};

// proc_dointvec_minmax with the kernel's minimums (dev_weight and netdev_budget >= 1).
PP_CORE_UINT(dev_weight, "net.core.dev_weight", 1)
PP_CORE_UINT(netdev_budget, "net.core.netdev_budget", 1)
PP_CORE_UINT(netdev_budget_usecs, "net.core.netdev_budget_usecs", 0)
PP_CORE_UINT(netdev_max_backlog, "net.core.netdev_max_backlog", 0)
PP_CORE_UINT(skb_defer_max, "net.core.skb_defer_max", 0)
#undef PP_CORE_UINT

std::string on_off(bool on) { return on ? "on" : "off"; }

// Document 001's A/B: the empty-qdisc bypass.
const SysctlRegistrar qdisc_bypass{
    {"net.pktpath.qdisc_bypass", "bypass", "on|off",
     [](Net& n) { return on_off(n.xmit_config().bypass.load()); },
     [](Net& n, const std::string& v) -> Status {
       bool on = false;
       if (Status st = sysctl_parse_on_off("net.pktpath.qdisc_bypass", v, &on); !st) return st;
       n.xmit_config().bypass.store(on);
       return {};
     }}};

// Document 002's A/B: frees on a remote Cpu go through the allocator's defer list.
const SysctlRegistrar defer_free{
    {"net.pktpath.defer_free", "defer_free", "on|off",
     [](Net& n) { return on_off(n.core().defer_free.load()); },
     [](Net& n, const std::string& v) -> Status {
       bool on = false;
       if (Status st = sysctl_parse_on_off("net.pktpath.defer_free", v, &on); !st) return st;
       n.core().defer_free.store(on);
       if (CpuSet* s = n.cpu_set()) s->set_defer_free(on);
       return {};
     }}};

}  // namespace
}  // namespace pktpath
