#include "core/dev_table.h"

#include "core/link_kind.h"
#include "core/net.h"
#include "core/rcu.h"
#include "sched/sch_generic.h"

namespace pktpath {

DeviceTable::DeviceTable(Cpu& control, Net& net) : control_(control), net_(net) {}

DeviceTable::~DeviceTable() { clear(); }

void DeviceTable::clear() {
  std::vector<std::string> names;
  for (auto& [name, idx] : by_name_) names.push_back(name);
  for (auto& n : names) (void)del(n);  // a veth's dellink may have taken n already
  graveyard_.clear();
}

// dev_valid_name: 1..15 bytes, not "." or "..", no '/', ':' or whitespace.
static bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 15 || n == "." || n == "..") return false;
  for (char c : n)
    if (c == '/' || c == ':' || c == ' ' || c == '\t' || c == '\n') return false;
  return true;
}

Result<NetDevice*> DeviceTable::add(const NetDevice::Config& cfg, std::string_view kind) {
  const LinkKind* lk = link_kind_lookup(kind);
  if (!lk) return unexpected("unknown link type \"" + std::string(kind) + "\"");
  if (!valid_name(cfg.name)) return unexpected("\"" + cfg.name + "\" is not a valid device name");
  if (by_name_.count(cfg.name)) return unexpected("device \"" + cfg.name + "\" already exists");
  if (cfg.num_tx_queues < 1 || cfg.num_tx_queues > kMaxTxQueues)
    return unexpected("numtxqueues must be 1.." + std::to_string(kMaxTxQueues));
  auto dev = std::make_unique<NetDevice>(cfg, lk->ops, lk->flags);
  const int idx = next_ifindex_++;
  dev->set_ifindex(idx);
  dev->set_net(&net_);
  if (!cfg.mac_set) {
    // A deterministic locally administered address, distinct per namespace and ifindex
    // (the kernel picks a random one, eth_hw_addr_random): 02:NN:NN:NN:II:II, NN from
    // the namespace's name (0 for the initial one), II the ifindex.
    uint32_t salt = 2166136261u;
    for (unsigned char c : net_.name()) salt = (salt ^ c) * 16777619u;  // FNV-1a
    salt = net_.name().empty() ? 0 : (salt ^ (salt >> 24)) | 1;
    dev->set_mac({0x02, static_cast<uint8_t>(salt >> 16), static_cast<uint8_t>(salt >> 8), static_cast<uint8_t>(salt),
                  static_cast<uint8_t>(idx >> 8), static_cast<uint8_t>(idx)});
  }
  for (uint16_t i = 0; i < dev->num_tx_queues(); ++i) dev->txq(i).qdisc = &noop_qdisc();
  if (lk->setup) lk->setup(*dev);
  NetDevice* raw = dev.get();
  by_index_[idx] = Entry{std::move(dev), lk->kind, 0x8001};
  by_name_[cfg.name] = idx;
  if (lk->busy) with_work_.insert(idx);
  return raw;
}

Status DeviceTable::del(std::string_view name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return unexpected("Cannot find device \"" + std::string(name) + "\"");
  const int idx = it->second;
  NetDevice& dev = *by_index_[idx].dev;
  if (const LinkKind* lk = link_kind_lookup(by_index_[idx].kind); lk && lk->dellink) lk->dellink(dev);
  (void)set_up(dev, false);  // going down cannot fail
  if (std::unique_ptr<Qdisc> old = dev.graft_root(nullptr)) retire(std::move(old));
  notifier_.call(NetdevEvent::UNREGISTER, dev);
  // flush_all_backlogs for the Cpu this table runs on (datapath Cpus are quiesced by
  // whoever deletes, and other Cpus it drives flush themselves: ScriptRunner).
  control_.flush_backlog(dev);
  // synchronize_net: a reader that loaded a pointer a subscriber just dropped (a mirred
  // target) is past it before the device is freed.
  rcu_synchronize();
  by_name_.erase(it);
  by_index_.erase(idx);
  with_work_.erase(idx);
  reap();
  return {};
}

