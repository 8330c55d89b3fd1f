// DeviceTable: the devices of one pktpath instance, by name and by ifindex (the netns's
// dev_base list and name/index hashes), plus device up/down and the qdiscs that were
// replaced but may still sit on some Cpu's tx work list.
//
// Concurrency: control-thread only, with no traffic on the devices it changes (see
// NetDevice). Before destroying the table, every Cpu that sent on its devices must have
// run its pending work (Cpu::run_pending) so that no qdisc is still scheduled.
#pragma once

#include <map>
#include <set>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpu.h"
#include "core/netdev_notifier.h"
#include "core/netdevice.h"
#include "core/result.h"

namespace pktpath {

class Net;

class DeviceTable {
 public:
  // `control`: the Cpu of the thread that configures; drops from resets count on it.
  // `net`: the namespace the devices belong to (Net owns its table).
  DeviceTable(Cpu& control, Net& net);
  ~DeviceTable();
  DeviceTable(const DeviceTable&) = delete;
  DeviceTable& operator=(const DeviceTable&) = delete;

  // `ip link add`: fails if the name is taken or invalid, or the kind unknown.
  Result<NetDevice*> add(const NetDevice::Config& cfg, std::string_view kind);
  // `ip link del` (mirrors unregister_netdevice_many): down (NETDEV_DOWN), qdiscs
  // retired, NETDEV_UNREGISTER to the subscribers, a grace period, device destroyed.
  Status del(std::string_view name);
  // Delete every device (as ~DeviceTable), while the table is still reachable from its
  // Net (a veth's dellink deletes its peer through the peer's Net).
  void clear();
  NetDevice* find(std::string_view name) const;
  NetDevice* find(int ifindex) const;
  std::vector<NetDevice*> list() const;  // by ifindex
  // The devices whose kind does work of its own between lines (LinkKind::busy: a pcap
  // replay, a tx file), in ifindex order: what a script settles after each line without
  // walking every device.
  std::vector<NetDevice*> with_work() const;
  std::string_view kind_of(const NetDevice& dev) const;

  // dev_open / dev_close: up attaches the default qdisc if none is set and activates the
  // tx queues (then NETDEV_UP); down deactivates them (queued packets dropped,
  // QDISC_DROP; then NETDEV_DOWN).
  Status set_up(NetDevice& dev, bool up);

  // Take a qdisc out of service: deactivate, drop what it holds, keep the object until
  // it is off every Cpu's tx work list (reap()).
  void retire(std::unique_ptr<Qdisc> q);
  void reap();
  size_t retired_count() const { return graveyard_.size(); }

  Cpu& control_cpu() { return control_; }
  Net& net() { return net_; }

  // dev_change_net_namespace's two halves: take a device (already down, its qdiscs and
  // hooks flushed) out of this table, and put it into another one, keeping its ifindex
  // when that is free there (else the next free one).
  std::unique_ptr<NetDevice> unlink(NetDevice& dev, std::string* kind);
  Result<NetDevice*> adopt(std::unique_ptr<NetDevice> dev, std::string kind);
  // The device events of this table's devices (core/netdev_notifier.h).
  NetdevNotifierChain& notifier() { return notifier_; }
  // Next automatic qdisc handle for a device ("8001:", "8002:", ...).
  uint32_t alloc_handle(NetDevice& dev);

 private:
  struct Entry {
    std::unique_ptr<NetDevice> dev;
    std::string kind;
    uint32_t next_handle = 0x8001;
  };
  Cpu& control_;
  Net& net_;
  NetdevNotifierChain notifier_;  // outlives the devices: ~DeviceTable deletes them first
  int next_ifindex_ = 1;
  std::map<int, Entry> by_index_;
  std::map<std::string, int, std::less<>> by_name_;
  std::set<int> with_work_;  // ifindexes
  std::vector<std::unique_ptr<Qdisc>> graveyard_;
};

}  // namespace pktpath
