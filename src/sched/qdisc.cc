#include "sched/qdisc.h"

#include "core/netdevice.h"

namespace pktpath {

QdiscStats& QdiscStats::operator+=(const QdiscStats& o) {
  packets += o.packets;
  bytes += o.bytes;
  drops += o.drops;
  overlimits += o.overlimits;
  requeues += o.requeues;
  backlog += o.backlog;
  qlen += o.qlen;
  bypassed += o.bypassed;
  return *this;
}

Qdisc::Qdisc(const char* kind, uint32_t flags) : flags_(flags), kind_(kind) {}

Qdisc::~Qdisc() = default;

void Qdisc::enable_cpu_stats() {
  pcpu_ = std::make_unique<QdiscStatsBlock[]>(kMaxCpus);
  flags_ |= TCQ_F_CPUSTATS;
}

Status Qdisc::init(NetDevice&, const QdiscOptions& opts) {
  if (!opts.empty()) return unexpected(std::string("qdisc ") + kind_ + " takes no options");
  return {};
}

Result<std::unique_ptr<Qdisc>> Qdisc::graft(NetDevice&, uint32_t, std::unique_ptr<Qdisc>) {
  return unexpected(std::string("qdisc ") + kind_ + " is classless");
}

Status Qdisc::class_change(NetDevice&, Cpu&, uint32_t, uint32_t, const KindOptions&, std::string&) {
  return unexpected(std::string("qdisc ") + kind_ + " has no classes to change");
}

Status Qdisc::class_delete(NetDevice&, Cpu&, uint32_t) {
  return unexpected(std::string("qdisc ") + kind_ + " has no classes to delete");
}

// Default attach (qdisc_graft at the root for a non-mq qdisc): every tx queue uses this
// qdisc. With a single queue all packets go to one txq, so bulk dequeue is allowed.
void Qdisc::attach(NetDevice& dev) {
  for (uint16_t i = 0; i < dev.num_tx_queues(); ++i) dev.txq(i).qdisc = this;
  set_dev_queue(&dev, &dev.txq(0));
  if (dev.num_tx_queues() == 1)
    flags_ |= TCQ_F_ONETXQUEUE;
  else
    flags_ &= ~TCQ_F_ONETXQUEUE;
}

static void add_block(QdiscStats& s, const QdiscStatsBlock& b) {
  s.packets += b.packets.get();
  s.bytes += b.bytes.get();
  s.drops += b.drops.get();
  s.overlimits += b.overlimits.get();
  s.requeues += b.requeues.get();
  s.backlog += b.backlog.get();
  s.qlen += b.qlen.get();
  s.bypassed += b.bypassed.get();
}

QdiscStats Qdisc::own_stats() const {
  QdiscStats s;
  add_block(s, stats_);
  if (pcpu_)
    for (unsigned i = 0; i < kMaxCpus; ++i) add_block(s, pcpu_[i]);
  return s;
}

QdiscStats Qdisc::stats() const { return own_stats(); }

void Qdisc::tree_reduce_backlog(const Cpu& cpu, int32_t n, int32_t len) {
  if (n == 0 && len == 0) return;
  const uint64_t drops = n > 0 ? static_cast<uint64_t>(n) : 0;
  for (Qdisc* a = parent_q_; a != nullptr; a = a->parent_q_) {
    QdiscStatsBlock& s = a->st(cpu);
    s.qlen.add(static_cast<uint64_t>(-int64_t{n}));
    s.backlog.add(static_cast<uint64_t>(-int64_t{len}));
    s.drops.add(drops);
  }
}

void Qdisc::reset_requeued(Cpu& cpu) {
  LockGuard g(lock_);
  while (Packet* p = gso_list.pop_front()) cpu.free_reason(p, DropReason::QDISC_DROP);
  requeued.store(0, std::memory_order_release);
  zero_backlog();
}

// qlen/backlog are split over per-Cpu blocks whose values only add up: after a reset
// the whole set is zeroed (control thread, no traffic).
void Qdisc::zero_backlog() {
  stats_.qlen.reset();
  stats_.backlog.reset();
  if (pcpu_)
    for (unsigned i = 0; i < kMaxCpus; ++i) {
      pcpu_[i].qlen.reset();
      pcpu_[i].backlog.reset();
    }
}

}  // namespace pktpath
