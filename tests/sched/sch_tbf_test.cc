// tbf (sch_tbf.cc): rate on a virtual clock, options and the latency-derived limit.
#include <gtest/gtest.h>

#include "core/clock.h"
#include "qdisc_unit.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

// tbf: over one simulated second at 1 Mbit/s the bytes sent must be within 1% of
// rate * 1 s + burst, with the watchdog (a Cpu timer) driving the qdisc.
TEST_F(QdiscUnit, TbfRateWithinOnePercentOnVirtualClock) {
  VirtualClock clock(1'000'000'000);
  cpu.set_clock(&clock);
  NetDevice* d = make("tb", "dummy");
  TbfOptions o;
  o.rate_bytes_ps = 125000;  // 1 Mbit/s
  o.burst = 1500;
  o.limit = 1'000'000;
  o.limit_set = true;
  tc(d, QdiscOp::Add, "tbf", o);
  Qdisc* q = d->qdisc();
  // Keep the queue busy with 1000-byte packets for the whole second.
  for (uint32_t i = 0; i < 600; ++i) send(d, i, 1000);
  const uint64_t start_bytes = d->stats_sum().tx_bytes;
  for (int step = 0; step < 100000; ++step) {  // 10 us steps
    clock.advance(10'000);
    cpu.run_pending();
  }
  const uint64_t bytes = d->stats_sum().tx_bytes - start_bytes;
  const double expect = 125000.0;
  EXPECT_NEAR(static_cast<double>(bytes), expect, expect * 0.01) << "bytes " << bytes;
  EXPECT_GT(q->stats().overlimits, 0u);
  EXPECT_GT(q->qlen(), 0u);
  // Packets larger than the bucket can never leave: dropped at enqueue.
  send(d, 9999, 1600);
  EXPECT_EQ(q->stats().drops, 1u);
  ASSERT_TRUE(ok(table.set_up(*d, false)));
  cpu.set_clock(nullptr);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(QdiscUnit, TbfOptionsAndLatencyDerivedLimit) {
  dev_ = make("u0", "testdrv", 1, 1000, false);
  TbfOptions o;
  EXPECT_FALSE(qdisc_create(*dev_, "tbf", o));
  o.rate_bytes_ps = 125000;
  o.burst = 1500;
  EXPECT_FALSE(qdisc_create(*dev_, "tbf", o));  // neither limit nor latency
  o.latency_ns = 50'000'000;
  o.latency_set = true;
  auto q = qdisc_create(*dev_, "tbf", o);
  ASSERT_TRUE(q) << q.error().msg;
  const QdiscOptions dumped = (*q)->dump();  // get<> points into it: keep it alive
  const auto* t = dumped.get<TbfOptions>();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->rate_bytes_ps, 125000u);
  EXPECT_EQ(t->burst, 1500u);
  EXPECT_EQ(t->limit, 125000u / 20 + 1500);  // rate * latency + burst
  EXPECT_TRUE(t->limit_set);
}

}  // namespace
}  // namespace pktpath::testing
