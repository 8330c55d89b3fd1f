// sfq and pfifo_head_drop (sch_sfq.cc, sch_fifo.cc): round-robin fairness, overflow from
// the longest slot (tail or head), per-flow depth, the perturbation's determinism, and
// accounting (enqueued = dequeued + dropped + queued, the Cpu's drops the qdisc's).
#include "sched/sch_sfq.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "aqm_frames.h"
#include "core/clock.h"
#include "core/flow_dissector.h"
#include "qdisc_unit.h"

namespace pktpath::testing {
namespace {

class SfqTest : public QdiscUnit {
 protected:
  // Flow A is UDP port 1000, flow B port 2000 (different sfq buckets: checked below).
  int a(Qdisc& q, uint32_t mark) { return enq(q, udp_frame(cpu, mark, 1000)); }
  int b(Qdisc& q, uint32_t mark) { return enq(q, udp_frame(cpu, mark, 2000)); }
  std::vector<uint32_t> drain(Qdisc& q) {
    std::vector<uint32_t> m = drain_marks(q);
    dequeued += m.size();
    return m;
  }
  void expect_accounted(Qdisc& q, uint64_t enqueued) {
    QdiscUnit::expect_accounted(q, enqueued, dequeued);
  }
  uint64_t dequeued = 0;
};

// A backlogged flow A and a later flow B share the link: B's five packets all leave
// within the first eleven dequeues (FIFO would put them at 21..25).
TEST_F(SfqTest, RoundRobinSharesBetweenFlows) {
  auto q = create("sfq");
  for (uint32_t i = 0; i < 20; ++i) a(*q, 100 + i);
  for (uint32_t i = 0; i < 5; ++i) b(*q, 200 + i);
  const std::vector<uint32_t> order = drain(*q);
  ASSERT_EQ(order.size(), 25u);
  uint32_t last_b = 0;
  for (uint32_t i = 0; i < order.size(); ++i)
    if (order[i] >= 200) last_b = i;
  EXPECT_LE(last_b, 10u);
  // Within a flow, order is kept.
  std::vector<uint32_t> as;
  for (uint32_t m : order)
    if (m < 200) as.push_back(m);
  EXPECT_TRUE(std::is_sorted(as.begin(), as.end()));
  // The first round: A's quantum (1514 bytes = 190 units of 8) covers two 1000-byte packets.
  EXPECT_EQ(std::vector<uint32_t>(order.begin(), order.begin() + 4),
            (std::vector<uint32_t>{100, 101, 200, 201}));
  expect_accounted(*q, 25);
}

// Over the limit, the longest slot loses its newest packet (headdrop: its oldest).
TEST_F(SfqTest, OverflowDropsFromTheLongestSlot) {
  for (bool headdrop : {false, true}) {
    SCOPED_TRACE(headdrop ? "headdrop" : "tail");
    SfqOptions o;
    o.limit = 10;
    o.headdrop = headdrop;
    auto q = create("sfq", o);
    dequeued = 0;
    const uint64_t before = drops(DropReason::QDISC_DROP);
    for (uint32_t i = 1; i <= 8; ++i) EXPECT_EQ(a(*q, 100 + i), NET_XMIT_SUCCESS);
    for (uint32_t i = 1; i <= 4; ++i) EXPECT_EQ(b(*q, 200 + i), NET_XMIT_SUCCESS);  // A pays
    EXPECT_EQ(q->qlen(), 10u);
    EXPECT_EQ(q->stats().drops, 2u);
    EXPECT_EQ(drops(DropReason::QDISC_DROP) - before, 2u);
    std::vector<uint32_t> order = drain(*q);
    std::sort(order.begin(), order.end());
    const std::vector<uint32_t> expect =
        headdrop ? std::vector<uint32_t>{103, 104, 105, 106, 107, 108, 201, 202, 203, 204}
                 : std::vector<uint32_t>{101, 102, 103, 104, 105, 106, 201, 202, 203, 204};
    EXPECT_EQ(order, expect);
    EXPECT_EQ(12u, dequeued + q->stats().drops + q->qlen());
  }
}

// Every slot holding one packet: the overflow drops the next slot in the ring, which
// leaves the ring (sfq_drop's d == 1 case).
TEST_F(SfqTest, OverflowWithAllSlotsAtDepthOne) {
  SfqOptions o;
  o.limit = 3;
  auto q = create("sfq", o);
  for (uint16_t i = 0; i < 4; ++i) enq(*q, udp_frame(cpu, i, static_cast<uint16_t>(3000 + i)));
  EXPECT_EQ(q->qlen(), 3u);
  EXPECT_EQ(q->stats().drops, 1u);
  const std::vector<uint32_t> left = drain(*q);
  EXPECT_EQ(left.size(), 3u);
  expect_accounted(*q, 4);
}

// peek holds the packet dequeue then returns; it stays counted as queued meanwhile.
TEST_F(SfqTest, PeekThenDequeueReturnsThePeekedPacket) {
  auto q = create("sfq");
  a(*q, 1);
  b(*q, 2);
  a(*q, 3);
  Packet* p = q->peek(cpu);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(q->peek(cpu), p);
  EXPECT_EQ(q->qlen(), 3u);
  EXPECT_EQ(q->dequeue(cpu), p);
  cpu.free(p);
  ++dequeued;
  EXPECT_EQ(q->qlen(), 2u);
  EXPECT_EQ(drain(*q).size(), 2u);
  expect_accounted(*q, 3);
}

// A slot at `depth` packets refuses more (tail drop), or with headdrop swaps its oldest
// for the newcomer (NET_XMIT_CN).
TEST_F(SfqTest, DepthLimitsOneFlow) {
  SfqOptions o;
  o.depth = 3;
  auto q = create("sfq", o);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(a(*q, i), NET_XMIT_SUCCESS);
  EXPECT_EQ(a(*q, 3), NET_XMIT_DROP);
  EXPECT_EQ(drain(*q), (std::vector<uint32_t>{0, 1, 2}));
  expect_accounted(*q, 4);

  o.headdrop = true;
  auto h = create("sfq", o);
  for (uint32_t i = 0; i < 3; ++i) a(*h, i);
  EXPECT_EQ(a(*h, 3), NET_XMIT_CN);
  EXPECT_EQ(h->qlen(), 3u);
  EXPECT_EQ(h->stats().backlog, 3000u);
  EXPECT_EQ(drain_marks(*h), (std::vector<uint32_t>{1, 2, 3}));
}

// The perturbation comes from a fixed seed: two qdiscs order the same traffic alike, and
// a rehash after `perturb` seconds keeps every packet and each flow's order.
TEST_F(SfqTest, PerturbationIsDeterministicAndRehashKeepsPackets) {
  VirtualClock clock(1'000'000'000);
  cpu.set_clock(&clock);
  SfqOptions o;
  o.perturb_period = 1;
  o.divisor = 16;
  auto run = [&](Qdisc& q) {
    for (uint32_t i = 0; i < 40; ++i)
      enq(q, udp_frame(cpu, i, static_cast<uint16_t>(1000 + i % 8)));
    clock.advance(2'000'000'000);  // past the period: the next enqueue rehashes
    for (uint32_t i = 40; i < 48; ++i)
      enq(q, udp_frame(cpu, i, static_cast<uint16_t>(1000 + i % 8)));
    return drain_marks(q);
  };
  auto q1 = create("sfq", o);
  auto q2 = create("sfq", o);
  const std::vector<uint32_t> o1 = run(*q1), o2 = run(*q2);
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(o1.size(), 48u);
  for (uint32_t f = 0; f < 8; ++f) {
    std::vector<uint32_t> flow;
    for (uint32_t m : o1)
      if (m % 8 == f) flow.push_back(m);
    EXPECT_TRUE(std::is_sorted(flow.begin(), flow.end())) << "flow " << f;
  }
  const QdiscOptions d = q1->dump();
  EXPECT_EQ(d.get<SfqOptions>()->perturb_period, 1);
  cpu.set_clock(nullptr);
}

TEST_F(SfqTest, OptionsDumpAndErrors) {
  auto q = create("sfq");
  const QdiscOptions d = q->dump();
  const auto* o = d.get<SfqOptions>();
  EXPECT_EQ(o->limit, 127u);
  EXPECT_EQ(o->quantum, 1514u);
  EXPECT_EQ(o->divisor, 1024u);
  EXPECT_EQ(o->flows, 128u);
  EXPECT_EQ(o->depth, 127u);
  SfqOptions bad;
  bad.divisor = 1000;
  EXPECT_FALSE(qdisc_create(*dev_, "sfq", bad));
  Status st = q->change(*dev_, SfqOptions{});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().msg.find("not supported"), std::string::npos);
}

// skb_get_hash: computed once from the headers and kept; both directions of a flow hash
// alike; ports and the perturbation key change it.
TEST_F(SfqTest, FlowHashIsSymmetricAndKeyed) {
  Packet* ab = udp_frame(cpu, 0, 1000, 2000);
  Packet* ba = udp_frame(cpu, 0, 2000, 1000);
  uint8_t* ip = ba->data() + 14;  // swap the addresses of the second
  std::swap_ranges(ip + 12, ip + 16, ip + 16);
  Packet* other = udp_frame(cpu, 0, 1001, 2000);
  const uint32_t h = skb_get_hash(*ab);
  EXPECT_NE(h, 0u);
  EXPECT_EQ(ab->hash, h);
  EXPECT_EQ(skb_get_hash(*ba), h);
  EXPECT_NE(skb_get_hash(*other), h);
  EXPECT_NE(skb_get_hash_perturb(*ab, 1), skb_get_hash_perturb(*ab, 2));
  ab->hash = 77;  // a hash already set (a driver's, or skbedit's) is kept
  EXPECT_EQ(skb_get_hash(*ab), 77u);
  for (Packet* p : {ab, ba, other}) cpu.free(p);
}

// pfifo_head_drop keeps the newest `limit` packets; each overflow drops the head.
TEST_F(SfqTest, PfifoHeadDropKeepsTheNewest) {
  FifoOptions o;
  o.limit = 3;
  o.limit_set = true;
  auto q = create("pfifo_head_drop", o);
  EXPECT_EQ(enq(*q, pkt(1)), NET_XMIT_SUCCESS);
  EXPECT_EQ(enq(*q, pkt(2)), NET_XMIT_SUCCESS);
  EXPECT_EQ(enq(*q, pkt(3)), NET_XMIT_SUCCESS);
  EXPECT_EQ(enq(*q, pkt(4)), NET_XMIT_CN);
  EXPECT_EQ(enq(*q, pkt(5, 100)), NET_XMIT_CN);
  EXPECT_EQ(q->qlen(), 3u);
  EXPECT_EQ(q->stats().backlog, 60u + 60u + 100u);
  EXPECT_EQ(q->stats().drops, 2u);
  EXPECT_EQ(drain(*q), (std::vector<uint32_t>{3, 4, 5}));
  expect_accounted(*q, 5);
}

// Under prio the parent's qlen and backlog follow the head drops.
TEST_F(SfqTest, PfifoHeadDropUnderPrio) {
  NetDevice* d = make("pr", "testdrv", 1, 1000, /*up=*/false);
  tc(d, QdiscOp::Add, "prio", {}, TC_H_ROOT, 0x10000);
  FifoOptions o;
  o.limit = 2;
  o.limit_set = true;
  tc(d, QdiscOp::Add, "pfifo_head_drop", o, 0x10002);
  Qdisc* prio = d->qdisc();
  for (uint32_t i = 0; i < 5; ++i) enq(*prio, pkt(i, 60 + 10 * i));
  Qdisc* c = prio->child(2);
  EXPECT_EQ(prio->qlen(), 2u);
  EXPECT_EQ(prio->stats().backlog, c->stats().backlog);
  EXPECT_EQ(prio->stats().drops, 3u);
  EXPECT_EQ(drain(*prio), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(prio->qlen(), 0u);
  EXPECT_EQ(prio->stats().backlog, 0u);
  expect_accounted(*prio, 5);
}

}  // namespace
}  // namespace pktpath::testing
