// netem (sch_netem.cc) on a virtual clock: delay, jitter with a seed and the normal
// table, the loss models, duplicate, reorder with gap, corrupt, rate, slot, limit, the
// watchdog, and every packet accounted for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/clock.h"
#include "qdisc_unit.h"
#include "sched/sch_netem.h"

namespace pktpath::testing {
namespace {

constexpr uint64_t kT0 = 1'000'000'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kAll = UINT32_MAX;  // 100%

uint32_t pct(double p) { return static_cast<uint32_t>(p / 100. * 4294967295.0 + 0.5); }

class NetemUnit : public QdiscUnit {
 protected:
  NetemUnit() { cpu.set_clock(&clock); }
  ~NetemUnit() override { cpu.set_clock(nullptr); }

  struct Departure {
    uint32_t mark;
    uint64_t at;
  };
  // Dequeue everything that is due now.
  void take_due(Qdisc& q, std::vector<Departure>& out) {
    while (Packet* p = q.dequeue(cpu)) {
      out.push_back({p->mark, clock.now_ns()});
      cpu.free(p);
    }
  }
  // Step the clock by `step` ns up to `until` (absolute), dequeuing what is due.
  std::vector<Departure> run_until(Qdisc& q, uint64_t until, uint64_t step = 10'000) {
    std::vector<Departure> out;
    take_due(q, out);
    while (clock.now_ns() < until) {
      clock.advance(step);
      take_due(q, out);
    }
    return out;
  }
  // Enqueue marks 0..n-1 one at a time, dequeuing what is due after each; the marks
  // sent. Each enqueue succeeds: a loss is not the sender's error.
  std::vector<uint32_t> pass(Qdisc& q, uint32_t n) {
    std::vector<uint32_t> sent;
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_EQ(enq(q, pkt(i)) & NET_XMIT_MASK, NET_XMIT_SUCCESS);
      for (uint32_t m : drain_marks(q)) sent.push_back(m);
    }
    return sent;
  }
  NetemXstats xstats(const Qdisc& q) {
    const QdiscXstats x = q.xstats(0);
    return *x.get<NetemXstats>();
  }
  // Delays (ns) of `n` packets enqueued at one instant under `o`, in mark order.
  std::vector<int64_t> schedule(const NetemOptions& o, uint32_t n, uint64_t horizon) {
    auto q = create("netem", o);
    const uint64_t start = clock.now_ns();
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(enq(*q, pkt(i)), NET_XMIT_SUCCESS);
    auto d = run_until(*q, start + horizon);
    EXPECT_EQ(d.size(), n);
    std::vector<int64_t> delay(n, -1);
    for (const auto& x : d) delay[x.mark] = static_cast<int64_t>(x.at - start);
    return delay;
  }

