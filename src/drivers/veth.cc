#include "drivers/veth.h"

#include "core/dev_rx.h"
#include "core/link_kind.h"
#include "core/napi.h"
#include "core/net.h"
#include "core/ptr_ring.h"
#include "core/rcu.h"

namespace pktpath {

namespace {

constexpr uint32_t kVethRingSize = 256;  // VETH_RING_SIZE

// The receive queue of one end (struct veth_rq) for its NAPI mode: the peer's xmit
// produces into the ring and schedules the NAPI instance on the sending Cpu; the poll
// consumes. Its counters are written by the poll (one at a time, the SCHED bit orders
// them) and by the drain after NAPI is off.
struct VethRq {
  Napi napi;
  PtrRing<Packet, kVethRingSize> ring;  // xdp_ring
  std::atomic<bool> napi_on{false};     // rq->napi set: the peer's xmit uses the ring
  std::atomic<bool> rx_notify_masked{false};
  std::atomic<bool> disabling{false};   // napi_disable pending: a scheduled poll completes
  Counter xdp_packets, xdp_bytes;       // what the polls took off the ring
  Counter rx_drops;                     // what was still on the ring when NAPI went off
};

struct VethPriv final : DriverState {
  NetDevice* peer = nullptr;  // changed only by configuration, with no traffic
  bool gro = false;           // NETIF_F_GRO wanted (ethtool -K DEV gro on)
  VethRq rq;
};

VethPriv* veth_priv(const NetDevice& dev);

// mirrors __veth_xdp_flush: schedules the receiving end's NAPI on the sending Cpu
// (__napi_schedule's this_cpu) unless a poll is already pending.
void veth_xdp_flush(Cpu& cpu, VethRq& rq) {
  // The mask is read by a read-modify-write, ordered after the ring write (smp_mb's role
  // here): when it finds the mask set, the poll's exchange that clears it reads this
  // write and so sees the packet on the ring. (A fence would do on x86 but is beyond
  // what ThreadSanitizer models.)
  bool masked = true;
  if (rq.rx_notify_masked.compare_exchange_strong(masked, true, std::memory_order_acq_rel,
                                                  std::memory_order_acquire))
    return;  // a poll is pending
  if (napi_schedule_prep(rq.napi)) {
    rq.rx_notify_masked.store(true, std::memory_order_relaxed);
    rq.napi.cpu = &cpu;
    napi_schedule_now(rq.napi);
  }
}

// mirrors veth_poll / veth_xdp_rcv (no XDP program, no GRO engine: each packet goes on
// as napi_gro_receive would hand it to netif_receive_skb_list_internal).
int veth_poll(Napi& n, Cpu& cpu, int budget) {
  VethRq& rq = *static_cast<VethRq*>(n.ctx);
  if (PP_UNLIKELY(rq.disabling.load(std::memory_order_acquire))) {
    napi_complete_done(n, 0);  // napi_disable: what is left is drained by veth_napi_del
    return 0;
  }
  int done = 0;
  uint64_t bytes = 0;
  while (done < budget) {
    Packet* p = rq.ring.consume();
    if (!p) break;
    bytes += p->len;
    netif_receive_skb_rps(cpu, p);
    ++done;
  }
  rq.xdp_packets.add(static_cast<uint64_t>(done));
  rq.xdp_bytes.add(bytes);
  if (done < budget && napi_complete_done(n, done)) {
    rq.rx_notify_masked.exchange(false, std::memory_order_acq_rel);  // before the ring read: see veth_xdp_flush
    if (PP_UNLIKELY(!rq.ring.empty()) && napi_schedule_prep(n)) {
      rq.rx_notify_masked.store(true, std::memory_order_relaxed);
      n.cpu = &cpu;
      napi_schedule_now(n);
    }
  }
  return done;
}

// mirrors veth_napi_enable: the peer's xmit uses the ring from now on.
void veth_napi_enable(VethRq& rq) {
  rq.disabling.store(false, std::memory_order_relaxed);
  rq.rx_notify_masked.store(false, std::memory_order_relaxed);
  rq.napi_on.store(true, std::memory_order_seq_cst);
}

// mirrors veth_napi_del: no new packets on the ring, the pending poll runs out (napi_disable,
// on its Cpu: this thread's, or that Cpu's own thread), synchronize_net, then what is left
// on the ring is freed, counted as the end's rx_dropped (DEV_READY).
void veth_napi_del(NetDevice& dev, VethRq& rq) {
  if (!rq.napi_on.load(std::memory_order_relaxed)) return;
  rq.napi_on.store(false, std::memory_order_seq_cst);
  rq.disabling.store(true, std::memory_order_seq_cst);
  rcu_synchronize();
  napi_wait_idle(rq.napi);
  rq.rx_notify_masked.store(false, std::memory_order_relaxed);
  Cpu& cpu = Cpu::current() ? *Cpu::current() : dev.net().control_cpu();
  while (Packet* p = rq.ring.consume()) {
    rq.rx_drops.add();
    cpu.free_reason(p, DropReason::DEV_READY);
  }
}

// mirrors veth_open / veth_close, their NAPI part: GRO wanted means NAPI while up.
int veth_open(NetDevice& dev) {
  VethPriv* me = veth_priv(dev);
  if (me->gro) veth_napi_enable(me->rq);
  return 0;
}

void veth_close(NetDevice& dev) {
  VethPriv* me = veth_priv(dev);
  veth_napi_del(dev, me->rq);
}

// mirrors veth_xmit -> veth_forward_skb -> __dev_forward_skb -> __netif_rx. A peer that is
// down or an oversized frame is dropped and counted on both ends (the sender's
// tx_dropped is veth's priv->dropped, the peer's rx_dropped is __dev_forward_skb's).
NetdevTx veth_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue&) {
  NetDevice* rcv = veth_priv(dev)->peer;
  if (PP_UNLIKELY(rcv == nullptr || p->headlen() < 14)) {
    dev.stats(cpu).tx_dropped.add();
    cpu.free_reason(p, rcv ? DropReason::PKT_TOO_SMALL : DropReason::DEV_READY);
    return NetdevTx::OK;
  }
  // is_skb_forwardable: the peer up, the frame within its MTU plus an Ethernet and a
  // VLAN header.
  DropReason why = DropReason::NOT_SPECIFIED;
  if (PP_UNLIKELY(!rcv->is_up())) why = DropReason::DEV_READY;
  else if (PP_UNLIKELY(p->len > rcv->mtu() + 14 + 4)) why = DropReason::PKT_TOO_BIG;
  if (PP_UNLIKELY(why != DropReason::NOT_SPECIFIED)) {
    rcv->stats(cpu).rx_dropped.add();
    dev.stats(cpu).tx_dropped.add();
    cpu.free_reason(p, why);
    return NetdevTx::OK;
  }
  // skb_scrub_packet: crossing Nets forgets the mark and the timestamp; priority always.
  if (&rcv->net() != &dev.net()) {
    p->mark = 0;
    p->tstamp_ns = 0;
  }
  p->priority = 0;
  p->skb_iif = 0;
  eth_type_trans(*p, *rcv);
  const uint32_t len = p->len;
  // veth_xmit's use_napi branch (veth_xdp_rx): onto the peer's ring, a full ring drops
  // (FULL_RING, the sender's tx_dropped); the counters are the ring's (xdp_packets).
  if (VethRq& rq = veth_priv(*rcv)->rq; rq.napi_on.load(std::memory_order_acquire)) {
    if (PP_UNLIKELY(!rq.ring.produce(p))) {
      dev.stats(cpu).tx_dropped.add();
      cpu.free_reason(p, DropReason::FULL_RING);
    }
    veth_xdp_flush(cpu, rq);
    return NetdevTx::OK;
  }
  if (PP_LIKELY(netif_rx(cpu, p) == NET_RX_SUCCESS)) {
    DevCpuStats& s = dev.stats(cpu);
    s.tx_packets.add();
    s.tx_bytes.add(len);
  } else {
    dev.stats(cpu).tx_dropped.add();
  }
  return NetdevTx::OK;
}

const NetDeviceOps veth_ops = {
    .open = veth_open,
    .stop = veth_close,
    .start_xmit = veth_xmit,
    .select_queue = nullptr,
    .get_stats64 = veth_get_stats64,
};

void veth_setup(NetDevice& dev) {
  auto s = std::make_unique<VethPriv>();
  s->rq.napi.poll = veth_poll;
  s->rq.napi.ctx = &s->rq;
  dev.set_priv(std::move(s));
}

// mirrors veth_dellink: the peer goes too.
void veth_dellink(NetDevice& dev) {
  VethPriv* me = veth_priv(dev);
  NetDevice* peer = me->peer;
  if (!peer) return;
  me->peer = nullptr;
  veth_priv(*peer)->peer = nullptr;
  (void)peer->net().devices().del(peer->name());  // the peer is there: cannot fail
}

const LinkKindRegistrar kVeth{{"veth", &veth_ops, IFF_NO_QUEUE | NETIF_F_LLTX, veth_setup, nullptr, nullptr,
                               veth_dellink}};

VethPriv* veth_priv(const NetDevice& dev) { return static_cast<VethPriv*>(dev.priv()); }

}  // namespace

