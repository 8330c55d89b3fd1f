#include "tools/pktgen.h"
#include "core/net.h"
#include "status_assert.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/dev_table.h"
#include "drivers/testdrv.h"
#include "sched/sch_api.h"
#include "sched/sch_fifo.h"

namespace pktpath {
namespace {

class PktgenTest : public ::testing::Test {
 protected:
  PacketPool pool{PacketPool::Options{.capacity = 16384}};
  Cpu control{pool};
  Net net{control};
  DeviceTable& devs = net.devices();

  NetDevice* make(const char* kind, uint16_t queues = 1) {
    NetDevice::Config c;
    c.name = "foo";
    c.num_tx_queues = queues;
    auto d_added = devs.add(c, kind);
    EXPECT_TRUE(ok(d_added));
    NetDevice* d = d_added.value_or(nullptr);
    EXPECT_TRUE(ok(devs.set_up(*d, true)));
    return d;
  }
  PktgenConfig config(PktgenMode mode, uint64_t count) {
    PktgenConfig c;
    c.dev = "foo";
    c.count = count;
    c.mode = mode;
    EXPECT_FALSE(pktgen_set(c, "dst_mac", "11:11:11:11:11:11"));
    EXPECT_FALSE(pktgen_set(c, "dst", "1.1.1.1"));
    EXPECT_FALSE(pktgen_set(c, "flag", "NO_TIMESTAMP"));
    return c;
  }
  void expect_pool_whole() {
    control.drain_cache();
    EXPECT_EQ(pool.available(), pool.capacity());
  }
};

TEST_F(PktgenTest, QueueXmitCountIsExactPerThread) {
  NetDevice* d = make("dummy");
  Pktgen g(*d, pool, config(PktgenMode::kQueueXmit, 10000), PktgenRunOptions{.threads = 2});
  PktgenResult r = g.run();
  ASSERT_EQ(r.threads.size(), 2u);
  for (const auto& t : r.threads) {
    EXPECT_EQ(t.sofar, 10000u);
    EXPECT_EQ(t.errors, 0u);
    EXPECT_EQ(t.tx_bytes, 10000u * 60u);
    EXPECT_EQ(t.pkt_size, 60u);
  }
  EXPECT_EQ(d->stats_sum().tx_packets, 20000u);
  EXPECT_EQ(d->stats_sum().tx_bytes, 20000u * 60u);
  expect_pool_whole();
}

TEST_F(PktgenTest, StartXmitWithBurstAndClone) {
  NetDevice* d = make("dummy");
  PktgenConfig c = config(PktgenMode::kStartXmit, 1000);
  c.burst = 8;
  c.clone_skb = 100;
  Pktgen g(*d, pool, c, PktgenRunOptions{});
  PktgenResult r = g.run();
  EXPECT_EQ(r.packets(), 1000u);  // count stops mid-burst exactly
  EXPECT_EQ(d->stats_sum().tx_packets, 1000u);
  expect_pool_whole();  // every user taken on the shared packet was given back
}

TEST_F(PktgenTest, CloneSkbSendsTheSamePacket) {
  NetDevice* d = make("testdrv");
  testdrv_state(*d).record = false;
  PktgenConfig c = config(PktgenMode::kQueueXmit, 500);
  c.clone_skb = 1000;
  Pktgen g(*d, pool, c, PktgenRunOptions{});
  PktgenResult r = g.run();
  EXPECT_EQ(r.packets(), 500u);
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), 500u);
  expect_pool_whole();
}

TEST_F(PktgenTest, EverythingDroppedReportsErrorsAndEndsByDuration) {
  NetDevice* d = make("testdrv");
  QdiscRequest q;  // pfifo limit 0: every packet dropped at enqueue
  q.op = QdiscOp::Replace;
  q.kind = "pfifo";
  FifoOptions none;
  none.limit = 0;
  none.limit_set = true;
  q.opts = none;
  auto st = tc_qdisc_modify(devs, *d, q);
  ASSERT_TRUE(st) << st.error().msg;
  PktgenConfig c = config(PktgenMode::kQueueXmit, 1000);
  c.duration_s = 0.2;
  Pktgen g(*d, pool, c, PktgenRunOptions{});
  auto t0 = std::chrono::steady_clock::now();
  PktgenResult r = g.run();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.packets(), 0u);
  EXPECT_GT(r.errors(), 1000u);
  EXPECT_NEAR(secs, 0.2, 0.02 + 0.1);  // stops within its time (slack for sanitizer builds)
  expect_pool_whole();
}

