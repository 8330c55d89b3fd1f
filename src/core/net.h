// Net: one network namespace (struct net). It owns what Linux keeps per netns: the
// devices (ifindex space and names), the core sysctl values (net->core), and every
// subsystem's per-namespace state through pernet operations (register_pernet_subsys /
// net_generic). Paths reach their Net through the device (NetDevice::net(), dev_net()),
// never through a global. Process-wide stay only what Linux keeps per CPU or per machine
// (Cpus, pools) and the immutable registrations (pernet ops, sysctl tables, kinds).
//
// Lifetime: create and destroy on the control thread. Destruction runs every subsystem's
// pre_exit (newest registration first, ops_pre_exit), destroys the devices, then the
// subsystems' states (ops_exit), as cleanup_net does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/dev_table.h"

namespace pktpath {

class Net;
class CpuSet;

// One subsystem's state in one Net (what net_generic(net, id) returns).
struct PernetState {
  virtual ~PernetState() = default;
  // Before the Net's devices go (ops_pre_exit): drop references to them.
  virtual void pre_exit(Net&) {}
};

// pernet_operations: init makes the subsystem's state for a new Net; its destructor is
// the exit.
struct PernetOps {
  const char* name;
  std::unique_ptr<PernetState> (*init)(Net& net);
};
using PernetId = unsigned;

// register_pernet_subsys: static initialisation only (a file-scope PernetRegistrar);
// the id indexes Net::generic.
PernetId register_pernet_subsys(const PernetOps& ops);
struct PernetRegistrar {
  explicit PernetRegistrar(const PernetOps& ops) : id(register_pernet_subsys(ops)) {}
  const PernetId id;
};

// The transmit path's switches (document 001's A/B): off makes every packet take
// enqueue + qdisc_run even when the qdisc is empty.
struct XmitConfig {
  std::atomic<bool> bypass{true};
};

// net->core: the net.core.* sysctl values and pktpath's core switches. Atomics: read on
// the datapath or by other threads while the control thread sets them.
struct NetCore {
  std::atomic<uint32_t> dev_weight{64};          // net.core.dev_weight (dev_tx_weight)
  std::atomic<uint32_t> netdev_budget{300};      // net.core.netdev_budget
  std::atomic<uint32_t> netdev_max_backlog{1000};  // net.core.netdev_max_backlog
  std::atomic<uint32_t> skb_defer_max{64};       // net.core.skb_defer_max
  std::atomic<bool> defer_free{true};            // net.pktpath.defer_free
  std::atomic<uint32_t> netdev_budget_usecs{2000};  // net.core.netdev_budget_usecs
};

class Net {
 public:
  // `control`: the Cpu of the thread that configures this Net (DeviceTable's).
  explicit Net(Cpu& control, std::string name = "");
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  // Empty for the first namespace of a script (init_net); `ip netns add NAME` names.
  const std::string& name() const { return name_; }
  DeviceTable& devices() { return *devices_; }
  Cpu& control_cpu() { return devices_->control_cpu(); }

  // net_generic: the state subsystem `id` made for this Net.
  template <typename T>
  T& generic(PernetId id) {
    return static_cast<T&>(*generic_[id]);
  }

  // The datapath Cpus RPS maps of this Net's devices may name (core/cpu_thread.h); owned
  // by whoever runs the Net, shared by all its Nets. Null: none.
  CpuSet* cpu_set() const { return cpu_set_; }
  void set_cpu_set(CpuSet* s) { cpu_set_ = s; }

  // The options a datapath Cpu working for this Net takes from its sysctls
  // (skb_defer_max, netdev_max_backlog, netdev_budget[_usecs], dev_weight, defer_free).
  Cpu::Options cpu_options();
  // The clock this Net's Cpus read (`clock virtual`); null: the monotonic clock.
  Clock* clock() const { return clock_; }
  void set_clock(Clock* c) { clock_ = c; }
  // The tracer the Cpus made for this Net get (core/packet_trace.h); null: none.
  PacketTrace* trace() const { return trace_; }
  void set_trace(PacketTrace* t) { trace_ = t; }

  XmitConfig& xmit_config() { return xmit_; }
  NetCore& core() { return core_; }
  // net.core.default_qdisc (the kind attach_default_qdiscs gives a queueing device).
  std::string default_qdisc() const;
  void set_default_qdisc(std::string kind);

 private:
  std::string name_;
  XmitConfig xmit_;
  NetCore core_;
  CpuSet* cpu_set_ = nullptr;
  Clock* clock_ = nullptr;
  PacketTrace* trace_ = nullptr;
  mutable std::mutex mu_;  // default_qdisc_
  std::string default_qdisc_ = "pfifo_fast";
  std::vector<std::unique_ptr<PernetState>> generic_;
  // Last: destroyed first (after pre_exit), while the subsystems' states still exist.
  std::unique_ptr<DeviceTable> devices_;
};

}  // namespace pktpath