Result<NetDevice*> veth_newlink(DeviceTable& table, const NetDevice::Config& a_cfg, DeviceTable& peer_table,
                                NetDevice::Config b_cfg) {
  if (b_cfg.name.empty()) {
    for (int i = 0;; ++i) {
      std::string n = "veth" + std::to_string(i);
      if (!peer_table.find(n) && !(&peer_table == &table && n == a_cfg.name)) {
        b_cfg.name = n;
        break;
      }
    }
  }
  if (&peer_table == &table && a_cfg.name == b_cfg.name)
    return unexpected("device \"" + b_cfg.name + "\" already exists");
  auto added_b = peer_table.add(b_cfg, "veth");
  if (!added_b) return added_b;
  NetDevice* b = *added_b;
  auto added_a = table.add(a_cfg, "veth");
  if (!added_a) {
    (void)peer_table.del(b->name());  // just added: cannot fail
    return added_a;
  }
  NetDevice* a = *added_a;
  veth_priv(*a)->peer = b;
  veth_priv(*b)->peer = a;
  return a;
}

bool veth_set_gro(NetDevice& dev, bool on, std::string& err) {
  if (dev.ops().start_xmit != veth_xmit) {
    err = "Operation not supported";
    return false;
  }
  // mirrors veth_set_features: NAPI follows GRO while the device is up.
  VethPriv* me = veth_priv(dev);
  if (me->gro == on) return true;
  me->gro = on;
  if (!dev.is_up()) return true;
  if (on) veth_napi_enable(me->rq);
  else veth_napi_del(dev, me->rq);
  return true;
}

