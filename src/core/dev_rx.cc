// The receive path's hook part and delivery (net/core/dev.c).
#include "core/dev_rx.h"

#include "core/tap.h"
#include "netfilter/nf_hooks.h"
#include "sched/clsact.h"

namespace pktpath {

// mirrors __netif_receive_skb_core from the ptype_all taps on (no protocol handlers:
// delivery is counting and freeing)
int netif_receive_skb(Cpu& cpu, Packet* p) {
  NetDevice& dev = *p->dev;
  if (PP_UNLIKELY(!dev.is_up())) {
    dev.stats(cpu).rx_dropped.add();
    cpu.free_reason(p, DropReason::DEV_READY);
    return NET_RX_DROP;
  }
  p->skb_iif = dev.ifindex();
  // Taps (deliver_skb to dev->ptype_all): they only look; the packet goes on.
  if (const TapList* taps = dev.taps(); PP_UNLIKELY(taps != nullptr)) dev_taps_deliver(cpu, *p, *taps, false);
  if (const tc::Miniq* mq = dev.tc_ingress().load(std::memory_order_acquire)) {
    int rc = NET_RX_SUCCESS;
    p = tc::sch_handle_ingress(cpu, p, *mq, &rc);
    if (!p) return rc;
  }
  const nf::NfVerdict v = nf::nf_hook_ingress(dev.nf_hooks(), p, cpu);
  if (PP_UNLIKELY(v != nf::NfVerdict::ACCEPT)) return v == nf::NfVerdict::DROP ? NET_RX_DROP : NET_RX_SUCCESS;
  DevCpuStats& s = dev.stats(cpu);
  s.rx_packets.add();
  s.rx_bytes.add(p->len);
  cpu.free(p);
  return NET_RX_SUCCESS;
}

}  // namespace pktpath
