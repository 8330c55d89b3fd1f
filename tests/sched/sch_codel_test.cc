// codel and fq_codel (sch_codel.cc, sch_fq_codel.cc, codel.h) on a virtual clock: CoDel's
// drop times against the kernel's arithmetic worked out by hand, ECN marking, DRR order,
// the fat-flow batch drop, and accounting (enqueued = dequeued + dropped + queued).
#include "sched/sch_codel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "aqm_frames.h"
#include "core/clock.h"
#include "qdisc_unit.h"
#include "sched/codel.h"
#include "sched/sch_fq_codel.h"

namespace pktpath::testing {
namespace {

// CoDel units are 1024 ns; these tests step the clock in whole units.
constexpr uint64_t kUnit = 1024;
constexpr uint64_t kT0 = 1'000'000 * kUnit;  // codel time 1,000,000
constexpr uint64_t kStep = 1000 * kUnit;     // one dequeue per 1000 units (1.024 ms)

// With target 5 ms = 4882 units and interval 100 ms = 97656 units, 600 packets queued at
// kT0 and one dequeue at kT0 + k * kStep (k = 1, 2, ...):
//  - k = 5 is the first sojourn >= target (5000 >= 4882): first_above_time =
//    1,005,000 + 97,656 = 1,102,656; the first k past it is 103: the first drop.
//  - count 1, rec_inv_sqrt 0xffff: drop_next = 1,103,000 + 97656*0xffff0000/2^32
//    (97,654) = 1,200,654 -> k = 201.
//  - then count 2..7 with codel_Newton_step's values 32769, 36864, 31968, 28935, 26481
//    (Q0.16; 1/sqrt(count) approached from 0.5): drop_next 1,249,483 (k 250),
//    1,304,414 (k 305), 1,352,049 (k 353), 1,395,165 (k 396), 1,434,624 (k 435).
const std::vector<uint32_t> kDropSteps = {103, 201, 250, 305, 353, 396, 435};

class CodelTest : public QdiscUnit {
 protected:
  CodelTest() { cpu.set_clock(&clock); }
  ~CodelTest() override { cpu.set_clock(nullptr); }
  Packet* plain(uint32_t mark, uint32_t size = 1000, uint32_t hash = 0) {
    Packet* p = pkt(mark, size);
    std::memset(p->data(), 0, size);  // no IP header: not ECN capable
    p->hash = hash;
    return p;
  }
  // Dequeue once per step from k = 1 to `steps`; the steps at which the qdisc's drop
  // count rose.
  std::vector<uint32_t> run_steps(Qdisc& q, uint32_t steps, std::vector<Packet*>* out = nullptr) {
    std::vector<uint32_t> at;
    uint64_t drops = q.stats().drops;
    for (uint32_t k = 1; k <= steps; ++k) {
      clock.set(kT0 + k * kStep);
      Packet* p = q.dequeue(cpu);
      if (q.stats().drops != drops) at.push_back(k);
      drops = q.stats().drops;
      if (!p) continue;
      ++dequeued;
      if (out)
        out->push_back(p);
      else
        cpu.free(p);
    }
    return at;
  }
  // QdiscUnit's accounting, and every dequeued packet counted as sent.
  void expect_accounted(Qdisc& q, uint64_t enqueued) {
    QdiscUnit::expect_accounted(q, enqueued, dequeued);
    EXPECT_EQ(q.stats().packets, dequeued);
  }
  VirtualClock clock{kT0};
  uint64_t dequeued = 0;
};

TEST(CodelMath, NewtonStepAndControlLawMatchTheKernelArithmetic) {
  CodelVars v;
  v.rec_inv_sqrt = 0xffff;
  const uint16_t expect[] = {32769, 36864, 31968, 28935, 26481, 24588};
  for (uint32_t c = 2; c <= 7; ++c) {
    v.count = c;
    codel_newton_step(v);
    EXPECT_EQ(v.rec_inv_sqrt, expect[c - 2]) << "count " << c;
  }
  EXPECT_EQ(codel_control_law(1'103'000, 97656, 0xffff), 1'200'654u);
  // Many steps converge on 1/sqrt(count).
  for (uint32_t c = 8; c <= 400; ++c) {
    v.count = c;
    codel_newton_step(v);
  }
  EXPECT_NEAR(v.rec_inv_sqrt / 65536.0, 1 / std::sqrt(400.0), 0.001);
  EXPECT_EQ(codel_time_from_us(5000), 4882u);
  EXPECT_EQ(codel_time_to_us(4882), 4999u);       // tc shows 5ms
  EXPECT_TRUE(codel_time_after(1, 0xffffffffu));  // serial-number order across the wrap
}

TEST_F(CodelTest, CodelDropsAtTheControlLawTimes) {
  auto q = create("codel");
  for (uint32_t i = 0; i < 600; ++i) ASSERT_EQ(enq(*q, plain(i)), NET_XMIT_SUCCESS);
  EXPECT_EQ(run_steps(*q, 440), kDropSteps);
  const QdiscXstats xs = q->xstats(clock.now_ns());
  const auto* x = xs.get<CodelXstats>();
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->count, 7u);
  EXPECT_EQ(x->lastcount, 1u);
  EXPECT_TRUE(x->dropping);
  EXPECT_EQ(x->maxpacket, 1000u);
  // drop_next 1,471,262 units against now 1,440,000: 31,262 units = 32012 us.
  EXPECT_EQ(x->drop_next_us, 32012);
  expect_accounted(*q, 600);
  q->reset(cpu);
  EXPECT_EQ(q->qlen(), 0u);
}

TEST_F(CodelTest, CodelTailDropsOverLimit) {
  CodelOptions o;
  o.limit = 5;
  auto q = create("codel", o);
  for (uint32_t i = 0; i < 8; ++i) enq(*q, plain(i));
  EXPECT_EQ(q->qlen(), 5u);
  const QdiscXstats xs = q->xstats(0);
  EXPECT_EQ(xs.get<CodelXstats>()->drop_overlimit, 3u);
  EXPECT_EQ(run_steps(*q, 10).size(), 0u);  // short queue: no CoDel drops
  expect_accounted(*q, 8);
}

// One flow through fq_codel sees the same CoDel schedule (the backlog CoDel compares
// with the MTU is the qdisc's).
TEST_F(CodelTest, FqCodelOneFlowDropsAtTheSameTimes) {
  FqCodelOptions o;
  o.ecn = false;
  auto q = create("fq_codel", o);
  for (uint32_t i = 0; i < 600; ++i)
    ASSERT_EQ(enq(*q, plain(i, 1000, 0x12345678)), NET_XMIT_SUCCESS);
  EXPECT_EQ(run_steps(*q, 440), kDropSteps);
  expect_accounted(*q, 600);
  const QdiscXstats xs = q->xstats(0);
  const auto* x = xs.get<FqCodelXstats>();
  EXPECT_EQ(x->new_flow_count, 1u);
  EXPECT_EQ(x->maxpacket, 1000u);
  EXPECT_EQ(x->new_flows_len + x->old_flows_len, 1u);
  EXPECT_EQ(x->memory_usage, q->qlen() * (sizeof(Packet) + 2048));
}

// ECT(0) packets are marked CE at the drop times instead of dropped; the IPv4 header
// checksum stays right.
TEST_F(CodelTest, FqCodelMarksEctPacketsWithValidChecksum) {
  auto q = create("fq_codel");  // ecn is fq_codel's default
  for (uint32_t i = 0; i < 300; ++i)
    ASSERT_EQ(enq(*q, udp_frame(cpu, i, 1000, 9, /*ECT(0)*/ 0x02)), NET_XMIT_SUCCESS);
  std::vector<Packet*> out;
  EXPECT_TRUE(run_steps(*q, 260, &out).empty());
  ASSERT_EQ(out.size(), 260u);
  std::vector<uint32_t> marked;
  for (uint32_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(ipv4_csum(out[k]->data() + 14), 0) << "step " << k + 1;
    if (frame_tos(out[k]) == 0x03)
      marked.push_back(k + 1);
    else
      EXPECT_EQ(frame_tos(out[k]), 0x02);
    cpu.free(out[k]);
  }
  // The first three CoDel events, as in the drop schedule.
  EXPECT_EQ(marked, (std::vector<uint32_t>{103, 201, 250}));
  EXPECT_EQ(q->xstats(0).get<FqCodelXstats>()->ecn_mark, 3u);
  expect_accounted(*q, 300);
}

// ce_threshold: packets whose sojourn exceeds it leave marked CE (ce_mark), with or
// without CoDel's drops.
TEST_F(CodelTest, CodelCeThresholdMarks) {
  CodelOptions o;
  o.ce_threshold_us = 2000;  // 1953 units
  auto q = create("codel", o);
  for (uint32_t i = 0; i < 4; ++i) enq(*q, udp_frame(cpu, i, 1000, 9, 0x02));
  std::vector<Packet*> out;
  run_steps(*q, 4, &out);  // sojourns 1000, 2000, 3000, 4000 units
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(frame_tos(out[0]), 0x02);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(frame_tos(out[i]), 0x03) << i;
  for (Packet* p : out) cpu.free(p);
  EXPECT_EQ(q->xstats(0).get<CodelXstats>()->ce_mark, 3u);
  expect_accounted(*q, 4);
}

TEST_F(CodelTest, FqCodelDropsNotEctPacketsEvenWithEcn) {
  auto q = create("fq_codel");
  for (uint32_t i = 0; i < 300; ++i) enq(*q, udp_frame(cpu, i, 1000, 9, /*Not-ECT*/ 0));
  EXPECT_EQ(run_steps(*q, 260), (std::vector<uint32_t>{103, 201, 250}));
  EXPECT_EQ(q->xstats(0).get<FqCodelXstats>()->ecn_mark, 0u);
  expect_accounted(*q, 300);
}

TEST(InetEcn, SetCeOnIpv4AndIpv6) {
  PacketPool pool{PacketPool::Options{.capacity = 16, .buf_size = 2048, .headroom = 128}};
  Cpu cpu{pool};
  cpu.bind();
  for (uint8_t tos : {0x00, 0x01, 0x02, 0x03, 0xb9, 0xba}) {
    Packet* p = udp_frame(cpu, 0, 1, 2, tos, 100);
    const bool ect = (tos & 3) != 0;
    EXPECT_EQ(inet_ecn_set_ce(*p), ect) << int(tos);
    EXPECT_EQ(frame_tos(p), ect ? (tos | 3) : tos);
    EXPECT_EQ(ipv4_csum(p->data() + 14), 0) << int(tos);
    cpu.free(p);
  }
  Packet* p = cpu.alloc();
  uint8_t* f = p->put(60);
  std::memset(f, 0, 60);
  f[12] = 0x86;
  f[13] = 0xdd;
  f[14] = 0x60 | 0x0;  // version 6, traffic class 0x02 (ECT(0)) spans two nibbles
  f[15] = 0x20;
  EXPECT_TRUE(inet_ecn_set_ce(*p));
  EXPECT_EQ(f[15], 0x30);
  f[15] = 0x00;  // Not-ECT
  EXPECT_FALSE(inet_ecn_set_ce(*p));
  cpu.free(p);
}

// DRR: a flow that arrives while another is busy goes first once the busy one has used
// its quantum (new_flows before old_flows).
TEST_F(CodelTest, FqCodelNewFlowGoesBeforeTheHeavyFlow) {
  auto q = create("fq_codel");
  constexpr uint32_t kA = 0x10000000, kB = 0x90000000;  // flows 64 and 576
  for (uint32_t i = 0; i < 10; ++i) enq(*q, plain(100 + i, 1000, kA));
  std::vector<uint32_t> order;
  for (int i = 0; i < 2; ++i) {
    Packet* p = q->dequeue(cpu);
    order.push_back(p->mark);
    cpu.free(p);
  }
  enq(*q, plain(200, 1000, kB));
  enq(*q, plain(201, 1000, kB));
  dequeued = 2;
  const std::vector<uint32_t> rest = drain_marks(*q);
  dequeued += rest.size();
  order.insert(order.end(), rest.begin(), rest.end());
  const std::vector<uint32_t> expect = {100, 101, 200, 201, 102, 103, 104, 105, 106, 107, 108, 109};
  EXPECT_EQ(order, expect);
  EXPECT_EQ(q->xstats(0).get<FqCodelXstats>()->new_flow_count, 2u);
  expect_accounted(*q, 12);
}

// Over the limit, the flow with the largest backlog loses packets from its head until
// half its backlog is gone (drop_batch at most); counted as drop_overlimit.
TEST_F(CodelTest, FqCodelOverlimitDropsHalfTheFattestFlow) {
  FqCodelOptions o;
  o.limit = 100;
  auto q = create("fq_codel", o);
  constexpr uint32_t kA = 0x10000000, kB = 0x90000000;
  for (uint32_t i = 0; i < 90; ++i) enq(*q, plain(i, 1000, kA));
  for (uint32_t i = 0; i < 10; ++i) enq(*q, plain(1000 + i, 100, kB));
  // The 101st packet (flow A): A holds 91,000 bytes; 46 packets make half.
  EXPECT_EQ(enq(*q, plain(90, 1000, kA)), NET_XMIT_CN);
  EXPECT_EQ(q->qlen(), 55u);
  EXPECT_EQ(q->stats().drops, 46u);
  const QdiscXstats xs = q->xstats(0);
  EXPECT_EQ(xs.get<FqCodelXstats>()->drop_overlimit, 46u);
  // A flow B packet over the limit still costs A: SUCCESS for B.
  for (uint32_t i = 0; i < 45; ++i) enq(*q, plain(2000 + i, 100, kB));
  EXPECT_EQ(q->qlen(), 100u);
  EXPECT_EQ(enq(*q, plain(3000, 100, kB)), NET_XMIT_SUCCESS);
  EXPECT_EQ(q->stats().drops, 46u + 23u);  // A had 45 x 1000: 23 make half
  const std::vector<uint32_t> marks = drain_marks(*q);
  dequeued = marks.size();
  EXPECT_EQ(marks.front(), 69u);  // A's head after 46 + 23 head drops
  expect_accounted(*q, 90 + 10 + 1 + 45 + 1);
}

// Over memory_limit (packets charged their slot: header and 2048-byte buffer) the fat
// flow loses packets too, counted in drop_overmemory as well as drop_overlimit.
TEST_F(CodelTest, FqCodelMemoryLimit) {
  FqCodelOptions o;
  o.memory_limit = 10 * (sizeof(Packet) + 2048);
  o.drop_batch = 1;
  auto q = create("fq_codel", o);
  for (uint32_t i = 0; i < 12; ++i) enq(*q, plain(i, 1000, 0x10000000));
  EXPECT_EQ(q->qlen(), 10u);
  const QdiscXstats xs = q->xstats(0);
  EXPECT_EQ(xs.get<FqCodelXstats>()->drop_overmemory, 2u);
  EXPECT_EQ(xs.get<FqCodelXstats>()->drop_overlimit, 2u);
  dequeued = drain_marks(*q).size();
  expect_accounted(*q, 12);
}

TEST_F(CodelTest, FqCodelDropBatchBoundsTheDrop) {
  FqCodelOptions o;
  o.limit = 100;
  o.drop_batch = 8;
  auto q = create("fq_codel", o);
  for (uint32_t i = 0; i < 101; ++i) enq(*q, plain(i, 1000, 0x10000000));
  EXPECT_EQ(q->stats().drops, 8u);
  EXPECT_EQ(q->qlen(), 93u);
  dequeued = drain_marks(*q).size();
  expect_accounted(*q, 101);
}

// Under prio, the child's drops reach the parent's counters (qdisc_tree_reduce_backlog).
TEST_F(CodelTest, FqCodelUnderPrioKeepsTheParentsCountsRight) {
  VirtualClock& c = clock;
  (void)c;
  NetDevice* d = make("pr", "testdrv", 1, 1000, /*up=*/false);
  tc(d, QdiscOp::Add, "prio", {}, TC_H_ROOT, 0x10000);
  FqCodelOptions o;
  o.limit = 20;
  o.ecn = false;
  tc(d, QdiscOp::Add, "fq_codel", o, 0x10002);
  Qdisc* prio = d->qdisc();
  Qdisc* fq = prio->child(2);
  ASSERT_STREQ(fq->kind(), "fq_codel");
  PacketList to_free;
  uint64_t enqueued = 0;
  for (uint32_t i = 0; i < 30; ++i) {  // priority 0 maps to band 2 (:2)
    Packet* p = plain(i, 1000, 0x10000000);
    prio->enqueue(cpu, p, to_free);
    ++enqueued;
  }
  while (Packet* x = to_free.pop_front()) cpu.free_reason(x, DropReason::QDISC_DROP);
  EXPECT_EQ(prio->qlen(), fq->qlen());
  EXPECT_EQ(prio->stats().drops, fq->stats().drops);
  EXPECT_EQ(prio->stats().backlog, fq->stats().backlog);
  for (uint32_t k = 1; k <= 20; ++k) {
    clock.set(kT0 + k * 30 * kStep);  // long sojourns: CoDel drops on dequeue too
    if (Packet* p = prio->dequeue(cpu)) {
      ++dequeued;
      cpu.free(p);
    }
  }
  EXPECT_GT(fq->stats().drops, 10u);
  EXPECT_EQ(prio->qlen(), fq->qlen());
  EXPECT_EQ(prio->stats().drops, fq->stats().drops);
  expect_accounted(*prio, enqueued);
}

TEST_F(CodelTest, FqCodelOptionsDumpAndErrors) {
  auto q = create("fq_codel");
  const QdiscOptions d = q->dump();
  const auto* o = d.get<FqCodelOptions>();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(*o->limit, 10240u);
  EXPECT_EQ(*o->flows, 1024u);
  EXPECT_EQ(*o->quantum, 1514u);
  EXPECT_EQ(*o->target_us, 4999u);
  EXPECT_EQ(*o->interval_us, 99999u);
  EXPECT_EQ(*o->memory_limit, 32u << 20);
  EXPECT_EQ(*o->drop_batch, 64u);
  EXPECT_TRUE(*o->ecn);
  EXPECT_FALSE(o->ce_threshold_us);
  FqCodelOptions bad;
  bad.flows = 0;
  EXPECT_FALSE(qdisc_create(*dev_, "fq_codel", bad));
  FqCodelOptions again;
  again.flows = 16;
  Status st = q->change(*dev_, again);
  ASSERT_FALSE(st);  // flows are fixed once allocated
  EXPECT_NE(st.error().msg.find("flows"), std::string::npos);
}

}  // namespace
}  // namespace pktpath::testing