bool veth_gro(const NetDevice& dev) { return dev.ops().start_xmit == veth_xmit && veth_priv(dev)->gro; }

// mirrors veth_get_stats64: with NAPI the ring's counters stand in for the sender's
// lstats (a's tx and b's rx are b's xdp_packets); without, the peer's tx is this end's rx.
DevStatsSum veth_get_stats64(const NetDevice& dev) {
  DevStatsSum s = dev.stats_sum();
  const VethRq& rq = veth_priv(dev)->rq;
  const uint64_t own_rx_dropped = s.rx_dropped;
  s.rx_packets = rq.xdp_packets.get();
  s.rx_bytes = rq.xdp_bytes.get();
  s.rx_dropped = own_rx_dropped + rq.rx_drops.get();
  if (const NetDevice* peer = veth_priv(dev)->peer) {
    const DevStatsSum ps = peer->stats_sum();
    const VethRq& prq = veth_priv(*peer)->rq;
    s.rx_packets += ps.tx_packets;
    s.rx_bytes += ps.tx_bytes;
    s.tx_packets += prq.xdp_packets.get();
    s.tx_bytes += prq.xdp_bytes.get();
  }
  return s;
}

NetDevice* veth_peer(const NetDevice& dev) {
  if (dev.ops().start_xmit != veth_xmit) return nullptr;
  return veth_priv(dev)->peer;
}

}  // namespace pktpath
