// Bounds under a flood: far more packets than a queue holds, sent to a device whose
// queue the driver stopped, and handed to a Cpu's input backlog that nobody processes.
// The queue never exceeds its bound, every excess packet is dropped under its reason, and
// the process's resident memory is the same after the tenth round as after the first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "../core/xmit_fixture.h"
#include "sanitizer_scale.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

constexpr int kRounds = 10;
constexpr uint64_t kFloodFactor = scaled<uint64_t>(50, 10);  // packets per round / bound
// Slack for the allocator's own bookkeeping, far below one round's packets' worth.
constexpr long kRssSlackPages = 64;

long rss_pages() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident;
}

class FloodBounds : public XmitFixture {
 protected:
  static uint64_t tx_packets(NetDevice* d) { return d->stats_sum().tx_packets; }
};

TEST_F(FloodBounds, StoppedDeviceQueueStaysBoundedAndDropsCounted) {
  constexpr uint32_t kTxqLen = 100;
  NetDevice* d = make("f0", "testdrv", 1, kTxqLen);
  ASSERT_NE(d, nullptr);
  TestDrvState& st = testdrv_state(*d);
  const uint64_t per_round = kTxqLen * kFloodFactor;
  long rss_first = 0;
  for (int round = 0; round < kRounds; ++round) {
    st.stop_after = 10;  // the driver takes 10, stops its queue
    const uint64_t tx_before = tx_packets(d), drops_before = drops(DropReason::QDISC_DROP);
    uint64_t max_qlen = 0;
    for (uint64_t i = 0; i < per_round; ++i) {
      send(d, static_cast<uint32_t>(i));
      max_qlen = std::max(max_qlen, d->qdisc()->qlen());
    }
    drain();
    // The ring holds txqueuelen; one packet the stopped driver handed back waits
    // outside it (Linux's q->gso_skb), counted in qlen.
    const uint64_t qlen = d->qdisc()->qlen();
    EXPECT_LE(max_qlen, kTxqLen + 1) << "round " << round;
    EXPECT_GE(qlen, kTxqLen);
    const uint64_t txd = tx_packets(d) - tx_before;
    EXPECT_EQ(txd, 10u);
    EXPECT_EQ(drops(DropReason::QDISC_DROP) - drops_before, per_round - txd - qlen);
    // Down/up drops what the stopped queue holds and restarts it.
    st.stop_after = 0;
    ASSERT_TRUE(ok(table.set_up(*d, false)));
    ASSERT_TRUE(ok(table.set_up(*d, true)));
    NetDevice::tx_wake_queue(cpu, d->txq(0));  // the driver's open starts its queue
    drain();
    EXPECT_EQ(drops(DropReason::QDISC_DROP) - drops_before, per_round - txd);
    EXPECT_EQ(outstanding(), 0u);
    if (round == 0) rss_first = rss_pages();
  }
  EXPECT_EQ(sent, tx_packets(d) + all_drops());
  const long rss_last = rss_pages();
  std::printf("  stopped device: %llu packets, rss first %ld pages, tenth %ld pages\n",
              (unsigned long long)sent, rss_first, rss_last);
  EXPECT_LE(rss_last, rss_first + kRssSlackPages);
}

TEST_F(FloodBounds, CpuBacklogStaysBoundedAndDropsCounted) {
  Cpu::Options opts;
  opts.max_backlog = 256;
  Cpu rx_cpu(pool, opts);
  const uint64_t per_round = rx_cpu.max_backlog() * kFloodFactor;
  long rss_first = 0;
  uint64_t made = 0, delivered = 0;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t max_len = 0;
    for (uint64_t i = 0; i < per_round; ++i) {
      Packet* p = cpu.alloc();
      ASSERT_NE(p, nullptr);
      p->put(60);
      ++made;
      // What a driver's netif_rx does: enqueue_to_backlog, or drop under CPU_BACKLOG.
      if (!rx_cpu.backlog_enqueue(p)) cpu.free_reason(p, DropReason::CPU_BACKLOG);
      max_len = std::max<uint64_t>(max_len, rx_cpu.backlog_queued());
    }
    // enqueue_to_backlog admits while qlen <= netdev_max_backlog.
    EXPECT_LE(max_len, rx_cpu.max_backlog() + 1) << "round " << round;
    EXPECT_EQ(rx_cpu.backlog_queued(), rx_cpu.max_backlog() + 1);
    // The owner processes its backlog (this thread stands in for it; the default rx
    // handler consumes each packet).
    const uint64_t before = rx_cpu.stats().backlog_processed.get();
    for (int k = 0; k < 1000 && rx_cpu.has_pending(); ++k) rx_cpu.run_pending();
    delivered += rx_cpu.stats().backlog_processed.get() - before;
    EXPECT_EQ(rx_cpu.backlog_len(), 0u);
    cpu.defer_free_flush();
    EXPECT_EQ(made, delivered + drops(DropReason::CPU_BACKLOG));
    rx_cpu.drain_cache();
    EXPECT_EQ(outstanding(), 0u);
    if (round == 0) rss_first = rss_pages();
  }
  const long rss_last = rss_pages();
  std::printf("  cpu backlog: %llu packets, %llu dropped, rss first %ld pages, tenth %ld pages\n",
              (unsigned long long)made, (unsigned long long)drops(DropReason::CPU_BACKLOG), rss_first,
              rss_last);
  EXPECT_LE(rss_last, rss_first + kRssSlackPages);
}

}  // namespace
}  // namespace pktpath::testing
