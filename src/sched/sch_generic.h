// The generic qdisc machinery between a qdisc and the driver (net/sched/sch_generic.c):
// running a qdisc, direct transmit, requeue, and device activation/deactivation.
#pragma once

#include <cstdint>

#include "core/dev_xmit.h"
#include "core/netdevice.h"
#include "sched/qdisc.h"

namespace pktpath {

inline constexpr int kDevTxWeight = 64;  // dev_tx_weight: packets per qdisc run

// dev_requeue_skb: put a chain the driver refused back at the head of the qdisc.
void dev_requeue(Cpu& cpu, Packet* list, Qdisc& q);
// qdisc_maybe_clear_missed: see sch_generic.cc.
void qdisc_maybe_clear_missed(Qdisc& q, const TxQueue& txq);

// mirrors sch_direct_xmit: hand `list` (one packet or a bulk-dequeued chain) to the
// driver. root_lock, if given, is held on entry and on return but dropped around the
// driver call. Returns true if the caller may keep dequeuing, false after a requeue
// (BUSY or stopped queue).
PP_ALWAYS_INLINE bool sch_direct_xmit(Cpu& cpu, Packet* list, Qdisc& q, NetDevice& dev,
                                      TxQueue& txq, SpinLock* root_lock) {
  if (root_lock) root_lock->unlock();
  NetdevTx rc = NetdevTx::BUSY;
  const bool lltx = dev.lltx();
  if (!lltx) txq.xmit_lock.lock();
  if (PP_LIKELY(!txq.stopped()))
    list = dev_hard_start_xmit(cpu, list, dev, txq, rc);
  else
    qdisc_maybe_clear_missed(q, txq);
  if (!lltx) txq.xmit_lock.unlock();
  if (root_lock) root_lock->lock();
  if (PP_UNLIKELY(rc != NetdevTx::OK)) {
    dev_requeue(cpu, list, q);
    return false;
  }
  return true;
}

// __qdisc_run: dequeue and transmit until empty, blocked, or the quota is spent (then
// reschedule). Caller has won run_begin (and holds the root lock if locked).
void qdisc_run_inner(Cpu& cpu, Qdisc& q);

// qdisc_run: run_begin, __qdisc_run unless deactivated, run_end.
PP_ALWAYS_INLINE void qdisc_run(Cpu& cpu, Qdisc& q) {
  if (q.run_begin()) {
    if (PP_LIKELY(!q.deactivated())) qdisc_run_inner(cpu, q);
    q.run_end(cpu);
  }
}

// The qdisc every tx queue points at while the device is down or has no qdisc yet
// (noop_qdisc): permanently deactivated, so dev_queue_xmit drops.
Qdisc& noop_qdisc();

// attach_default_qdiscs: noqueue for IFF_NO_QUEUE devices, pfifo_fast for one tx queue,
// mq of pfifo_fast for several. Installs it as the device's root.
void attach_default_qdiscs(NetDevice& dev);

// dev_activate / dev_deactivate: point the tx queues at the root (or its per-queue
// children) / at noop_qdisc, dropping whatever was queued (QDISC_DROP, counted on cpu).
void dev_activate(NetDevice& dev);
void dev_deactivate(Cpu& cpu, NetDevice& dev);

// Reset a qdisc tree (qdisc_reset): children first, requeued packets, MISSED/DRAINING.
void qdisc_reset_all(Cpu& cpu, Qdisc& q);

}  // namespace pktpath
