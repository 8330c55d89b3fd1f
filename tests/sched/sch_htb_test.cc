// htb (sch_htb.cc) on a virtual clock: schedules computed by hand from the kernel's
// arithmetic (1 Mbit/s = 125000 B/s: a 1000-byte packet costs exactly 8 ms of tokens;
// a 1600-byte burst is 12.8 ms), borrowing up to ceil, sharing the parent's excess by
// quantum and prio, default class, direct queue, classification by priority, class
// delete with packets, and every packet accounted for.
#include <gtest/gtest.h>

#include <map>

#include "core/clock.h"
#include "qdisc_unit.h"
#include "sched/act_police.h"
#include "sched/sch_htb.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

constexpr uint64_t kT0 = 1'000'000'000;
constexpr uint64_t kMbit = 125000;  // bytes/s

class HtbUnit : public QdiscUnit {
 protected:
  HtbUnit() : clock(kT0) { cpu.set_clock(&clock); }
  ~HtbUnit() override {
    if (q) q->reset(cpu);
    q.reset();
    cpu.set_clock(nullptr);
  }
  void make_htb(HtbOptions o = {}) {
    q = create("htb", o);
    q->set_handle(0x10000);
  }
  // A class as tc sends it: bursts as ticks at their rates.
  void add_class(uint32_t parent, uint32_t classid, uint64_t rate, uint64_t ceil, uint32_t burst = 1600,
                 uint32_t cburst = 1600, uint32_t prio = 0, uint32_t quantum = 0) {
    HtbClassOptions o;
    o.rate_bytes_ps = rate;
    o.ceil_bytes_ps = ceil;
    o.buffer = tc::tc_calc_xmittime(rate, burst);
    o.cbuffer = tc::tc_calc_xmittime(ceil, cburst);
    o.prio = prio;
    o.quantum = quantum;
    Status st = q->class_change(*dev_, cpu, parent, classid, o, warn);
    ASSERT_TRUE(st) << st.error().msg;
  }
  // `n` packets of `size` bytes for class `classid` (selected by skb->priority).
  void fill(uint32_t classid, int n, uint32_t size = 1000) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(enq(*q, pkt(classid, size, classid)), NET_XMIT_SUCCESS);
      ++enqueued;
    }
  }
  // Dequeue everything that may leave now; bytes per mark.
  void pump(std::map<uint32_t, uint64_t>& bytes) {
    while (Packet* p = q->dequeue(cpu)) {
      bytes[p->mark] += p->len;
      ++dequeued;
      cpu.free(p);
    }
  }
  // Run for `ns` of virtual time, dequeuing every `step` ns.
  std::map<uint32_t, uint64_t> run_for(uint64_t ns, uint64_t step = 100'000) {
    std::map<uint32_t, uint64_t> bytes;
    pump(bytes);
    for (uint64_t t = 0; t < ns; t += step) {
      clock.advance(step);
      pump(bytes);
    }
    return bytes;
  }
  const QdiscClassInfo* info(uint32_t classid) {
    dump = q->class_dump(0);
    for (const auto& c : dump)
      if (c.classid == classid) return &c;
    return nullptr;
  }

  VirtualClock clock;
  std::unique_ptr<Qdisc> q;
  std::string warn;
  std::vector<QdiscClassInfo> dump;
  uint64_t enqueued = 0, dequeued = 0;
};

