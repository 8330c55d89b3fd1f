// The tc hook's per-packet code, inline for its two callers: the hook functions in
// clsact.cc and dev_queue_xmit, which runs tc egress directly for a device whose hook is
// tc alone (as __dev_queue_xmit calls sch_handle_egress directly). Not an API: use
// sched/clsact.h.
#pragma once

#include <arpa/inet.h>

#include "core/dev_rx.h"
#include "core/dev_xmit.h"
#include "sched/clsact.h"
#include "sched/qdisc.h"

namespace pktpath::tc {

// skb->nf_skip_egress for the packets this thread is classifying (see clsact.h).
// Defined here, constant-initialised, so other files reach it without a TLS wrapper call.
inline thread_local bool tls_nf_skip_egress = false;

// mirrors __tcf_classify (inlined into the hooks: it runs for every packet). cls_bpf is
// called directly, any other kind through its classify (INDIRECT_CALL_1); a list of
// cls_bpf filters only (kAllBpf) does not ask each filter its kind.
template <bool kAllBpf>
PP_ALWAYS_INLINE int classify_walk(const TcContext& ctx, Packet* p, const Miniq& mq, TcResult& res) {
  const TcFilter* const* first = mq.filters.data();
  const size_t n = mq.filters.size();
  int limit = 0;
  for (size_t i = 0; i < n; ++i) {
    const TcFilter* f = first[i];
    const uint16_t proto = f->protocol();
    if (proto != kEthPAll && htons(proto) != tc_skb_protocol(p)) continue;
    const int err = kAllBpf || f->is_bpf() ? static_cast<const BpfFilter*>(f)->classify(ctx, p, res)
                                           : f->classify(ctx, p, res);
    if (PP_UNLIKELY(err == TC_ACT_RECLASSIFY)) {
      if (limit++ >= 16) return TC_ACT_SHOT;  // reclassify loop
      i = static_cast<size_t>(-1);
      continue;
    }
    if (err >= 0) return err;
  }
  return TC_ACT_UNSPEC;
}

PP_ALWAYS_INLINE int classify_inline(const TcContext& ctx, Packet* p, const Miniq& mq, TcResult& res) {
  return PP_LIKELY(mq.all_bpf) ? classify_walk<true>(ctx, p, mq, res) : classify_walk<false>(ctx, p, mq, res);
}

// mirrors sch_handle_egress (kIngress false) and sch_handle_ingress (true): they differ
// only in the return codes, the drop reason, and what a redirect may do (classic BPF
// sets no redirect target, so the kernel drops such a packet on both sides).
template <bool kIngress>
PP_ALWAYS_INLINE Packet* handle_inline(Cpu& cpu, Packet* p, const Miniq& mq, int* rc) {
  constexpr int kOk = kIngress ? NET_RX_SUCCESS : NET_XMIT_SUCCESS;
  constexpr int kDrop = kIngress ? NET_RX_DROP : NET_XMIT_DROP;
  constexpr DropReason kWhy = kIngress ? DropReason::TC_INGRESS : DropReason::TC_EGRESS;
  mq.qstats->count(TcContext{cpu, kIngress}, p);
  TcResult res;
  int verdict;
  if (mq.only_da) {
    // A direct-action verdict is never RECLASSIFY (cls_bpf_da_opcode): no loop either.
    verdict = mq.only_da->classify(TcContext{cpu, kIngress}, p, res);
  } else {
    const bool saved_skip = tls_nf_skip_egress;
    tls_nf_skip_egress = true;
    verdict = classify_inline(TcContext{cpu, kIngress}, p, mq, res);
    tls_nf_skip_egress = saved_skip;
  }
  if (PP_LIKELY(verdict == TC_ACT_OK)) {
    p->tc_index = static_cast<uint16_t>(tc_h_min(res.classid));
    return p;
  }
  switch (verdict) {
    case TC_ACT_OK:
    case TC_ACT_RECLASSIFY:
      p->tc_index = static_cast<uint16_t>(tc_h_min(res.classid));
      return p;
    case TC_ACT_SHOT:
    case TC_ACT_REDIRECT:
      mq.qstats->at(cpu).drops.add();
      *rc = kDrop;
      cpu.free_reason(p, kWhy);
      return nullptr;
    case TC_ACT_STOLEN:
    case TC_ACT_QUEUED:
    case TC_ACT_TRAP:
      *rc = kOk;
      cpu.free(p);  // consumed, not a drop
      return nullptr;
    case TC_ACT_CONSUMED:
      *rc = kOk;
      return nullptr;
    default:
      return p;
  }
}

// tc egress of `dev` (nothing when no filter list is published): the packet, or nullptr
// with *rc set when tc consumed it.
PP_ALWAYS_INLINE Packet* tc_egress_run(Cpu& cpu, Packet* p, NetDevice& dev, int* rc) {
  const Miniq* mq = dev.tc_egress().load(std::memory_order_acquire);
  if (mq) p = handle_inline<false>(cpu, p, *mq, rc);
  return p;
}

}  // namespace pktpath::tc
