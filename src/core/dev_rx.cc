// The receive path: netif_rx and RPS, the hook part, delivery (net/core/dev.c).
#include "core/dev_rx.h"

#include <cstring>

#include "core/dev_xmit.h"
#include "core/flow_dissector.h"
#include "core/host_sink.h"
#include "core/tap.h"
#include "netfilter/nf_hooks.h"
#include "sched/clsact.h"

namespace pktpath {

void eth_type_trans(Packet& p, NetDevice& dev) {
  p.dev = &dev;
  const uint8_t* d = p.data();
  if (PP_UNLIKELY(d[0] & 1)) {
    static constexpr uint8_t kBcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    p.pkt_type = std::memcmp(d, kBcast, 6) == 0 ? PACKET_BROADCAST : PACKET_MULTICAST;
  } else {
    p.pkt_type = std::memcmp(d, dev.mac().data(), 6) == 0 ? PACKET_HOST : PACKET_OTHERHOST;
  }
  p.protocol = static_cast<uint16_t>(d[12] | d[13] << 8);  // network byte order
}

Cpu& get_rps_cpu(const RpsMap& map, Packet& p) {
  return *map.cpus[reciprocal_scale(skb_get_hash(p), static_cast<uint32_t>(map.cpus.size()))];
}

namespace {

// mirrors enqueue_to_backlog: a full queue drops (CPU_BACKLOG, rx_dropped).
// Inside a section another Cpu's packets wait on this Cpu's RPS stage.
int enqueue_to_backlog(Cpu& cpu, Cpu& target, Packet* p) {
  const bool taken = &target != &cpu && cpu.in_bh() ? cpu.rps_enqueue(target, p) : target.backlog_enqueue(p);
  if (PP_LIKELY(taken)) return NET_RX_SUCCESS;
  p->dev->stats(cpu).rx_dropped.add();
  cpu.free_reason(p, DropReason::CPU_BACKLOG);
  return NET_RX_DROP;
}

}  // namespace

int netif_rx(Cpu& cpu, Packet* p) {
  NetDevice& dev = *p->dev;
  if (PP_UNLIKELY(!dev.is_up())) {
    dev.stats(cpu).rx_dropped.add();
    cpu.free_reason(p, DropReason::DEV_READY);
    return NET_RX_DROP;
  }
  Cpu* target = &cpu;
  if (const RpsMap* m = dev.rps_map(); PP_UNLIKELY(m != nullptr)) target = &get_rps_cpu(*m, *p);
  return enqueue_to_backlog(cpu, *target, p);
}

// mirrors netif_receive_skb_list_internal's RPS step: with a map, each packet goes to
// its flow's Cpu's input queue (this Cpu's too, as the kernel does); without, up here.
int netif_receive_skb_rps(Cpu& cpu, Packet* p) {
  if (const RpsMap* m = p->dev->rps_map(); PP_UNLIKELY(m != nullptr))
    return enqueue_to_backlog(cpu, get_rps_cpu(*m, *p), p);
  return netif_receive_skb(cpu, p);
}

// mirrors __netif_receive_skb_core from the ptype_all taps on; pktpath has no protocol
// stack, so delivery is the Net's host sink (core/host_sink.h): counted and freed, or
// answered when it is an ICMP echo request and the Net answers them.
int netif_receive_skb(Cpu& cpu, Packet* p) {
  NetDevice& dev = *p->dev;
  if (PP_UNLIKELY(!dev.is_up())) {
    dev.stats(cpu).rx_dropped.add();
    cpu.free_reason(p, DropReason::DEV_READY);
    return NET_RX_DROP;
  }
  cpu.stats().processed.add();
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
  host_deliver(cpu, p);
  return NET_RX_SUCCESS;
}

}  // namespace pktpath
