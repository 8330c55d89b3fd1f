// lo: every Net has one from its creation (loopback_net_init), down until set up, as in
// Linux. What it transmits it receives on the same Cpu (drivers/net/loopback.c).
#include <memory>

#include "core/dev_rx.h"
#include "core/link_kind.h"
#include "core/net.h"

namespace pktpath {

namespace {

// mirrors loopback_xmit: eth_type_trans, then __netif_rx; lo's counters are its
// lstats (what it carried), counted when the packet was taken.
NetdevTx loopback_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue&) {
  if (PP_UNLIKELY(p->headlen() < 14)) {
    dev.stats(cpu).tx_dropped.add();
    cpu.free_reason(p, DropReason::PKT_TOO_SMALL);
    return NetdevTx::OK;
  }
  p->tstamp_ns = 0;
  eth_type_trans(*p, dev);
  const uint32_t len = p->len;
  if (PP_LIKELY(netif_rx(cpu, p) == NET_RX_SUCCESS)) {
    DevCpuStats& s = dev.stats(cpu);
    s.tx_packets.add();
    s.tx_bytes.add(len);
  }
  return NetdevTx::OK;
}

// mirrors loopback_get_stats64: what lo carried is both its tx and its rx.
DevStatsSum loopback_get_stats64(const NetDevice& dev) {
  DevStatsSum s = dev.stats_sum();
  s.rx_packets = s.tx_packets;
  s.rx_bytes = s.tx_bytes;
  return s;
}

const NetDeviceOps loopback_ops = {
    .open = nullptr,
    .stop = nullptr,
    .start_xmit = loopback_xmit,
    .select_queue = nullptr,
    .get_stats64 = loopback_get_stats64,
};

// loopback_setup: LLTX, no queue, the all-zero address, MTU 65536.
const LinkKindRegistrar kLoopback{
    {"loopback", &loopback_ops, IFF_LOOPBACK | IFF_NO_QUEUE | NETIF_F_LLTX, nullptr, nullptr, nullptr}};

struct LoopbackNet final : PernetState {};

// mirrors loopback_net_init: lo is the first device of every Net (ifindex 1).
const PernetRegistrar loopback_pernet{{"loopback", [](Net& net) -> std::unique_ptr<PernetState> {
                                         NetDevice::Config cfg;
                                         cfg.name = "lo";
                                         cfg.mtu = 65536;
                                         cfg.mac_set = true;  // 00:00:00:00:00:00
                                         if (!net.devices().add(cfg, "loopback")) return nullptr;
                                         return std::make_unique<LoopbackNet>();
                                       }}};

}  // namespace
}  // namespace pktpath
