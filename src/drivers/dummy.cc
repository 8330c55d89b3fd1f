// dummy: a device that counts and frees everything it is given (drivers/net/dummy.c).
// Lockless (NETIF_F_LLTX) and IFF_NO_QUEUE, so its default qdisc is noqueue.
#include "core/link_kind.h"

namespace pktpath {

namespace {

// mirrors dummy_xmit: count in the per-Cpu stats, then consume.
NetdevTx dummy_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue&) {
  DevCpuStats& s = dev.stats(cpu);
  s.tx_packets.add();
  s.tx_bytes.add(p->len);
  cpu.free(p);
  return NetdevTx::OK;
}

}  // namespace

extern const NetDeviceOps dummy_netdev_ops;
const NetDeviceOps dummy_netdev_ops = {
    .open = nullptr,
    .stop = nullptr,
    .start_xmit = dummy_xmit,
    .select_queue = nullptr,
};

}  // namespace pktpath

namespace pktpath {
namespace {
const LinkKindRegistrar kDummy{{"dummy", &dummy_netdev_ops, IFF_NO_QUEUE | NETIF_F_LLTX, nullptr, nullptr, nullptr}};
}  // namespace
}  // namespace pktpath
