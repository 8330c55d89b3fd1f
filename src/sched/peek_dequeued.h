// The base of qdiscs whose dequeue decides what leaves (CoDel's drops, DRR): codel,
// fq_codel, sfq. It keeps the kernel's own counters (sch->q.qlen, sch->qstats.backlog,
// which the algorithms read) beside the statistics block, and one dequeued packet held
// back for peek (q->gso_skb as qdisc_peek_dequeued / qdisc_dequeue_peeked use it): peek
// dequeues and keeps the packet, still counted as queued, so the next dequeue returns
// exactly what peek showed. Root lock held.
#pragma once

#include <cstdint>

#include "sched/qdisc.h"

namespace pktpath {

class PeekDequeuedQdisc : public Qdisc {
 public:
  using Qdisc::Qdisc;

  // mirrors qdisc_dequeue_peeked
  Packet* dequeue(Cpu& cpu) final {
    if (Packet* p = peeked_) {
      peeked_ = nullptr;
      leave(cpu, p);
      return p;
    }
    return dequeue_inner(cpu);
  }
  // mirrors qdisc_peek_dequeued
  Packet* peek(Cpu& cpu) final {
    if (!peeked_) {
      peeked_ = dequeue_inner(cpu);
      if (peeked_) join(cpu, peeked_);
    }
    return peeked_;
  }

 protected:
  // The kind's dequeue (counts the packet sent).
  virtual Packet* dequeue_inner(Cpu& cpu) = 0;
  // A packet joins / leaves the queue: both counters and the statistics block.
  void join(const Cpu& cpu, const Packet* p) {
    ++qlen_;
    backlog_ += p->len;
    stats_enqueued(cpu, p);
  }
  void leave(const Cpu& cpu, const Packet* p) {
    --qlen_;
    backlog_ -= p->len;
    QdiscStatsBlock& s = st(cpu);
    s.qlen.add(~uint64_t{0});
    s.backlog.add(-uint64_t{p->len});
  }
  // Drop the held packet and zero the counters (the kind's reset frees the rest).
  void reset_counters(Cpu& cpu) {
    if (peeked_) cpu.free_reason(peeked_, DropReason::QDISC_DROP);
    peeked_ = nullptr;
    qlen_ = 0;
    backlog_ = 0;
    zero_backlog();
  }

  uint32_t qlen_ = 0;     // sch->q.qlen
  uint32_t backlog_ = 0;  // sch->qstats.backlog

 private:
  Packet* peeked_ = nullptr;
};

}  // namespace pktpath
