#include "sched/sch_generic.h"

#include "core/net.h"

#include "core/dev_xmit.h"

namespace pktpath {

namespace {

// qdisc_maybe_clear_missed: the tx queue is stopped, so nobody needs to rerun the qdisc
// until a wake. Clear MISSED, then look at the queue again: a wake that raced with the
// clear must leave MISSED set; otherwise DRAINING marks the qdisc non-empty for bypass.
}  // namespace

void qdisc_maybe_clear_missed(Qdisc& q, const TxQueue& txq) {
  q.state().fetch_and(~QDISC_STATE_MISSED, std::memory_order_seq_cst);
  if (!txq.stopped())
    q.state().fetch_or(QDISC_STATE_MISSED, std::memory_order_seq_cst);
  else
    q.state().fetch_or(QDISC_STATE_DRAINING, std::memory_order_seq_cst);
}

namespace {

// try_bulk_dequeue_skb: chain more packets behind `p` while the queue's byte budget
// (BQL's dql_avail) and the packet budget allow. Only for single-queue qdiscs.
void try_bulk_dequeue(Cpu& cpu, Qdisc& q, Packet* p, const TxQueue& txq, int& packets, int budget) {
  int64_t bytelimit = static_cast<int64_t>(txq.bulk_bytes) - p->len;
  int cnt = 0;
  while (bytelimit > 0) {
    Packet* n = q.dequeue(cpu);
    if (!n) break;
    bytelimit -= n->len;
    p->next = n;
    p = n;
    if (++cnt >= budget) break;
  }
  packets += cnt;
  p->next = nullptr;
}

// dequeue_skb: requeued packets first (if their queue runs again), else the qdisc.
Packet* dequeue_skb(Cpu& cpu, Qdisc& q, int& packets, int budget) {
  packets = 1;
  NetDevice& dev = *q.dev();
  if (PP_UNLIKELY(q.requeued.load(std::memory_order_acquire) != 0)) {
    const bool nolock = q.flags() & TCQ_F_NOLOCK;
    if (nolock) q.root_lock().lock();
    Packet* p = q.gso_list.head;
    if (p) {
      TxQueue& txq = dev.txq(p->queue_mapping);
      if (!txq.stopped()) {
        q.gso_list.pop_front();
        q.requeued.fetch_sub(1, std::memory_order_relaxed);
        QdiscStatsBlock& s = q.st(cpu);
        s.qlen.add(~uint64_t{0});
        s.backlog.add(-uint64_t{p->len});
      } else {
        p = nullptr;
        qdisc_maybe_clear_missed(q, txq);
      }
      if (nolock) q.root_lock().unlock();
      return p;
    }
    if (nolock) q.root_lock().unlock();
  }
  const uint32_t flags = q.flags();
  if ((flags & TCQ_F_ONETXQUEUE) && q.dev_queue()->stopped()) {
    qdisc_maybe_clear_missed(q, *q.dev_queue());
    return nullptr;
  }
  Packet* p = q.dequeue(cpu);
  if (p && (flags & TCQ_F_ONETXQUEUE) && q.dev_queue()->bulk_bytes)
    try_bulk_dequeue(cpu, q, p, *q.dev_queue(), packets, budget);
  return p;
}

// qdisc_restart: one dequeue (maybe a bulk chain) and one driver hand-off.
PP_ALWAYS_INLINE bool qdisc_restart(Cpu& cpu, Qdisc& q, int& packets, int budget) {
  Packet* p = dequeue_skb(cpu, q, packets, budget);
  if (PP_UNLIKELY(!p)) return false;
  SpinLock* root_lock = (q.flags() & TCQ_F_NOLOCK) ? nullptr : &q.root_lock();
  NetDevice& dev = *q.dev();
  return sch_direct_xmit(cpu, p, q, dev, dev.txq(p->queue_mapping), root_lock);
}

// noop_qdisc: drops everything; dev_xmit_skb never calls its enqueue because it is
// deactivated, but the ops must exist.
class NoopQdisc final : public Qdisc {
 public:
  NoopQdisc() : Qdisc("noop", TCQ_F_BUILTIN) {
    state().store(QDISC_STATE_DEACTIVATED, std::memory_order_relaxed);
  }
  int enqueue(Cpu&, Packet* p, PacketList& to_free) override {
    to_free.push_back(p);
    return NET_XMIT_DROP;
  }
  Packet* dequeue(Cpu&) override { return nullptr; }
  Packet* peek(Cpu&) override { return nullptr; }
  void reset(Cpu&) override {}
};

}  // namespace

// mirrors __qdisc_run
void qdisc_run_inner(Cpu& cpu, Qdisc& q) {
  // dev_tx_weight = net.core.dev_weight (dev_weight_tx_bias 1).
  int quota = q.dev() ? static_cast<int>(q.dev()->net().core().dev_weight.load(std::memory_order_relaxed))
                      : kDevTxWeight;
  int packets = 0;
  while (qdisc_restart(cpu, q, packets, quota)) {
    quota -= packets;
    if (quota <= 0) {
      // Leave the rest to the tx work of this Cpu so one qdisc cannot hog it.
      if (q.flags() & TCQ_F_NOLOCK)
        q.state().fetch_or(QDISC_STATE_MISSED, std::memory_order_seq_cst);
      else
        q.schedule(cpu);
      break;
    }
  }
}

// mirrors dev_requeue_skb
void dev_requeue(Cpu& cpu, Packet* list, Qdisc& q) {
  const bool nolock = q.flags() & TCQ_F_NOLOCK;
  if (nolock) q.root_lock().lock();
  QdiscStatsBlock& s = q.st(cpu);
  uint32_t n = 0;
  // A requeued chain goes before anything requeued earlier would be wrong: the earlier
  // ones were dequeued first. The kernel appends; so do we.
  while (list) {
    Packet* next = list->next;
    q.gso_list.push_back(list);
    s.requeues.add(1);
    s.qlen.add(1);
    s.backlog.add(list->len);
    ++n;
    list = next;
  }
  q.requeued.fetch_add(n, std::memory_order_release);
  if (nolock) {
    q.root_lock().unlock();
    q.state().fetch_or(QDISC_STATE_MISSED, std::memory_order_seq_cst);
  } else {
    q.schedule(cpu);
  }
}

// mirrors net_tx_action for one qdisc of the output queue
void Qdisc::run(Cpu& cpu) {
  const bool nolock = flags() & TCQ_F_NOLOCK;
  if (!nolock) {
    root_lock().lock();
  } else if (PP_UNLIKELY(deactivated())) {
    state().fetch_and(~QDISC_STATE_SCHED, std::memory_order_seq_cst);
    return;
  }
  // Clear SCHED before running so that a wake or MISSED during the run schedules again.
  state().fetch_and(~QDISC_STATE_SCHED, std::memory_order_seq_cst);
  qdisc_run(cpu, *this);
  if (!nolock) root_lock().unlock();
}

Qdisc& noop_qdisc() {
  static NoopQdisc q;
  return q;
}

void qdisc_reset_all(Cpu& cpu, Qdisc& q) {
  q.reset(cpu);
  q.reset_requeued(cpu);
  q.state().fetch_and(~QDISC_STATE_NON_EMPTY, std::memory_order_seq_cst);
}

// mirrors attach_default_qdiscs: noqueue for IFF_NO_QUEUE devices, mq (with the default
// per queue) for several queues, else net.core.default_qdisc.
void attach_default_qdiscs(NetDevice& dev) {
  const std::string def = dev.net().default_qdisc();
  const char* kind = def.c_str();
  if (dev.flags() & IFF_NO_QUEUE)
    kind = "noqueue";
  else if (dev.real_num_tx_queues() > 1)
    kind = "mq";
  auto created = qdisc_create(dev, kind, QdiscOptions{});
  // pfifo_fast refuses txqueuelen 0: fall back to noqueue, as Linux does.
  if (!created) created = qdisc_create(dev, "noqueue", QdiscOptions{});
  if (!created) return;
  std::unique_ptr<Qdisc> q = std::move(*created);
  dev.graft_root(std::move(q));
  dev.set_root_is_default(true);
}

// mirrors dev_activate
void dev_activate(NetDevice& dev) {
  if (!dev.qdisc()) attach_default_qdiscs(dev);
  Qdisc* root = dev.qdisc();
  if (!root) return;  // tx queues stay on noop_qdisc: packets are dropped
  root->state().fetch_and(~QDISC_STATE_DEACTIVATED, std::memory_order_seq_cst);
  for (unsigned i = 0; i < root->num_children(); ++i)
    if (Qdisc* c = root->child_at(i))
      c->state().fetch_and(~QDISC_STATE_DEACTIVATED, std::memory_order_seq_cst);
  dev.attach_queues();
}

// mirrors dev_deactivate: the tx queues go to noop first, so new packets are dropped,
// then the old qdiscs are emptied.
void dev_deactivate(Cpu& cpu, NetDevice& dev) {
  for (uint16_t i = 0; i < dev.num_tx_queues(); ++i) dev.txq(i).qdisc = &noop_qdisc();
  Qdisc* root = dev.qdisc();
  if (!root) return;
  root->state().fetch_or(QDISC_STATE_DEACTIVATED, std::memory_order_seq_cst);
  for (unsigned i = 0; i < root->num_children(); ++i)
    if (Qdisc* c = root->child_at(i)) {
      c->state().fetch_or(QDISC_STATE_DEACTIVATED, std::memory_order_seq_cst);
      qdisc_reset_all(cpu, *c);
    }
  qdisc_reset_all(cpu, *root);
}

}  // namespace pktpath
