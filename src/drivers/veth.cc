#include "drivers/veth.h"

#include "core/dev_rx.h"
#include "core/link_kind.h"
#include "core/net.h"

namespace pktpath {

namespace {

struct VethPriv final : DriverState {
  NetDevice* peer = nullptr;  // changed only by configuration, with no traffic
};

VethPriv* veth_priv(const NetDevice& dev);

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
    .open = nullptr,
    .stop = nullptr,
    .start_xmit = veth_xmit,
    .select_queue = nullptr,
};

void veth_setup(NetDevice& dev) { dev.set_priv(std::make_unique<VethPriv>()); }

// mirrors veth_dellink: the peer goes too.
void veth_dellink(NetDevice& dev) {
  VethPriv* me = veth_priv(dev);
  NetDevice* peer = me->peer;
  if (!peer) return;
  me->peer = nullptr;
  veth_priv(*peer)->peer = nullptr;
  std::string err;
  peer->net().devices().del(peer->name(), err);
}

const LinkKindRegistrar kVeth{{"veth", &veth_ops, IFF_NO_QUEUE | NETIF_F_LLTX, veth_setup, nullptr, nullptr,
                               veth_dellink}};

VethPriv* veth_priv(const NetDevice& dev) { return static_cast<VethPriv*>(dev.priv()); }

}  // namespace

NetDevice* veth_newlink(DeviceTable& table, const NetDevice::Config& a_cfg, DeviceTable& peer_table,
                        NetDevice::Config b_cfg, std::string& err) {
  if (b_cfg.name.empty()) {
    for (int i = 0;; ++i) {
      std::string n = "veth" + std::to_string(i);
      if (!peer_table.find(n) && !(&peer_table == &table && n == a_cfg.name)) {
        b_cfg.name = n;
        break;
      }
    }
  }
  if (&peer_table == &table && a_cfg.name == b_cfg.name) {
    err = "device \"" + b_cfg.name + "\" already exists";
    return nullptr;
  }
  NetDevice* b = peer_table.add(b_cfg, "veth", err);
  if (!b) return nullptr;
  NetDevice* a = table.add(a_cfg, "veth", err);
  if (!a) {
    std::string ignored;
    peer_table.del(b->name(), ignored);
    return nullptr;
  }
  veth_priv(*a)->peer = b;
  veth_priv(*b)->peer = a;
  return a;
}

NetDevice* veth_peer(const NetDevice& dev) {
  if (dev.ops().start_xmit != veth_xmit) return nullptr;
  return veth_priv(dev)->peer;
}

}  // namespace pktpath