std::unique_ptr<NetDevice> DeviceTable::unlink(NetDevice& dev, std::string* kind) {
  auto it = by_index_.find(dev.ifindex());
  if (it == by_index_.end() || it->second.dev.get() != &dev) return nullptr;
  std::unique_ptr<NetDevice> owned = std::move(it->second.dev);
  if (kind) *kind = std::move(it->second.kind);
  by_name_.erase(owned->name());
  with_work_.erase(it->first);
  by_index_.erase(it);
  reap();
  return owned;
}

Result<NetDevice*> DeviceTable::adopt(std::unique_ptr<NetDevice> dev, std::string kind) {
  if (by_name_.count(dev->name()))
    return unexpected("device \"" + dev->name() + "\" already exists in the target namespace");
  // The ifindex travels with the device unless taken (dev_change_net_namespace).
  int idx = dev->ifindex();
  if (by_index_.count(idx)) {
    while (by_index_.count(next_ifindex_)) ++next_ifindex_;
    idx = next_ifindex_++;
  }
  if (idx >= next_ifindex_) next_ifindex_ = idx + 1;
  dev->set_ifindex(idx);
  dev->set_net(&net_);
  NetDevice* raw = dev.get();
  if (const LinkKind* lk = link_kind_lookup(kind); lk && lk->busy) with_work_.insert(idx);
  by_index_[idx] = Entry{std::move(dev), std::move(kind), 0x8001};
  by_name_[raw->name()] = idx;
  return raw;
}

NetDevice* DeviceTable::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : by_index_.at(it->second).dev.get();
}

NetDevice* DeviceTable::find(int ifindex) const {
  auto it = by_index_.find(ifindex);
  return it == by_index_.end() ? nullptr : it->second.dev.get();
}

std::vector<NetDevice*> DeviceTable::list() const {
  std::vector<NetDevice*> v;
  for (auto& [i, e] : by_index_) v.push_back(e.dev.get());
  return v;
}

std::vector<NetDevice*> DeviceTable::with_work() const {
  std::vector<NetDevice*> v;
  for (int idx : with_work_) v.push_back(by_index_.at(idx).dev.get());
  return v;
}

std::string_view DeviceTable::kind_of(const NetDevice& dev) const {
  auto it = by_index_.find(dev.ifindex());
  return it == by_index_.end() ? std::string_view{} : std::string_view(it->second.kind);
}

uint32_t DeviceTable::alloc_handle(NetDevice& dev) {
  Entry& e = by_index_.at(dev.ifindex());
  return e.next_handle++ << 16;
}

// mirrors __dev_open / __dev_close_many
Status DeviceTable::set_up(NetDevice& dev, bool up) {
  if (up == dev.is_up()) return {};
  if (up) {
    if (dev.ops().open && dev.ops().open(dev) != 0) {
      return unexpected("device \"" + dev.name() + "\" failed to open");
    }
    dev.set_flag(IFF_UP, true);
    dev_activate(dev);
    notifier_.call(NetdevEvent::UP, dev);
    return {};
  }
  dev_deactivate(control_, dev);
  if (dev.ops().stop) dev.ops().stop(dev);
  dev.set_flag(IFF_UP, false);
  reap();
  notifier_.call(NetdevEvent::DOWN, dev);
  return {};
}

void DeviceTable::retire(std::unique_ptr<Qdisc> q) {
  if (!q) return;
  q->state().fetch_or(QDISC_STATE_DEACTIVATED, std::memory_order_seq_cst);
  for (unsigned i = 0; i < q->num_children(); ++i)
    if (Qdisc* c = q->child_at(i)) {
      c->state().fetch_or(QDISC_STATE_DEACTIVATED, std::memory_order_seq_cst);
      qdisc_reset_all(control_, *c);
    }
  qdisc_reset_all(control_, *q);
  graveyard_.push_back(std::move(q));
  reap();
}

static bool scheduled(const Qdisc& q) {
  if (const_cast<Qdisc&>(q).state().load(std::memory_order_acquire) & QDISC_STATE_SCHED)
    return true;
  for (unsigned i = 0; i < q.num_children(); ++i)
    if (Qdisc* c = q.child_at(i); c && scheduled(*c)) return true;
  return false;
}

void DeviceTable::reap() {
  // The control Cpu may hold some of them on its own work list: run it first.
  control_.run_pending();
  std::erase_if(graveyard_, [](const std::unique_ptr<Qdisc>& q) { return !scheduled(*q); });
}

}  // namespace pktpath