TEST_F(PktgenTest, DurationCutsAnEndlessRunShort) {
  NetDevice* d = make("dummy");
  PktgenConfig c = config(PktgenMode::kQueueXmit, 0);  // 0: until stopped
  c.duration_s = 0.3;
  Pktgen g(*d, pool, c, PktgenRunOptions{});
  PktgenResult r = g.run();
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_GT(r.packets(), 0u);
  // It ran to the deadline, and stopped there: the upper bound leaves room for a loaded
  // machine (the thread may be off its core when the deadline passes).
  const double s = static_cast<double>(r.threads[0].elapsed_ns) / 1e9;
  EXPECT_GE(s, 0.29);
  EXPECT_LT(s, 2.0);
  expect_pool_whole();
}

// pktgen_setup_dev refuses a device that is not up: nothing runs, a clear error.
TEST_F(PktgenTest, DeviceDownIsRefusedAtOnce) {
  NetDevice* d = make("dummy");
  ASSERT_TRUE(ok(devs.set_up(*d, false)));
  for (PktgenMode m : {PktgenMode::kQueueXmit, PktgenMode::kStartXmit, PktgenMode::kNetifReceive}) {
    Pktgen g(*d, pool, config(m, 0), PktgenRunOptions{});  // count 0: would run forever
    PktgenResult r = g.run();
    EXPECT_EQ(r.error, "device is not up: \"foo\"");
    EXPECT_TRUE(r.threads.empty());
  }
  expect_pool_whole();
}

// A frame that cannot fit a packet buffer is refused instead of failing every
// allocation forever.
TEST_F(PktgenTest, FrameLargerThanTheBufferIsRefused) {
  NetDevice* d = make("dummy");
  PktgenConfig c = config(PktgenMode::kQueueXmit, 0);
  c.min_pkt_size = c.max_pkt_size = 4000;  // set directly: pktgen_set would refuse it
  Pktgen g(*d, pool, c, PktgenRunOptions{});
  PktgenResult r = g.run();
  EXPECT_NE(r.error.find("does not fit a packet buffer (1920 bytes)"), std::string::npos) << r.error;
  EXPECT_TRUE(r.threads.empty());
}

// Each end condition, and each attempt counted once (sent + errors = attempts).
TEST_F(PktgenTest, EndConditionsAndEveryAttemptCountedOnce) {
  NetDevice* d = make("testdrv");
  PktgenConfig c = config(PktgenMode::kQueueXmit, 3000);
  Pktgen byCount(*d, pool, c, PktgenRunOptions{.threads = 2});
  PktgenResult r = byCount.run();
  for (const auto& t : r.threads) EXPECT_EQ(t.end, PktgenEnd::kCount);
  EXPECT_EQ(r.packets(), 6000u);
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), r.packets());
  c.count = 0;
  c.duration_s = 0.05;
  Pktgen byDuration(*d, pool, c, PktgenRunOptions{});
  r = byDuration.run();
  EXPECT_EQ(r.threads[0].end, PktgenEnd::kDuration);
  uint64_t total = 6000 + r.packets();
  c.duration_s = 0;
  Pktgen byStop(*d, pool, c, PktgenRunOptions{});
  std::thread stopper([&] {
    while (byStop.live_packets() == 0) std::this_thread::yield();
    byStop.stop();
  });
  r = byStop.run();
  stopper.join();
  EXPECT_EQ(r.threads[0].end, PktgenEnd::kStopped);
  total += r.packets();
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_EQ(testdrv_state(*d).transmitted.load() + d->qdisc()->qlen(), total);
  // A stopped run may leave packets in the qdisc (as the kernel's); taking the device
  // down resets it and frees them, so the pool is whole again.
  ASSERT_TRUE(ok(devs.set_up(*d, false)));
  EXPECT_EQ(d->qdisc()->qlen(), 0u);
  expect_pool_whole();
}

// Total pps is all packets over the run's time, not the sum of the threads' rates.
TEST_F(PktgenTest, TotalPpsIsPacketsOverElapsed) {
  PktgenResult r;
  r.threads.resize(2);
  r.threads[0].sofar = 1000;
  r.threads[0].elapsed_ns = 1'000'000'000;
  r.threads[0].pkt_size = 60;
  r.threads[1].sofar = 1000;
  r.threads[1].elapsed_ns = 500'000'000;
  r.threads[1].pkt_size = 60;
  EXPECT_DOUBLE_EQ(r.pps(), 2000.0);  // the sum of rates would say 3000
  EXPECT_DOUBLE_EQ(r.mbps(), 2000.0 * 60 * 8 / 1e6);
}

TEST_F(PktgenTest, ResultTextHasPktgensShape) {
  PktgenThreadResult t;
  t.sofar = 1000000;
  t.elapsed_ns = 500'000'000;
  t.pkt_size = 60;
  t.errors = 3;
  EXPECT_EQ(pktgen_result_text(t),
            "OK: 500000(c500000+d0) usec, 1000000 (60byte,0frags)\n"
            "  2000000pps 960Mb/sec (960000000bps) errors: 3");
}

}  // namespace
}  // namespace pktpath