// One class at 1 Mbit/s, burst 1600: two packets leave at once (12.8 ms of tokens cover
// one with 4.8 ms left, which lets a second go into debt: -3.2 ms), the third at 3.2 ms
// and then one every 8 ms: 2 + 125 packets by t0 + 1 s (3.2 + 8k <= 1000 ms).
TEST_F(HtbUnit, OneClassSendsItsRateAfterItsBurst) {
  make_htb();
  add_class(TC_H_ROOT, 0x10010, kMbit, kMbit);
  fill(0x10010, 300);
  std::map<uint32_t, uint64_t> b;
  pump(b);
  EXPECT_EQ(b[0x10010], 2000u);
  clock.advance(3'100'000);
  pump(b);
  EXPECT_EQ(b[0x10010], 2000u);  // 3.1 ms: not yet
  clock.advance(100'000);
  pump(b);
  EXPECT_EQ(b[0x10010], 3000u);  // 3.2 ms
  clock.advance(7'900'000);
  pump(b);
  EXPECT_EQ(b[0x10010], 3000u);  // 11.1 ms
  clock.advance(100'000);
  pump(b);
  EXPECT_EQ(b[0x10010], 4000u);  // 11.2 ms
  auto rest = run_for(1'000'000'000 - 11'200'000);
  EXPECT_EQ(b[0x10010] + rest[0x10010], 127'000u);
  expect_accounted(*q, enqueued, dequeued);
  EXPECT_GT(q->stats().overlimits, 0u);
  const auto* c = info(0x10010);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->stats.packets, 127u);
  EXPECT_EQ(c->stats.qlen, 173u);
}

// The watchdog drives a root htb on a device: after the burst, only the Cpu timer
// reschedules the qdisc; over one second the device sends exactly what the schedule says.
TEST_F(HtbUnit, WatchdogDrivesTheDevice) {
  NetDevice* d = make("hb", "dummy");
  HtbOptions ho;
  tc(d, QdiscOp::Add, "htb", ho, TC_H_ROOT, 0x10000);
  HtbClassOptions o;
  o.rate_bytes_ps = o.ceil_bytes_ps = kMbit;
  o.buffer = o.cbuffer = tc::tc_calc_xmittime(kMbit, 1600);
  std::string err, w;
  Status st = d->qdisc()->class_change(*d, cpu, TC_H_ROOT, 0x10010, o, w);
  ASSERT_TRUE(st) << st.error().msg;
  for (uint32_t i = 0; i < 300; ++i) send(d, i, 1000, 0x10010);
  EXPECT_EQ(d->stats_sum().tx_packets, 2u);
  for (int step = 0; step < 100000; ++step) {  // 10 us steps to t0 + 1 s
    clock.advance(10'000);
    cpu.run_pending();
  }
  EXPECT_EQ(d->stats_sum().tx_packets, 127u);
  ASSERT_TRUE(ok(table.set_up(*d, false)));
  EXPECT_EQ(drops(DropReason::QDISC_DROP), 300u - 127u);
  EXPECT_EQ(outstanding(), 0u);
}

// burst and cburst: 10000 bytes of tokens (80 ms) send 11 packets at once (the 11th
// from 0 into debt); a 1600-byte cburst (12.8 ms) stops it after 2 (ceil bucket empty).
TEST_F(HtbUnit, BurstAndCburst) {
  make_htb();
  add_class(TC_H_ROOT, 0x10010, kMbit, kMbit, 10000, 10000);
  add_class(TC_H_ROOT, 0x10020, kMbit, kMbit, 10000, 1600);
  fill(0x10010, 20);
  fill(0x10020, 20);
  std::map<uint32_t, uint64_t> b;
  pump(b);
  EXPECT_EQ(b[0x10010], 11000u);
  EXPECT_EQ(b[0x10020], 2000u);
  expect_accounted(*q, enqueued, dequeued);
}

// Parent 2 Mbit, two leaves of 1 Mbit (ceil 2 Mbit). One idle: the other borrows up to
// its ceil, 2 Mbit: 250000 B in a second plus what the bursts allow (a few packets).
TEST_F(HtbUnit, IdleSiblingLendsUpToCeil) {
  make_htb();
  add_class(TC_H_ROOT, 0x10001, 2 * kMbit, 2 * kMbit);
  add_class(0x10001, 0x10010, kMbit, 2 * kMbit);
  add_class(0x10001, 0x10020, kMbit, 2 * kMbit);
  fill(0x10010, 900);
  auto b = run_for(1'000'000'000);
  EXPECT_GE(b[0x10010], 250'000u);
  EXPECT_LE(b[0x10010], 254'000u);
  const auto* c = info(0x10010);
  ASSERT_NE(c, nullptr);
  const auto* x = c->xstats.get<HtbClassXstats>();
  ASSERT_NE(x, nullptr);
  EXPECT_GT(x->borrows, 0u);  // sent on the parent's tokens
  EXPECT_GT(x->lends, 0u);    // and on its own
  expect_accounted(*q, enqueued, dequeued);
}

// Not beyond ceil: a leaf of 1 Mbit with ceil 1.5 Mbit under an idle 2 Mbit parent gets
// 1.5 Mbit (187500 B/s), though the parent could give more.
TEST_F(HtbUnit, BorrowingStopsAtCeil) {
  make_htb();
  add_class(TC_H_ROOT, 0x10001, 2 * kMbit, 2 * kMbit);
  add_class(0x10001, 0x10010, kMbit, 3 * kMbit / 2);
  add_class(0x10001, 0x10020, kMbit, 2 * kMbit);
  fill(0x10010, 900);
  auto b = run_for(1'000'000'000);
  EXPECT_GE(b[0x10010], 187'000u);
  EXPECT_LE(b[0x10010], 191'000u);
  expect_accounted(*q, enqueued, dequeued);
}

// Both busy under a parent whose rate is the sum: each gets its own rate.
TEST_F(HtbUnit, BothBusyEachGetsItsRate) {
  make_htb();
  add_class(TC_H_ROOT, 0x10001, 2 * kMbit, 2 * kMbit);
  add_class(0x10001, 0x10010, kMbit, 2 * kMbit);
  add_class(0x10001, 0x10020, kMbit, 2 * kMbit);
  fill(0x10010, 900);
  fill(0x10020, 900);
  auto b = run_for(1'000'000'000);
  EXPECT_NEAR(static_cast<double>(b[0x10010]), 125000.0, 3000.0);
  EXPECT_NEAR(static_cast<double>(b[0x10020]), 125000.0, 3000.0);
  EXPECT_LE(b[0x10010] + b[0x10020], 255'000u);
  expect_accounted(*q, enqueued, dequeued);
}

// The parent's excess (4 Mbit parent, two 1 Mbit leaves: 2 Mbit to share) goes by
// quantum at the parent's level: 3000 vs 1000 bytes -> 3:1, i.e. 312500 and 187500 B/s.
TEST_F(HtbUnit, ExcessSharedByQuantum) {
  make_htb();
  add_class(TC_H_ROOT, 0x10001, 4 * kMbit, 4 * kMbit);
  add_class(0x10001, 0x10010, kMbit, 4 * kMbit, 1600, 1600, 0, 3000);
  add_class(0x10001, 0x10020, kMbit, 4 * kMbit, 1600, 1600, 0, 1000);
  fill(0x10010, 900);
  fill(0x10020, 900);
  auto b = run_for(1'000'000'000);
  EXPECT_NEAR(static_cast<double>(b[0x10010]), 312500.0, 312500.0 * 0.03);
  EXPECT_NEAR(static_cast<double>(b[0x10020]), 187500.0, 187500.0 * 0.03);
  expect_accounted(*q, enqueued, dequeued);
}

// ... and by prio before quantum: the prio 0 leaf takes all of it (125000 + 250000).
TEST_F(HtbUnit, ExcessGoesToTheLowerPrio) {
  make_htb();
  add_class(TC_H_ROOT, 0x10001, 4 * kMbit, 4 * kMbit);
  add_class(0x10001, 0x10010, kMbit, 4 * kMbit, 1600, 1600, 0);
  add_class(0x10001, 0x10020, kMbit, 4 * kMbit, 1600, 1600, 1);
  fill(0x10010, 900);
  fill(0x10020, 900);
  auto b = run_for(1'000'000'000);
  EXPECT_NEAR(static_cast<double>(b[0x10010]), 375000.0, 375000.0 * 0.03);
  EXPECT_NEAR(static_cast<double>(b[0x10020]), 125000.0, 125000.0 * 0.03);
  expect_accounted(*q, enqueued, dequeued);
}

// Quantum from rate / r2q, clamped to 1000..200000 with the kernel's warning.
TEST_F(HtbUnit, QuantumFromRateClampedWithWarning) {
  make_htb();
  add_class(TC_H_ROOT, 0x10010, kMbit, kMbit);  // 12500
  EXPECT_TRUE(warn.empty());
  add_class(TC_H_ROOT, 0x10020, 8000, 8000);  // 800 -> 1000
  EXPECT_EQ(warn, "HTB: quantum of class 10020 is small. Consider r2q change.");
  warn.clear();
  add_class(TC_H_ROOT, 0x10030, 1000 * kMbit, 1000 * kMbit);  // 12.5 M -> 200000
  EXPECT_EQ(warn, "HTB: quantum of class 10030 is big. Consider r2q change.");
  warn.clear();
  add_class(TC_H_ROOT, 0x10040, 8000, 8000, 1600, 1600, 0, 500);  // given: no clamp
  EXPECT_TRUE(warn.empty());
  auto quantum = [&](uint32_t id) { return info(id)->opts.get<HtbClassOptions>()->quantum; };
  EXPECT_EQ(quantum(0x10010), 12500u);
  EXPECT_EQ(quantum(0x10020), 1000u);
  EXPECT_EQ(quantum(0x10030), 200000u);
  EXPECT_EQ(quantum(0x10040), 500u);
}

// Unclassified packets go to `default`; without one (or naming an inner class) to the
// direct queue, which is dequeued first, bounded by direct_qlen and counted.
TEST_F(HtbUnit, DefaultClassAndDirectQueue) {
  HtbOptions o;
  o.defcls = 0x20;
  o.direct_qlen = 2;
  o.direct_qlen_set = true;
  make_htb(o);
  add_class(TC_H_ROOT, 0x10001, kMbit, kMbit);
  add_class(0x10001, 0x10020, kMbit, kMbit);
  ASSERT_EQ(enq(*q, pkt(1, 1000, 0)), NET_XMIT_SUCCESS);  // -> default 1:20
  EXPECT_EQ(info(0x10020)->stats.qlen, 1u);
  ASSERT_EQ(enq(*q, pkt(2, 1000, 0x10000)), NET_XMIT_SUCCESS);  // X:0 -> direct
  ASSERT_EQ(enq(*q, pkt(3, 1000, 0x10001)), NET_XMIT_SUCCESS);  // inner: default
  ASSERT_EQ(enq(*q, pkt(4, 1000, 0x10000)), NET_XMIT_SUCCESS);  // direct
  EXPECT_EQ(enq(*q, pkt(5, 1000, 0x10000)), NET_XMIT_DROP);     // direct full
  EXPECT_EQ(q->dump().get<HtbOptions>()->direct_pkts, 2u);
  EXPECT_EQ(drain_marks(*q), (std::vector<uint32_t>{2, 4, 1, 3}));
  expect_accounted(*q, 5, 4);

  HtbOptions none;  // no default: everything unclassified is direct
  q->reset(cpu);
  q = create("htb", none);
  q->set_handle(0x10000);
  add_class(TC_H_ROOT, 0x10010, kMbit, kMbit);
  ASSERT_EQ(enq(*q, pkt(7, 1000, 0x50)), NET_XMIT_SUCCESS);
  EXPECT_EQ(q->dump().get<HtbOptions>()->direct_pkts, 1u);
  EXPECT_EQ(q->dump().get<HtbOptions>()->direct_qlen, 1000u);  // txqueuelen
}

// Deleting a leaf with packets drops them (counted at the qdisc and on the Cpu); a
// class with children cannot go; the last child's parent becomes a leaf again.
TEST_F(HtbUnit, ClassDeleteWithPackets) {
  make_htb();
  add_class(TC_H_ROOT, 0x10001, kMbit, kMbit);
  add_class(0x10001, 0x10010, 8000, 8000);
  fill(0x10010, 5);
  std::map<uint32_t, uint64_t> b;
  pump(b);
  Status st = q->class_delete(*dev_, cpu, 0x10001);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().msg.find("in use"), std::string::npos) << st.error().msg;
  const uint64_t left = q->qlen();
  EXPECT_GT(left, 0u);
  ASSERT_TRUE(q->class_delete(*dev_, cpu, 0x10010));
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->stats().drops, left);
  expect_accounted(*q, enqueued, dequeued);
  ASSERT_NE(info(0x10001), nullptr);
  EXPECT_EQ(info(0x10001)->opts.get<HtbClassOptions>()->level, 0u);  // a leaf again
  ASSERT_EQ(enq(*q, pkt(9, 100, 0x10001)), NET_XMIT_SUCCESS);
  EXPECT_EQ(info(0x10001)->stats.qlen, 1u);
  EXPECT_FALSE(q->class_delete(*dev_, cpu, 0x10099));
}

// Levels: a top class is level 7, its inner child 6, leaves 0; a leaf given a child
// becomes inner one below its parent. Unknown parents and foreign majors are refused.
TEST_F(HtbUnit, LevelsAndDepth) {
  make_htb();
  add_class(TC_H_ROOT, 0x10001, kMbit, kMbit);
  add_class(0x10001, 0x10002, kMbit, kMbit);
  add_class(0x10002, 0x10003, kMbit, kMbit);
  EXPECT_EQ(info(0x10001)->opts.get<HtbClassOptions>()->level, 7u);
  EXPECT_EQ(info(0x10002)->opts.get<HtbClassOptions>()->level, 6u);
  EXPECT_EQ(info(0x10003)->opts.get<HtbClassOptions>()->level, 0u);
  EXPECT_EQ(info(0x10003)->parent, 0x10002u);
  HtbClassOptions o;
  o.rate_bytes_ps = o.ceil_bytes_ps = kMbit;
  add_class(0x10003, 0x10004, kMbit, kMbit);  // 1:3 becomes inner at level 5
  EXPECT_EQ(info(0x10003)->opts.get<HtbClassOptions>()->level, 5u);
  // A parent that is no class makes a root class, as htb_change_class does.
  EXPECT_TRUE(q->class_change(*dev_, cpu, 0x10099, 0x10005, o, warn));
  EXPECT_EQ(info(0x10005)->parent, TC_H_ROOT);
  EXPECT_FALSE(q->class_change(*dev_, cpu, TC_H_ROOT, 0x20005, o, warn));  // another major
}

}  // namespace
}  // namespace pktpath::testing
