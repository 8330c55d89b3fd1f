// fq (sch_fq.cc) on a virtual clock against schedules worked out by hand from the
// kernel's fq_dequeue: DRR between flows with quantum and initial_quantum, maxrate
// pacing with its drift correction, the watchdog driving a device, flow_limit and limit
// drops, the horizon (drop and cap) with EDT timestamps, the highprio fifo, the garbage
// collection of detached flows; every packet accounted for (made = sent + dropped +
// queued).
#include "sched/sch_fq.h"
#include "status_assert.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/clock.h"
#include "qdisc_unit.h"

namespace pktpath::testing {
namespace {

constexpr uint64_t kT0 = 1'000'000'000;  // the virtual clock's start
constexpr uint64_t kMs = 1'000'000;

class FqTest : public QdiscUnit {
 protected:
  FqTest() { cpu.set_clock(&clock); }
  ~FqTest() override { cpu.set_clock(nullptr); }
  // A packet of flow `hash` (fq keys flows by the flow hash when there is no socket).
  Packet* fpkt(uint32_t mark, uint32_t hash, uint32_t size = 1000, uint64_t tstamp = 0) {
    Packet* p = pkt(mark, size);
    p->hash = hash;
    p->tstamp_ns = tstamp;
    return p;
  }
  FqXstats xs(Qdisc& q) {
    const QdiscXstats x = q.xstats(clock.now_ns());
    return *x.get<FqXstats>();
  }
  // Dequeue until empty at the current time; the marks, each counted as dequeued.
  std::vector<uint32_t> take(Qdisc& q) {
    std::vector<uint32_t> v;
    while (Packet* p = q.dequeue(cpu)) {
      v.push_back(p->mark);
      cpu.free(p);
      ++dequeued;
    }
    return v;
  }
  // From kT0, every `step` up to `until`: the times (from kT0) at which packets left.
  std::vector<uint64_t> departures(Qdisc& q, uint64_t step, uint64_t until) {
    std::vector<uint64_t> at;
    for (uint64_t t = 0; t <= until; t += step) {
      clock.set(kT0 + t);
      for (size_t n = take(q).size(); n > 0; --n) at.push_back(t);
    }
    return at;
  }
  VirtualClock clock{kT0};
  uint64_t dequeued = 0;
};

FqOptions small_quanta(uint32_t quantum, uint32_t initial) {
  FqOptions o;
  o.quantum = quantum;
  o.initial_quantum = initial;
  return o;
}

// Flow A (500-byte packets) and flow B (1000-byte packets), quantum 1000 and
// initial_quantum 1000: each flow sends 1000 bytes per turn, A first (it arrived
// first). A's credit: 1000 -> a1 500 -> a2 0, then B's b1; A and B alternate on
// old_flows until A is empty, then B alone.
TEST_F(FqTest, DrrSharesBytesByQuantum) {
  auto q = create("fq", small_quanta(1000, 1000));
  for (uint32_t i = 1; i <= 10; ++i) ASSERT_EQ(enq(*q, fpkt(i, 1, 500)), NET_XMIT_SUCCESS);
  for (uint32_t i = 101; i <= 110; ++i) ASSERT_EQ(enq(*q, fpkt(i, 2, 1000)), NET_XMIT_SUCCESS);
  EXPECT_EQ(xs(*q).flows, 2u);
  EXPECT_EQ(xs(*q).inactive_flows, 0u);
  EXPECT_EQ(take(*q), (std::vector<uint32_t>{1, 2, 101, 3, 4, 102, 5, 6, 103, 7, 8, 104, 9, 10, 105,
                                             106, 107, 108, 109, 110}));
  const FqXstats x = xs(*q);
  EXPECT_EQ(x.flows, 2u);
  // A was detached when a dequeue found it empty; B, served last, stays on old_flows:
  // fq_dequeue returns at once while the qdisc is empty.
  EXPECT_EQ(x.inactive_flows, 1u);
  EXPECT_EQ(x.throttled, 0u);
  expect_accounted(*q, 20, dequeued);
  EXPECT_EQ(q->stats().packets, 20u);
  EXPECT_EQ(q->stats().bytes, 10u * 500 + 10u * 1000);
}

// The default initial_quantum (10 MTU) lets a new flow send a burst before the
// round robin: with quantum 1000 and initial_quantum 3000, flow A sends three
// 1000-byte packets, then B three, then one each.
TEST_F(FqTest, InitialQuantumBurstThenQuantum) {
  auto q = create("fq", small_quanta(1000, 3000));
  for (uint32_t i = 1; i <= 5; ++i) enq(*q, fpkt(i, 1));
  for (uint32_t i = 101; i <= 105; ++i) enq(*q, fpkt(i, 2));
  EXPECT_EQ(take(*q), (std::vector<uint32_t>{1, 2, 3, 101, 102, 103, 4, 104, 5, 105}));
  expect_accounted(*q, 10, dequeued);
}

// maxrate 100000 B/s with quantum 1000 and 1000-byte packets: a flow's credit runs out
// with every packet, and time_next_packet = now + 1000 * 1e9 / 100000 = now + 10 ms,
// less min(10 ms / 2, how late this dequeue came after the previous time_next_packet).
TEST_F(FqTest, MaxratePacesDeparturesWithDriftCorrection) {
  FqOptions o = small_quanta(1000, 1000);
  o.maxrate = 100000;
  {
    auto q = create("fq", o);
    for (uint32_t i = 1; i <= 5; ++i) enq(*q, fpkt(i, 1));
    // Dequeues every 1 ms: each packet exactly when due.
    EXPECT_EQ(departures(*q, 1 * kMs, 60 * kMs),
              (std::vector<uint64_t>{0, 10 * kMs, 20 * kMs, 30 * kMs, 40 * kMs}));
    EXPECT_EQ(xs(*q).throttled, 4u);
    expect_accounted(*q, 5, dequeued);
  }
  // Dequeues every 3 ms: p2 at 12 (due 10; next = 12 + 10 - 2 = 20), p3 at 21 (next =
  // 21 + 10 - 1 = 30), p4 at 30 (next 40), p5 at 42.
  clock.set(kT0);
  dequeued = 0;
  auto q = create("fq", o);
  for (uint32_t i = 1; i <= 5; ++i) enq(*q, fpkt(i, 1));
  EXPECT_EQ(departures(*q, 3 * kMs, 60 * kMs),
            (std::vector<uint64_t>{0, 12 * kMs, 21 * kMs, 30 * kMs, 42 * kMs}));
  // The unthrottle latency EWMA saw 2, 1, 0 and 2 ms late: ((2/8*7/8 + 1/8)*7/8)*7/8 + 2/8.
  const double ewma = ((2e6 / 8 * 7 / 8 + 1e6 / 8) * 7 / 8) * 7 / 8 + 2e6 / 8;
  EXPECT_NEAR(xs(*q).unthrottle_latency_ns, ewma, 2.0);
  expect_accounted(*q, 5, dequeued);
}

// The watchdog: on a dummy device the throttled flow's next packet leaves when the
// virtual clock reaches its time, with nothing but the Cpu's timers driving the qdisc.
TEST_F(FqTest, WatchdogSendsPacedPacketsOnTime) {
  NetDevice* d = make("fq0", "dummy");
  FqOptions o = small_quanta(1000, 1000);
  o.maxrate = 100000;
  tc(d, QdiscOp::Add, "fq", o);
  for (uint32_t i = 0; i < 4; ++i) send(d, i, 1000, 0, 7);
  auto tx = [&] { return d->stats_sum().tx_packets; };
  EXPECT_EQ(tx(), 1u);  // the first leaves at once
  for (uint32_t k = 1; k <= 3; ++k) {
    clock.set(kT0 + k * 10 * kMs - 1);
    cpu.run_pending();
    EXPECT_EQ(tx(), k) << "early at " << k;
    clock.set(kT0 + k * 10 * kMs);
    cpu.run_pending();
    EXPECT_EQ(tx(), k + 1u) << "late at " << k;
  }
  EXPECT_EQ(d->qdisc()->qlen(), 0u);
  ASSERT_TRUE(ok(table.set_up(*d, false)));
  EXPECT_EQ(outstanding(), 0u);
}

// flow_limit 3 and limit 5: flow A's 4th and 5th packets are over its flow limit
// (flows_plimit), flow B's 3rd is over the qdisc's limit; all three are QDISC_DROP.
TEST_F(FqTest, FlowLimitAndLimitDrops) {
  FqOptions o;
  o.flow_limit = 3;
  o.limit = 5;
  auto q = create("fq", o);
  std::vector<int> rc;
  for (uint32_t i = 1; i <= 5; ++i) rc.push_back(enq(*q, fpkt(i, 1)));
  for (uint32_t i = 101; i <= 103; ++i) rc.push_back(enq(*q, fpkt(i, 2)));
  EXPECT_EQ(rc, (std::vector<int>{0, 0, 0, NET_XMIT_DROP, NET_XMIT_DROP, 0, 0, NET_XMIT_DROP}));
  EXPECT_EQ(xs(*q).flows_plimit, 2u);
  EXPECT_EQ(q->stats().drops, 3u);
  EXPECT_EQ(q->qlen(), 5u);
  expect_accounted(*q, 8, 0);
  // Default quanta (initial 15140 bytes): A's three leave first, then B's two.
  EXPECT_EQ(take(*q), (std::vector<uint32_t>{1, 2, 3, 101, 102}));
  expect_accounted(*q, 8, dequeued);
}

// EDT timestamps: a packet leaves at its tstamp; beyond now + horizon it is dropped
// (horizon_drop) or its time is capped to now + horizon (horizon_cap). Within a flow,
// packets leave in timestamp order.
TEST_F(FqTest, HorizonDropAndCapWithEdtTimestamps) {
  FqOptions o;
  o.horizon_us = 1'000'000;  // 1 s
  auto q = create("fq", o);
  EXPECT_EQ(enq(*q, fpkt(1, 1, 1000, kT0 + 2000 * kMs)), NET_XMIT_DROP);
  EXPECT_EQ(xs(*q).horizon_drops, 1u);
  EXPECT_EQ(drops(DropReason::QDISC_DROP), 1u);
  ASSERT_EQ(enq(*q, fpkt(2, 1, 1000, kT0 + 300 * kMs)), NET_XMIT_SUCCESS);
  ASSERT_EQ(enq(*q, fpkt(3, 1, 1000, kT0 + 200 * kMs)), NET_XMIT_SUCCESS);
  EXPECT_TRUE(take(*q).empty());
  FqXstats x = xs(*q);
  EXPECT_EQ(x.throttled_flows, 1u);
  EXPECT_EQ(x.time_next_delayed_flow, static_cast<int64_t>(200 * kMs + 10'000));  // + timer_slack
  clock.set(kT0 + 200 * kMs - 1);
  EXPECT_TRUE(take(*q).empty());
  clock.set(kT0 + 200 * kMs);
  EXPECT_EQ(take(*q), std::vector<uint32_t>{3});
  clock.set(kT0 + 300 * kMs);
  EXPECT_EQ(take(*q), std::vector<uint32_t>{2});

  FqOptions cap;
  cap.horizon_drop = false;
  ASSERT_TRUE(q->change(*dev_, cap));
  const uint64_t now = clock.now_ns();
  ASSERT_EQ(enq(*q, fpkt(4, 1, 1000, now + 5000 * kMs)), NET_XMIT_SUCCESS);
  EXPECT_EQ(xs(*q).horizon_caps, 1u);
  clock.set(now + 1000 * kMs - 1);
  EXPECT_TRUE(take(*q).empty());
  clock.set(now + 1000 * kMs);
  EXPECT_EQ(take(*q), std::vector<uint32_t>{4});
  expect_accounted(*q, 4, dequeued);
}

// Priority TC_PRIO_CONTROL (7) skips the flows: the internal fifo leaves first, counted
// as highprio, and is subject to neither flow_limit nor pacing.
TEST_F(FqTest, ControlPriorityUsesTheHighprioFifo) {
  FqOptions o = small_quanta(1000, 1000);
  o.maxrate = 100000;
  o.flow_limit = 1;
  auto q = create("fq", o);
  enq(*q, fpkt(1, 1));
  for (uint32_t i = 11; i <= 13; ++i) {
    Packet* p = fpkt(i, 1);
    p->priority = 7;
    ASSERT_EQ(enq(*q, p), NET_XMIT_SUCCESS);
  }
  EXPECT_EQ(take(*q), (std::vector<uint32_t>{11, 12, 13, 1}));
  EXPECT_EQ(xs(*q).highprio_packets, 3u);
  EXPECT_EQ(xs(*q).flows, 1u);
  expect_accounted(*q, 4, dequeued);
}

// The garbage collection (fq_gc): with 2 buckets, once flows >= 2 << 1 and more than
// half are inactive, a lookup frees the flows on its way that were detached more than
// 3 s ago (at most 8). Five flows and two triggers all in bucket 0. The flow served
// last before the qdisc ran empty stays listed (fq_dequeue returns at once on an empty
// qdisc), so it is not detached and not collected.
TEST_F(FqTest, GarbageCollectsFlowsDetachedForThreeSeconds) {
  auto bucket = [](uint32_t hash) {  // hash_ptr(((hash & 1023) << 1) | 1, 1)
    const uint64_t key = (uint64_t{hash & 1023} << 1) | 1;
    return (key * 0x61C8864680B583EBull) >> 63;
  };
  std::vector<uint32_t> hashes;
  for (uint32_t h = 1; hashes.size() < 7; ++h)
    if (bucket(h) == 0) hashes.push_back(h);
  FqOptions o;
  o.buckets_log = 1;
  auto q = create("fq", o);
  for (int i = 0; i < 5; ++i) enq(*q, fpkt(i, hashes[i]));
  EXPECT_EQ(take(*q).size(), 5u);  // four detached at kT0, the fifth still listed
  EXPECT_EQ(xs(*q).inactive_flows, 4u);
  clock.set(kT0 + 2000 * kMs);  // too young
  enq(*q, fpkt(5, hashes[5]));
  EXPECT_EQ(xs(*q).gc_flows, 0u);
  EXPECT_EQ(xs(*q).flows, 6u);
  EXPECT_EQ(take(*q).size(), 1u);  // the trigger is served: the fifth flow is detached
  clock.set(kT0 + 3500 * kMs);
  enq(*q, fpkt(6, hashes[6]));
  const FqXstats x = xs(*q);
  EXPECT_EQ(x.gc_flows, 4u);  // the four detached at kT0, not the fifth (detached at 2 s)
  EXPECT_EQ(x.flows, 3u);
  EXPECT_EQ(x.inactive_flows, 1u);
  EXPECT_EQ(take(*q).size(), 1u);
  expect_accounted(*q, 7, dequeued);
}

TEST_F(FqTest, ResetDropsEverythingQueued) {
  auto q = create("fq");
  for (uint32_t i = 0; i < 6; ++i) enq(*q, fpkt(i, i % 3 + 1));
  Packet* p = fpkt(9, 1);
  p->priority = 7;
  enq(*q, p);
  q->reset(cpu);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(drops(DropReason::QDISC_DROP), 7u);
  EXPECT_EQ(xs(*q).flows, 0u);
  EXPECT_EQ(q->dequeue(cpu), nullptr);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(FqTest, OptionsDefaultsAndBadValues) {
  auto q = create("fq");
  const QdiscOptions d = q->dump();
  const auto* o = d.get<FqOptions>();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(*o->limit, 10000u);
  EXPECT_EQ(*o->flow_limit, 100u);
  EXPECT_EQ(*o->quantum, 2u * 1514);
  EXPECT_EQ(*o->initial_quantum, 10u * 1514);
  EXPECT_EQ(*o->maxrate, ~0u);
  EXPECT_EQ(*o->buckets_log, 10u);
  EXPECT_EQ(*o->horizon_us, 10'000'000u);
  EXPECT_TRUE(*o->horizon_drop);
  FqOptions bad;
  bad.quantum = 0;
  EXPECT_FALSE(qdisc_create(*dev_, "fq", bad));
  bad.quantum = (1u << 20) + 1;
  EXPECT_FALSE(qdisc_create(*dev_, "fq", bad));
  FqOptions badb;
  badb.buckets_log = 19;
  EXPECT_FALSE(qdisc_create(*dev_, "fq", badb));
}

}  // namespace
}  // namespace pktpath::testing