  VirtualClock clock{kT0};
};

// Delay only: each packet leaves exactly `delay` after its enqueue, never earlier.
TEST_F(NetemUnit, DelayOnlyLeavesExactlyAfterDelay) {
  NetemOptions o;
  o.latency_ns = 10 * kMs;
  auto q = create("netem", o);
  for (uint32_t i = 0; i < 5; ++i) {
    ASSERT_EQ(enq(*q, pkt(i)), NET_XMIT_SUCCESS);
    clock.advance(1 * kMs + 10'000);
  }
  auto d = run_until(*q, kT0 + 30 * kMs, 10'000);
  ASSERT_EQ(d.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(d[i].mark, i);
    EXPECT_EQ(d[i].at, kT0 + i * (1 * kMs + 10'000) + 10 * kMs);
  }
  expect_accounted(*q, 5, 5);
}

// The watchdog (a Cpu timer at time_to_send) runs the qdisc on the device path.
TEST_F(NetemUnit, WatchdogSendsWhenTimeToSendArrives) {
  NetDevice* d = make("nd", "dummy");
  NetemOptions o;
  o.latency_ns = 10 * kMs;
  tc(d, QdiscOp::Add, "netem", o);
  for (uint32_t i = 0; i < 3; ++i) send(d, i, 100);
  cpu.run_pending();
  EXPECT_EQ(d->stats_sum().tx_packets, 0u);
  clock.advance(10 * kMs - 1);
  cpu.run_pending();
  EXPECT_EQ(d->stats_sum().tx_packets, 0u);
  clock.advance(1);
  cpu.run_pending();  // the timer reschedules the qdisc, the tx work runs it
  cpu.run_pending();
  EXPECT_EQ(d->stats_sum().tx_packets, 3u);
  EXPECT_EQ(d->qdisc()->stats().packets, 3u);
  EXPECT_EQ(d->qdisc()->qlen(), 0u);
}

// Jitter from the normal table: a seed repeats the schedule exactly, another seed gives
// another; the mean is the delay and the spread normal (68% within 1 sigma, 95% within 2).
TEST_F(NetemUnit, JitterNormalRepeatsPerSeedAndLooksNormal) {
  NetemOptions o;
  o.limit = 10000;
  o.latency_ns = 100 * kMs;
  o.jitter_ns = 10 * kMs;
  o.delay_dist = std::make_shared<const std::vector<int16_t>>(netem_dist_table("normal"));
  o.seed = 7;
  constexpr uint32_t kN = 4000;
  const auto a = schedule(o, kN, 200 * kMs);
  const auto b = schedule(o, kN, 200 * kMs);
  EXPECT_EQ(a, b);
  o.seed = 8;
  const auto c = schedule(o, kN, 200 * kMs);
  EXPECT_NE(a, c);
  double sum = 0;
  unsigned in1 = 0, in2 = 0;
  for (int64_t v : a) {
    sum += static_cast<double>(v);
    const int64_t dev = std::abs(v - static_cast<int64_t>(100 * kMs));
    in1 += dev <= static_cast<int64_t>(10 * kMs);
    in2 += dev <= static_cast<int64_t>(20 * kMs);
  }
  EXPECT_NEAR(sum / kN, 100e6, 0.5e6);
  EXPECT_NEAR(in1 / double(kN), 0.683, 0.03);
  EXPECT_NEAR(in2 / double(kN), 0.954, 0.015);
  std::vector<int64_t> s = a;
  std::sort(s.begin(), s.end());
  EXPECT_NEAR(static_cast<double>(s[kN / 2]), 100e6, 1e6);  // median
}

// Uniform jitter without a table: within [delay - jitter, delay + jitter).
TEST_F(NetemUnit, JitterUniformStaysInRange) {
  NetemOptions o;
  o.limit = 10000;
  o.latency_ns = 50 * kMs;
  o.jitter_ns = 5 * kMs;
  const auto a = schedule(o, 2000, 60 * kMs);
  for (int64_t v : a) {
    EXPECT_GE(v, static_cast<int64_t>(45 * kMs));
    EXPECT_LT(v, static_cast<int64_t>(55 * kMs + 10'000));  // + one clock step
  }
}

// loss random 10% over 100k packets: within 1% of 10%, every loss a counted drop.
TEST_F(NetemUnit, LossRandomTenPercent) {
  NetemOptions o;
  o.loss = pct(10);
  auto q = create("netem", o);
  constexpr uint32_t kN = 100000;
  const uint64_t out = pass(*q, kN).size();
  const uint64_t drops = q->stats().drops;
  EXPECT_NEAR(static_cast<double>(drops) / kN, 0.10, 0.01);
  EXPECT_EQ(xstats(*q).lost, drops);
  expect_accounted(*q, kN, out);
}


// A loss under a parent: netem says SUCCESS with the bypass bit, so the parent queues
// nothing for the packet and counts it as its own drop too (prio_enqueue with
// net_xmit_drop_count); the root's caller sees plain success.
TEST_F(NetemUnit, LossUnderAParentIsNotQueuedThere) {
  auto parent = create("prio");
  parent->set_handle(0x10000);
  NetemOptions o;
  o.loss = kAll;
  // Priority 0 goes to band 1 (minor 2) in the default priomap.
  ASSERT_TRUE(parent->graft(*dev_, 2, create("netem", o)));
  for (uint32_t i = 0; i < 5; ++i) {
    const int rc = enq(*parent, pkt(i));
    EXPECT_EQ(rc & NET_XMIT_BYPASS_BIT, NET_XMIT_BYPASS_BIT);
    EXPECT_EQ(rc & NET_XMIT_MASK, NET_XMIT_SUCCESS);
  }
  EXPECT_EQ(parent->stats().qlen, 0u);
  EXPECT_EQ(parent->stats().drops, 5u);
  EXPECT_EQ(parent->child(2)->stats().drops, 5u);
  EXPECT_TRUE(drain_marks(*parent).empty());
  EXPECT_EQ(drops(DropReason::QDISC_DROP), 5u);
}

// 4-state model, p13 = 100%: the first draw leaves "sent in a gap" for "lost in a
// burst" and p31 = p32 = 0 keeps it there: every packet lost.
TEST_F(NetemUnit, LossStateP13AllDropsEverything) {
  NetemOptions o;
  o.loss_model = NetemLossModel::State;
  o.p13 = kAll;
  o.p31 = 0;
  o.p23 = kAll;
  auto q = create("netem", o);
  for (uint32_t i = 0; i < 1000; ++i) enq(*q, pkt(i));
  EXPECT_EQ(q->dequeue(cpu), nullptr);
  EXPECT_EQ(q->stats().drops, 1000u);
  expect_accounted(*q, 1000, 0);
}

// 4-state model, p14 = 100%: an isolated loss, then back to the gap state: lose, send,
// lose, send...
TEST_F(NetemUnit, LossStateIsolatedLossesAlternate) {
  NetemOptions o;
  o.loss_model = NetemLossModel::State;
  o.p14 = kAll;
  auto q = create("netem", o);
  const std::vector<uint32_t> sent = pass(*q, 1000);
  ASSERT_EQ(sent.size(), 500u);
  for (uint32_t k = 0; k < 500; ++k) EXPECT_EQ(sent[k], 2 * k + 1);
  expect_accounted(*q, 1000, 500);
}

// Gilbert-Elliot, p = r = 100%, 1-h = 100%, 1-k = 0: good (sent), bad (lost), good...
TEST_F(NetemUnit, LossGemodelAlternatesGoodAndBad) {
  NetemOptions o;
  o.loss_model = NetemLossModel::GeModel;
  o.ge_p = kAll;
  o.ge_r = kAll;
  o.ge_h = 0;
  o.ge_k1 = 0;
  auto q = create("netem", o);
  const std::vector<uint32_t> sent = pass(*q, 1000);
  ASSERT_EQ(sent.size(), 500u);
  for (uint32_t k = 0; k < 500; ++k) EXPECT_EQ(sent[k], 2 * k);
  expect_accounted(*q, 1000, 500);
}

// Gilbert-Elliot, p = 0: always good, losing 1-k = 30% of packets.
TEST_F(NetemUnit, LossGemodelGoodStateLossRate) {
  NetemOptions o;
  o.loss_model = NetemLossModel::GeModel;
  o.ge_p = 0;
  o.ge_r = kAll;
  o.ge_k1 = pct(30);
  auto q = create("netem", o);
  constexpr uint32_t kN = 100000;
  const uint64_t out = pass(*q, kN).size();
  EXPECT_NEAR(static_cast<double>(q->stats().drops) / kN, 0.30, 0.01);
  expect_accounted(*q, kN, out);
}

// duplicate 100%: every packet twice; copies counted as made, and made + enqueued =
// sent + dropped + queued.
TEST_F(NetemUnit, DuplicateDoublesCounts) {
  NetemOptions o;
  o.duplicate = kAll;
  auto q = create("netem", o);
  const std::vector<uint32_t> marks = pass(*q, 100);
  ASSERT_EQ(marks.size(), 200u);
  for (uint32_t i = 0; i < 100; ++i) {
    EXPECT_EQ(marks[2 * i], i);
    EXPECT_EQ(marks[2 * i + 1], i);
  }
  EXPECT_EQ(xstats(*q).duplicated, 100u);
  EXPECT_EQ(q->stats().packets, 200u);
  expect_accounted(*q, 100 + xstats(*q).duplicated, 200);
}

// reorder 100% gap 5 with a delay: every 5th packet goes out at once, ahead of the
// delayed ones, counted as a requeue. Each is put at the head (__qdisc_enqueue_head), so
// those not yet sent leave newest first.
TEST_F(NetemUnit, ReorderGapFiveSendsEveryFifthImmediately) {
  NetemOptions o;
  o.latency_ns = 10 * kMs;
  o.reorder = kAll;
  o.gap = 5;
  auto q = create("netem", o);
  for (uint32_t i = 0; i < 20; ++i) enq(*q, pkt(i));
  EXPECT_EQ(drain_marks(*q), (std::vector<uint32_t>{19, 14, 9, 4}));
  EXPECT_EQ(q->stats().requeues, 4u);
  clock.advance(10 * kMs);
  EXPECT_EQ(drain_marks(*q), (std::vector<uint32_t>{0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18}));
  EXPECT_EQ(xstats(*q).reordered, 4u);
  expect_accounted(*q, 20, 20);
}

// rate 1Mbit: 1000-byte packets leave 8 ms apart; with cells of 48 bytes plus 5, a
// 1000-byte packet takes 21 cells of 53 bytes.
TEST_F(NetemUnit, RateSpacesPacketsAndCountsCells) {
  NetemOptions o;
  o.rate = 125000;  // 1 Mbit/s
  auto q = create("netem", o);
  for (uint32_t i = 0; i < 5; ++i) enq(*q, pkt(i, 1000));
  auto d = run_until(*q, kT0 + 50 * kMs, 100'000);
  ASSERT_EQ(d.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(d[i].at, kT0 + (i + 1) * 8 * kMs);

  o.cell_size = 48;
  o.cell_overhead = 5;
  auto q2 = create("netem", o);
  const uint64_t start = clock.now_ns();
  enq(*q2, pkt(9, 1000));
  auto d2 = run_until(*q2, start + 20 * kMs, 1'000);
  ASSERT_EQ(d2.size(), 1u);
  EXPECT_EQ(d2[0].at - start, 8'904'000u);  // 21 * 53 bytes at 125000 B/s
}

// slot 10ms packets 2: two packets per slot, slots 10 ms apart.
TEST_F(NetemUnit, SlotReleasesBudgetPerSlot) {
  NetemOptions o;
  o.slot_min_ns = 10 * kMs;
  o.slot_max_ns = 10 * kMs;
  o.slot_packets = 2;
  auto q = create("netem", o);
  for (uint32_t i = 0; i < 6; ++i) enq(*q, pkt(i));
  auto d = run_until(*q, kT0 + 30 * kMs, 1 * kMs);
  ASSERT_EQ(d.size(), 6u);
  for (uint32_t i = 0; i < 6; ++i) {
    EXPECT_EQ(d[i].mark, i);
    EXPECT_EQ(d[i].at, kT0 + (i / 2) * 10 * kMs) << i;
  }
}

// limit 5: the 6th and later are dropped (NET_XMIT_DROP, QDISC_DROP on the Cpu).
TEST_F(NetemUnit, LimitDropsAndCounts) {
  NetemOptions o;
  o.limit = 5;
  o.latency_ns = 10 * kMs;
  auto q = create("netem", o);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(enq(*q, pkt(i)), i < 5 ? NET_XMIT_SUCCESS : NET_XMIT_DROP);
  EXPECT_EQ(q->stats().drops, 3u);
  EXPECT_EQ(xstats(*q).limit_drops, 3u);
  EXPECT_EQ(q->qlen(), 5u);
  expect_accounted(*q, 8, 0);
  clock.advance(10 * kMs);
  EXPECT_EQ(drain_marks(*q), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  q->reset(cpu);
}

// corrupt 100%: exactly one bit of the payload flipped. With duplicate 100% the copy
// is taken before the flip and corrupted on its own pass: one bit each, not two.
TEST_F(NetemUnit, CorruptFlipsOneBitEach) {
  NetemOptions o;
  o.corrupt = kAll;
  o.duplicate = kAll;
  auto q = create("netem", o);
  Packet* in = pkt(1, 100);
  std::memset(in->data(), 0, in->len);
  enq(*q, in);
  std::vector<int> flipped;
  while (Packet* p = q->dequeue(cpu)) {
    int bits = 0;
    for (uint32_t i = 0; i < p->len; ++i) bits += __builtin_popcount(p->data()[i]);
    flipped.push_back(bits);
    cpu.free(p);
  }
  EXPECT_EQ(flipped, (std::vector<int>{1, 1}));
  EXPECT_EQ(xstats(*q).corrupted, 2u);
}

// A reset drops everything held (heap, list and reorder queue) under QDISC_DROP.
TEST_F(NetemUnit, ResetDropsEverythingHeld) {
  NetemOptions o;
  o.limit = 100;
  o.latency_ns = 10 * kMs;
  o.jitter_ns = 5 * kMs;
  o.reorder = pct(30);
  o.gap = 1;
  auto q = create("netem", o);
  for (uint32_t i = 0; i < 50; ++i) enq(*q, pkt(i));
  (void)q->peek(cpu);
  q->reset(cpu);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->stats().backlog, 0u);
  EXPECT_EQ(drops(DropReason::QDISC_DROP), 50u);
  EXPECT_EQ(outstanding(), 0u);
}

// The tables iproute2 generates: 4096 entries, non-decreasing; normal.dist's first line.
TEST(NetemDist, TablesMatchIproute2Generators) {
  const auto n = netem_dist_table("normal");
  ASSERT_EQ(n.size(), 4096u);
  EXPECT_EQ(std::vector<int16_t>(n.begin(), n.begin() + 8),
            (std::vector<int16_t>{-32768, -28307, -26871, -25967, -25298, -24765, -24320, -23937}));
  EXPECT_TRUE(std::is_sorted(n.begin(), n.end()));
  const auto p = netem_dist_table("pareto");
  ASSERT_EQ(p.size(), 4096u);
  EXPECT_EQ(p.front(), -5461);
  EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
  EXPECT_EQ(netem_dist_table("paretonormal").size(), 4096u);
  EXPECT_TRUE(netem_dist_table("experimental").empty());
}

}  // namespace
}  // namespace pktpath::testing
