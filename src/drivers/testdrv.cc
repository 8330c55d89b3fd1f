#include "drivers/testdrv.h"

#include "core/clock.h"
#include "core/link_kind.h"

namespace pktpath {

namespace {

NetdevTx testdrv_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue& txq) {
  // Called under txq.xmit_lock; counters are atomics because queues differ by thread.
  TestDrvState& s = testdrv_state(dev);
  if (s.xmit_delay_us) {
    const uint64_t until = MonotonicClock::instance().now_ns() + uint64_t{s.xmit_delay_us} * 1000;
    while (MonotonicClock::instance().now_ns() < until) {
    }
  }
  const uint64_t n = s.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (s.busy_every && n % s.busy_every == 0) {
    s.busy_returned.fetch_add(1, std::memory_order_relaxed);
    return NetdevTx::BUSY;
  }
  const uint64_t k = s.taken.fetch_add(1, std::memory_order_relaxed) + 1;
  DevCpuStats& ds = dev.stats(cpu);
  if (s.drop_every && k % s.drop_every == 0) {
    // As a driver that cannot map a packet: count tx_dropped, kfree_skb (no reason).
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    ds.tx_dropped.add();
    cpu.free_reason(p, DropReason::NOT_SPECIFIED);
    return NetdevTx::OK;
  }
  if (p->xmit_more) s.xmit_more_seen.fetch_add(1, std::memory_order_relaxed);
  if (s.record && s.marks.size() < s.marks.capacity()) s.marks.push_back(p->mark);
  if (PP_UNLIKELY(s.record_frames)) s.frames.emplace_back(p->data(), p->data() + p->headlen());
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

// The link options scripts set (`ip link add|set ... type testdrv NAME N`).
extern const LinkKind::Option testdrv_options[];
const LinkKind::Option testdrv_options[] = {
    {"busy_every", UINT32_MAX}, {"drop_every", UINT32_MAX}, {"xmit_delay_us", 1000}, {nullptr, 0},
};

void testdrv_set_option(NetDevice& dev, std::string_view name, uint64_t value) {
  TestDrvState& s = testdrv_state(dev);
  const uint32_t v = static_cast<uint32_t>(value);
  if (name == "busy_every") s.busy_every = v;
  else if (name == "drop_every") s.drop_every = v;
  else if (name == "xmit_delay_us") s.xmit_delay_us = v;
}

}  // namespace pktpath

namespace pktpath {
namespace {
const LinkKindRegistrar kTestdrv{
    {"testdrv", &testdrv_netdev_ops, 0, testdrv_setup_device, testdrv_options, testdrv_set_option}};
}  // namespace
}  // namespace pktpath
