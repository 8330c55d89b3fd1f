#include "core/netdevice.h"

#include "core/tap.h"
#include "sched/qdisc.h"

namespace pktpath {

NetDevice::NetDevice(const Config& cfg, const NetDeviceOps* ops, uint32_t flags)
    : ops_(ops),
      txqs_(nullptr),
      num_tx_queues_(cfg.num_tx_queues),
      real_num_tx_queues_(cfg.num_tx_queues),
      flags_(flags & ~IFF_UP),
      mtu_(cfg.mtu),
      tx_queue_len_(cfg.tx_queue_len),
      mac_(cfg.mac),
      name_(cfg.name) {
  txq_storage_ = std::make_unique<TxQueue[]>(num_tx_queues_);
  txqs_ = txq_storage_.get();
  for (uint16_t i = 0; i < num_tx_queues_; ++i) {
    txqs_[i].dev = this;
    txqs_[i].index = i;
  }
}

NetDevice::~NetDevice() {
  if (net_) tap_device_gone(*this);
}

bool NetDevice::set_real_num_tx_queues(uint16_t n) {
  if (n == 0 || n > num_tx_queues_) return false;
  real_num_tx_queues_ = n;
  return true;
}

// mirrors netif_tx_wake_queue
void NetDevice::tx_wake_queue(Cpu& cpu, TxQueue& q) {
  if (q.state.fetch_and(~TxQueue::kDrvXoff, std::memory_order_acq_rel) & TxQueue::kDrvXoff) {
    if (q.qdisc) q.qdisc->schedule(cpu);
  }
}

void NetDevice::tx_stop_all() {
  for (uint16_t i = 0; i < num_tx_queues_; ++i) tx_stop_queue(txqs_[i]);
}

void NetDevice::tx_wake_all(Cpu& cpu) {
  for (uint16_t i = 0; i < num_tx_queues_; ++i) tx_wake_queue(cpu, txqs_[i]);
}

std::unique_ptr<Qdisc> NetDevice::graft_root(std::unique_ptr<Qdisc> q) {
  std::unique_ptr<Qdisc> old = std::move(qdisc_);
  qdisc_ = std::move(q);
  root_is_default_ = false;
  if (is_up()) attach_queues();
  return old;
}

void NetDevice::attach_queues() {
  if (qdisc_) qdisc_->attach(*this);
}

Status NetDevice::change_mtu(uint32_t m) {
  if (m == mtu_) return {};
  if (ops().change_mtu) {
    if (Status st = ops().change_mtu(*this, m); !st) return st;
  }
  mtu_ = m;
  return {};
}

DevStatsSum NetDevice::get_stats64() const {
  return ops().get_stats64 ? ops().get_stats64(*this) : stats_sum();
}

DevStatsSum NetDevice::stats_sum() const {
  DevStatsSum s;
  pcpu_.for_each([&](const DevCpuStats& c) {
    s.tx_packets += c.tx_packets.get();
    s.tx_bytes += c.tx_bytes.get();
    s.tx_dropped += c.tx_dropped.get();
    s.rx_packets += c.rx_packets.get();
    s.rx_bytes += c.rx_bytes.get();
    s.rx_dropped += c.rx_dropped.get();
  });
  return s;
}

}  // namespace pktpath
