#include "drivers/testdrv.h"

#include "core/link_kind.h"

namespace pktpath {

namespace {

NetdevTx testdrv_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue& txq) {
  // Called under txq.xmit_lock; counters are atomics because queues differ by thread.
  TestDrvState& s = testdrv_state(dev);
  const uint64_t n = s.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (s.busy_every && n % s.busy_every == 0) {
    s.busy_returned.fetch_add(1, std::memory_order_relaxed);
    return NetdevTx::BUSY;
  }
  if (p->xmit_more) s.xmit_more_seen.fetch_add(1, std::memory_order_relaxed);
  if (s.record && s.marks.size() < s.marks.capacity()) s.marks.push_back(p->mark);
  DevCpuStats& ds = dev.stats(cpu);
  ds.tx_packets.add();
  ds.tx_bytes.add(p->len);
  const uint64_t done = s.transmitted.fetch_add(1, std::memory_order_relaxed) + 1;
  cpu.free(p);
  if (s.stop_after && done % s.stop_after == 0) NetDevice::tx_stop_queue(txq);
  return NetdevTx::OK;
}

void testdrv_setup(NetDevice& dev) { dev.set_priv(std::make_unique<TestDrvState>()); }

}  // namespace

TestDrvState& testdrv_state(NetDevice& dev) { return *static_cast<TestDrvState*>(dev.priv()); }

extern const NetDeviceOps testdrv_netdev_ops;
const NetDeviceOps testdrv_netdev_ops = {
    .open = nullptr,
    .stop = nullptr,
    .start_xmit = testdrv_xmit,
    .select_queue = nullptr,
};

void testdrv_setup_device(NetDevice& dev) { testdrv_setup(dev); }

}  // namespace pktpath
