// The transmit path: dev_queue_xmit and the driver hand-off (net/core/dev.c).
//
// dev_queue_xmit(cpu, p) may be called by any number of threads at once, each with its
// own bound Cpu, on devices that are configured and not being reconfigured.
#pragma once

#include <atomic>

#include "core/netdevice.h"
#include "core/cpu.h"

namespace pktpath {

// __dev_queue_xmit: p->dev must be set. Takes ownership of p in every case.
// Returns NET_XMIT_SUCCESS (0), NET_XMIT_DROP (1) or NET_XMIT_CN (2).
int dev_queue_xmit(Cpu& cpu, Packet* p) __attribute__((nonnull(2)));

// netdev_core_pick_tx: choose the tx queue and record it in p->queue_mapping.
TxQueue& netdev_core_pick_tx(Cpu& cpu, NetDevice& dev, Packet* p);

// dev_hard_start_xmit: hand a chain to the driver one packet at a time with xmit_more
// set on all but the last. Returns the part the driver did not take (rc BUSY), or nullptr.
// Inline: the single-packet case is the hot path of every qdisc.
PP_ALWAYS_INLINE Packet* dev_hard_start_xmit(Cpu& cpu, Packet* first, NetDevice& dev, TxQueue& txq,
                                             NetdevTx& rc) {
  auto start_xmit = dev.ops().start_xmit;
  PacketTrace* const tr = cpu.trace();
  Packet* p = first;
  rc = NetdevTx::OK;
  while (p) {
    Packet* next = p->next;
    p->next = nullptr;
    p->xmit_more = next != nullptr;
    if (PP_UNLIKELY(dev.has_taps())) dev_queue_xmit_nit(cpu, *p, dev);  // xmit_one
    TraceTx tx;
    if (PP_UNLIKELY(tr != nullptr)) tx = trace_tx_capture(*p, dev);
    rc = start_xmit(cpu, p, dev, txq);  // mirrors xmit_one / netdev_start_xmit
    if (PP_UNLIKELY(rc != NetdevTx::OK)) {
      p->next = next;
      return p;
    }
    if (PP_UNLIKELY(tr != nullptr)) tr->sent(cpu, tx);
    p = next;
    // The driver stopped the queue under us: hand the rest back for a requeue.
    if (PP_UNLIKELY(p != nullptr && txq.stopped())) {
      rc = NetdevTx::BUSY;
      return p;
    }
  }
  return nullptr;
}

// For an egress hook (tc skbedit queue_mapping): use p->queue_mapping as the tx
// queue instead of picking one (netdev_xmit_skip_txqueue).
void netdev_xmit_skip_txqueue(bool skip);

// For an egress hook that consumed the packet (returned nullptr): the value
// dev_queue_xmit returns (the kernel's *ret of sch_handle_egress / nf_hook_egress).
// NET_XMIT_SUCCESS unless the hook says otherwise.
void netdev_xmit_hook_rc(int rc);

// dev_queue_xmit compiled without the egress hook point at all: the baseline for the
// cost of the hook point when nothing is attached (document 000; bench/bench_hooks.cc).
int dev_queue_xmit_nohook(Cpu& cpu, Packet* p) __attribute__((nonnull(2)));

}  // namespace pktpath
