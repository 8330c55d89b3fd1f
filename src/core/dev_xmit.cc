// The transmit path from dev_queue_xmit to the driver, top to bottom as a packet meets
// it: hook point, queue pick, then either the noqueue direct path or the qdisc
// (bypass when empty, else enqueue and run). The qdisc run loop is in sch_generic.cc.
#include "core/dev_xmit.h"

#include "core/net.h"

#include "sched/clsact_inline.h"
#include "sched/sch_generic.h"

namespace pktpath {

namespace {

// Set by an egress hook that chose the tx queue itself (softnet_data.xmit.skip_txqueue).
thread_local bool tls_skip_txqueue = false;
// Set by an egress hook that consumed the packet: what dev_queue_xmit returns.
thread_local int tls_hook_rc = 0;

void free_to_free(Cpu& cpu, PacketList& to_free) {
  while (Packet* p = to_free.pop_front()) cpu.free_reason(p, DropReason::QDISC_DROP);
}

// mirrors __dev_xmit_skb for TCQ_F_NOLOCK qdiscs (the part document 001 adds bypass to).
// Each of the three qdisc paths is its own function, entered by a tail call, so the
// entry of dev_queue_xmit saves no registers for paths a packet does not take.
PP_NOINLINE int dev_xmit_skb_nolock(Cpu& cpu, Packet* p, Qdisc& q, NetDevice& dev,
                                         TxQueue& txq) {
  PacketList to_free;
  int rc;
  if ((q.flags() & TCQ_F_CAN_BYPASS) && q.nolock_is_empty() &&
      PP_LIKELY(dev.net().xmit_config().bypass.load(std::memory_order_relaxed)) && q.run_begin()) {
    // Look again under the seqlock: a requeue may have raced with the first test.
    if (PP_UNLIKELY(!q.nolock_is_empty())) {
      rc = q.enqueue(cpu, p, to_free) & NET_XMIT_MASK;
      qdisc_run_inner(cpu, q);
      q.run_end(cpu);
    } else {
      q.stats_sent_direct(cpu, p);
      if (sch_direct_xmit(cpu, p, q, dev, txq, nullptr) && !q.nolock_is_empty())
        qdisc_run_inner(cpu, q);
      q.run_end(cpu);
      return NET_XMIT_SUCCESS;
    }
  } else {
    rc = q.enqueue(cpu, p, to_free) & NET_XMIT_MASK;
    qdisc_run(cpu, q);
  }
  if (PP_UNLIKELY(!to_free.empty())) free_to_free(cpu, to_free);
  return rc;
}

// mirrors __dev_xmit_skb for locked qdiscs (dev_qdisc_enqueue masks the child's bits)
PP_NOINLINE int dev_xmit_skb_locked(Cpu& cpu, Packet* p, Qdisc& q, NetDevice& dev, TxQueue& txq) {
  PacketList to_free;
  int rc;
  SpinLock& root_lock = q.root_lock();
  root_lock.lock();
  if (PP_UNLIKELY(q.deactivated())) {
    // Device down (noop_qdisc) or the qdisc is being torn down.
    cpu.free_reason(p, dev.is_up() ? DropReason::QDISC_DROP : DropReason::DEV_READY);
    rc = NET_XMIT_DROP;
  } else if ((q.flags() & TCQ_F_CAN_BYPASS) && q.qlen_locked() == 0 &&
             dev.net().xmit_config().bypass.load(std::memory_order_relaxed) && q.run_begin()) {
    // Empty work-conserving qdisc: skip the enqueue/dequeue pair.
    q.stats_sent_direct(cpu, p);
    if (sch_direct_xmit(cpu, p, q, dev, txq, &root_lock)) qdisc_run_inner(cpu, q);
    q.run_end(cpu);
    rc = NET_XMIT_SUCCESS;
  } else {
    rc = q.enqueue(cpu, p, to_free) & NET_XMIT_MASK;
    if (q.run_begin()) {
      qdisc_run_inner(cpu, q);
      q.run_end(cpu);
    }
  }
  root_lock.unlock();
  if (PP_UNLIKELY(!to_free.empty())) free_to_free(cpu, to_free);
  return rc;
}

// The noqueue branch of __dev_queue_xmit: straight to the driver, recursion-limited.
// One packet, so xmit_one's single call rather than dev_hard_start_xmit's list walk.
PP_NOINLINE int dev_xmit_noqueue_slow(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue& txq) {
  DropReason why = DropReason::DEV_READY;
  if (PP_LIKELY(dev.is_up())) {
    if (PP_UNLIKELY(cpu.xmit_recursion >= kXmitRecursionLimit)) {
      why = DropReason::XMIT_RECURSION;
    } else {
      const bool lltx = dev.lltx();
      if (!lltx) txq.xmit_lock.lock();
      if (PP_LIKELY(!txq.stopped())) {
        ++cpu.xmit_recursion;
        p->xmit_more = false;
        if (PP_UNLIKELY(dev.has_taps())) dev_queue_xmit_nit(cpu, *p, dev);  // xmit_one
        PacketTrace* const tr = cpu.trace();
        TraceTx tx;
        if (PP_UNLIKELY(tr != nullptr)) tx = trace_tx_capture(*p, dev);
        const NetdevTx rc = dev.ops().start_xmit(cpu, p, dev, txq);
        --cpu.xmit_recursion;
        if (!lltx) txq.xmit_lock.unlock();
        if (PP_UNLIKELY(tr != nullptr) && rc == NetdevTx::OK) tr->sent(cpu, tx);
        if (PP_LIKELY(rc == NetdevTx::OK)) return NET_XMIT_SUCCESS;
      } else if (!lltx) {
        txq.xmit_lock.unlock();
      }
      // A virtual device with no queue cannot hold the packet: the kernel drops it too.
      why = DropReason::FULL_RING;
    }
  }
  dev.stats(cpu).tx_dropped.add();
  cpu.free_reason(p, why);
  return NET_XMIT_DROP;
}

// The driver refused a packet on the noqueue path: dropped, as above.
PP_NOINLINE int dev_xmit_noqueue_busy(Cpu& cpu, Packet* p, NetDevice& dev) {
  dev.stats(cpu).tx_dropped.add();
  cpu.free_reason(p, DropReason::FULL_RING);
  return NET_XMIT_DROP;
}

// The common case inline (a lockless virtual device such as dummy, up, queue running):
// only the Cpu, the packet and the device live across the driver call. A device with
// taps takes the out-of-line path, which delivers to them (dev_queue_xmit_nit).
PP_ALWAYS_INLINE int dev_xmit_noqueue(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue& txq) {
  if (PP_LIKELY(dev.lltx() && dev.is_up() && cpu.xmit_recursion < kXmitRecursionLimit && !txq.stopped() &&
                !dev.has_taps() && cpu.trace() == nullptr)) {
    ++cpu.xmit_recursion;
    p->xmit_more = false;
    const NetdevTx rc = dev.ops().start_xmit(cpu, p, dev, txq);
    --cpu.xmit_recursion;
    if (PP_LIKELY(rc == NetdevTx::OK)) return NET_XMIT_SUCCESS;
    return dev_xmit_noqueue_busy(cpu, p, dev);
  }
  return dev_xmit_noqueue_slow(cpu, p, dev, txq);
}

}  // namespace

void netdev_xmit_skip_txqueue(bool skip) { tls_skip_txqueue = skip; }
void netdev_xmit_hook_rc(int rc) { tls_hook_rc = rc; }

// mirrors netdev_core_pick_tx: one queue -> 0; the driver's choice; else the flow hash
// (reciprocal scale), or the Cpu for unhashed packets (as an XPS map of Cpu i -> queue i).
namespace {
PP_ALWAYS_INLINE TxQueue& pick_tx_inline(Cpu& cpu, NetDevice& dev, Packet* p) {
  const uint16_t n = dev.real_num_tx_queues();
  uint16_t idx = 0;
  if (PP_UNLIKELY(n != 1)) {
    if (dev.ops().select_queue) {
      idx = dev.ops().select_queue(dev, p, cpu);
      if (idx >= n) idx = static_cast<uint16_t>(idx % n);
    } else if (p->hash) {
      idx = static_cast<uint16_t>((static_cast<uint64_t>(p->hash) * n) >> 32);
    } else {
      idx = static_cast<uint16_t>(cpu.id() % n);
    }
  }
  p->queue_mapping = idx;
  return dev.txq(idx);
}
}  // namespace

TxQueue& netdev_core_pick_tx(Cpu& cpu, NetDevice& dev, Packet* p) { return pick_tx_inline(cpu, dev, p); }

namespace {
int dev_queue_xmit_nf(Cpu& cpu, Packet* p);
}  // namespace

// mirrors __dev_queue_xmit. kHookPoint = false is the same path without the egress hook
// point, only for measuring what the hook point costs (dev_queue_xmit_nohook). kNfDone:
// netfilter egress already ran (dev_queue_xmit_nf).
template <bool kHookPoint, bool kNfDone = false>
PP_ALWAYS_INLINE int dev_queue_xmit_impl(Cpu& cpu, Packet* p) {
  NetDevice& dev = *p->dev;
  TxQueue* txq;
  // Egress hook point: one predictable branch while nothing is attached.
  EgressHookFn hook = kHookPoint ? dev.egress_hook() : nullptr;
  if (PP_UNLIKELY(hook != nullptr)) {
    tls_skip_txqueue = false;
    // nf_hook_egress then sch_handle_egress, called directly as __dev_queue_xmit does.
    // With the netfilter egress point but no chain, the netfilter part is one predictable
    // branch (the kernel's nf_hook_egress_active() static key); a device without it
    // (tc alone) skips even that.
    bool inline_hooks = false;
    if (hook == &tc::dev_egress_hooks) {
      if (!kNfDone && PP_UNLIKELY(dev.nf_hooks().egress.load(std::memory_order_relaxed) != nullptr))
        return dev_queue_xmit_nf(cpu, p);
      inline_hooks = true;
    } else if (PP_LIKELY(hook == &tc::dev_egress_tc_only)) {
      inline_hooks = true;
    }
    if (PP_LIKELY(inline_hooks)) {
      int rc = NET_XMIT_SUCCESS;
      p = tc::tc_egress_run(cpu, p, dev, &rc);
      if (!p) return rc;
    } else {
      tls_hook_rc = NET_XMIT_SUCCESS;
      p = hook(cpu, p, dev, dev.egress_ctx());
      if (!p) return tls_hook_rc;
    }
    if (PP_UNLIKELY(tls_skip_txqueue)) {
      if (p->queue_mapping >= dev.real_num_tx_queues()) p->queue_mapping = 0;
      txq = &dev.txq(p->queue_mapping);
    } else {
      txq = &pick_tx_inline(cpu, dev, p);
    }
  } else {
    txq = &pick_tx_inline(cpu, dev, p);
  }
  if (PP_UNLIKELY(cpu.trace() != nullptr)) trace_enqueue_stamp(cpu, *p);
  Qdisc& q = *txq->qdisc;
  const uint32_t qflags = q.flags();
  if (PP_LIKELY(qflags & TCQ_F_NOLOCK)) return dev_xmit_skb_nolock(cpu, p, q, dev, *txq);
  if (qflags & TCQ_F_NOENQUEUE) return dev_xmit_noqueue(cpu, p, dev, *txq);
  return dev_xmit_skb_locked(cpu, p, q, dev, *txq);
}

namespace {
// mirrors nf_hook_egress for a device with an egress chain, then the rest of
// __dev_queue_xmit. Packets tc redirected here skip netfilter (skb->nf_skip_egress).
PP_NOINLINE int dev_queue_xmit_nf(Cpu& cpu, Packet* p) {
  if (!tc::tls_nf_skip_egress) {
    const nf::NfVerdict v = nf::nf_hook_egress(p->dev->nf_hooks(), p, cpu);
    // DROP: already freed and counted (NETFILTER_DROP); STOLEN: the hook has it.
    if (PP_UNLIKELY(v != nf::NfVerdict::ACCEPT)) return v == nf::NfVerdict::DROP ? NET_XMIT_DROP : NET_XMIT_SUCCESS;
  }
  return dev_queue_xmit_impl<true, true>(cpu, p);
}
}  // namespace

int dev_queue_xmit(Cpu& cpu, Packet* p) { return dev_queue_xmit_impl<true>(cpu, p); }
int dev_queue_xmit_nohook(Cpu& cpu, Packet* p) { return dev_queue_xmit_impl<false>(cpu, p); }

}  // namespace pktpath
