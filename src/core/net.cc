#include "core/net.h"

#include <cstdlib>

namespace pktpath {

namespace {
// The registered pernet operations, in registration order (pernet_list). Written only
// during static initialisation, read when Nets are made.
std::vector<PernetOps>& pernet_list() {
  static std::vector<PernetOps> v;
  return v;
}
}  // namespace

PernetId register_pernet_subsys(const PernetOps& ops) {
  pernet_list().push_back(ops);
  return static_cast<PernetId>(pernet_list().size() - 1);
}

// mirrors setup_net: every subsystem's init, in registration order.
Net::Net(Cpu& control, std::string name) : name_(std::move(name)) {
  devices_ = std::make_unique<DeviceTable>(control, *this);
  for (const PernetOps& ops : pernet_list()) {
    generic_.push_back(ops.init(*this));
    if (!generic_.back()) std::abort();  // an init that fails leaves no usable Net
  }
}

// mirrors cleanup_net: pre_exit (newest first), the devices, then the states.
Net::~Net() {
  for (auto it = generic_.rbegin(); it != generic_.rend(); ++it) (*it)->pre_exit(*this);
  devices_->clear();
  devices_.reset();
  while (!generic_.empty()) generic_.pop_back();
}

Cpu::Options Net::cpu_options() {
  Cpu::Options o;
  o.defer_free = core_.defer_free.load();
  o.defer_max = core_.skb_defer_max.load();
  o.max_backlog = core_.netdev_max_backlog.load();
  o.netdev_budget = core_.netdev_budget.load();
  o.netdev_budget_usecs = core_.netdev_budget_usecs.load();
  o.dev_rx_weight = core_.dev_weight.load();
  o.clock = clock_;
  o.trace = trace_;
  return o;
}

std::string Net::default_qdisc() const {
  std::lock_guard g(mu_);
  return default_qdisc_;
}

void Net::set_default_qdisc(std::string kind) {
  std::lock_guard g(mu_);
  default_qdisc_ = std::move(kind);
}

}  // namespace pktpath
