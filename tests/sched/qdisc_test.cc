// Unit tests of each discipline: order, limits, drop counting; prio2band against
// Linux's table; tbf's rate on a virtual clock; tc add/replace/change/del semantics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../core/xmit_fixture.h"
#include "core/clock.h"
#include "sched/pfifo_fast.h"
#include "sched/sch_fifo.h"
#include "sched/sch_prio.h"
#include "sched/sch_tbf.h"

namespace pktpath::testing {
namespace {

class QdiscUnit : public XmitFixture {
 protected:
  std::unique_ptr<Qdisc> create(const char* kind, QdiscOptions o = {}, uint32_t txqlen = 1000,
                                uint16_t queues = 1) {
    if (!dev_) dev_ = make("u0", "testdrv", queues, txqlen, /*up=*/false);
    auto q = qdisc_create(*dev_, kind, o);
    EXPECT_TRUE(q) << q.error().msg;
    return q ? std::move(*q) : nullptr;
  }
  Packet* pkt(uint32_t mark, uint32_t size = 60, uint32_t prio = 0) {
    Packet* p = cpu.alloc();
    p->put(size);
    p->mark = mark;
    p->priority = prio;
    return p;
  }
  // Enqueue; frees what the qdisc rejected. Returns the rc.
  int enq(Qdisc& q, Packet* p) {
    PacketList to_free;
    int rc = q.enqueue(cpu, p, to_free);
    while (Packet* x = to_free.pop_front()) cpu.free_reason(x, DropReason::QDISC_DROP);
    return rc;
  }
  std::vector<uint32_t> drain_marks(Qdisc& q) {
    std::vector<uint32_t> v;
    while (Packet* p = q.dequeue(cpu)) {
      v.push_back(p->mark);
      cpu.free(p);
    }
    return v;
  }
  NetDevice* dev_ = nullptr;
};

TEST_F(QdiscUnit, PfifoOrderLimitDrops) {
  FifoOptions o;
  o.limit = 3;
  o.limit_set = true;
  auto q = create("pfifo", o);
  EXPECT_TRUE(q->flags() & TCQ_F_CAN_BYPASS);
  for (uint32_t i = 0; i < 5; ++i)
    EXPECT_EQ(enq(*q, pkt(i)), i < 3 ? NET_XMIT_SUCCESS : NET_XMIT_DROP);
  QdiscStats s = q->stats();
  EXPECT_EQ(s.qlen, 3u);
  EXPECT_EQ(s.backlog, 180u);
  EXPECT_EQ(s.drops, 2u);
  EXPECT_EQ(q->peek(cpu)->mark, 0u);
  EXPECT_EQ(drain_marks(*q), (std::vector<uint32_t>{0, 1, 2}));
  s = q->stats();
  EXPECT_EQ(s.qlen, 0u);
  EXPECT_EQ(s.backlog, 0u);
  EXPECT_EQ(s.packets, 3u);
  EXPECT_EQ(s.bytes, 180u);
}

TEST_F(QdiscUnit, PfifoZeroLimitCannotBypass) {
  FifoOptions o;
  o.limit = 0;
  o.limit_set = true;
  auto q = create("pfifo", o);
  EXPECT_FALSE(q->flags() & TCQ_F_CAN_BYPASS);
  EXPECT_EQ(enq(*q, pkt(1)), NET_XMIT_DROP);
}

TEST_F(QdiscUnit, PfifoDefaultLimitIsTxqueuelen) {
  auto q = create("pfifo", {}, /*txqlen=*/4);
  for (uint32_t i = 0; i < 6; ++i) enq(*q, pkt(i));
  EXPECT_EQ(q->stats().qlen, 4u);
  EXPECT_EQ(q->stats().drops, 2u);
  ASSERT_NE(q->dump().get<FifoOptions>(), nullptr);
  EXPECT_EQ(q->dump().get<FifoOptions>()->limit, 4u);
  drain_marks(*q);
}

TEST_F(QdiscUnit, BfifoLimitsBytes) {
  FifoOptions o;
  o.limit = 250;
  o.limit_set = true;
  auto q = create("bfifo", o);
  // bfifo bypasses only if one MTU-sized frame fits.
  EXPECT_FALSE(q->flags() & TCQ_F_CAN_BYPASS);
  EXPECT_EQ(enq(*q, pkt(0, 100)), NET_XMIT_SUCCESS);
  EXPECT_EQ(enq(*q, pkt(1, 100)), NET_XMIT_SUCCESS);
  EXPECT_EQ(enq(*q, pkt(2, 100)), NET_XMIT_DROP);
  EXPECT_EQ(enq(*q, pkt(3, 50)), NET_XMIT_SUCCESS);
  EXPECT_EQ(q->stats().backlog, 250u);
  EXPECT_EQ(drain_marks(*q), (std::vector<uint32_t>{0, 1, 3}));
  auto dflt = create("bfifo");
  EXPECT_EQ(dflt->dump().get<FifoOptions>()->limit, 1514000u);  // txqueuelen * (mtu + 14)
  EXPECT_TRUE(dflt->flags() & TCQ_F_CAN_BYPASS);
}

// Linux's prio2band (net/sched/sch_generic.c, 6.1), written out independently.
constexpr uint8_t kLinuxPrio2Band[16] = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

TEST_F(QdiscUnit, Prio2BandMatchesLinux) {
  for (unsigned i = 0; i < 16; ++i)
    EXPECT_EQ(kPrio2Band[i], kLinuxPrio2Band[i]) << "priority " << i;
  // And the qdisc uses it: dequeue order follows bands (0 first), FIFO inside a band.
  auto q = create("pfifo_fast");
  uint32_t mark = 0;
  for (uint32_t prio = 0; prio < 20; ++prio) enq(*q, pkt(mark++, 60, prio));  // 16..19 wrap (& 15)
  std::vector<uint32_t> got = drain_marks(*q);
  std::vector<uint32_t> want;
  for (unsigned band = 0; band < 3; ++band)
    for (uint32_t prio = 0; prio < 20; ++prio)
      if (kLinuxPrio2Band[prio & 15] == band) want.push_back(prio);
  EXPECT_EQ(got, want);
  const auto* po = q->dump().get<PrioOptions>();
  ASSERT_NE(po, nullptr);
  EXPECT_EQ(po->bands, 3u);
  for (unsigned i = 0; i < 16; ++i) EXPECT_EQ(po->priomap[i], kLinuxPrio2Band[i]);
}

TEST_F(QdiscUnit, PfifoFastRingsHoldTxqueuelenPerBand) {
  auto q = create("pfifo_fast", {}, /*txqlen=*/5);
  EXPECT_TRUE(q->flags() & TCQ_F_NOLOCK);
  EXPECT_TRUE(q->flags() & TCQ_F_CAN_BYPASS);
  for (uint32_t i = 0; i < 8; ++i) enq(*q, pkt(i, 60, 6));   // band 0
  for (uint32_t i = 8; i < 10; ++i) enq(*q, pkt(i, 60, 2));  // band 2
  QdiscStats s = q->stats();
  EXPECT_EQ(s.qlen, 7u);
  EXPECT_EQ(s.drops, 3u);
  EXPECT_EQ(drain_marks(*q), (std::vector<uint32_t>{0, 1, 2, 3, 4, 8, 9}));
  // The ring wraps cleanly many times.
  for (uint32_t round = 0; round < 100; ++round) {
    for (uint32_t i = 0; i < 5; ++i) ASSERT_EQ(enq(*q, pkt(i)), NET_XMIT_SUCCESS);
    ASSERT_EQ(drain_marks(*q), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  }
}

TEST_F(QdiscUnit, PfifoFastRefusesZeroTxqueuelen) {
  NetDevice* d = make("z0", "testdrv", 1, /*txqlen=*/0, false);
  auto q = qdisc_create(*d, "pfifo_fast", {});
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().msg.find("txqueuelen"), std::string::npos);
}

TEST_F(QdiscUnit, PrioBandsAndPriomap) {
  PrioOptions o;
  o.bands = 4;
  o.priomap = {3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0};
  auto q = create("prio", o);
  EXPECT_EQ(q->num_children(), 4u);
  for (uint32_t prio = 0; prio < 16; ++prio) enq(*q, pkt(prio, 60, prio));
  EXPECT_EQ(q->stats().qlen, 16u);
  EXPECT_EQ(drain_marks(*q),
            (std::vector<uint32_t>{12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}));
  // Child limits count as prio drops too.
  FifoOptions small;
  small.limit = 1;
  small.limit_set = true;
  std::string err;
  auto child = qdisc_create(*dev_, "pfifo", small);
  ASSERT_TRUE(child);
  auto old = q->graft(*dev_, 1, std::move(*child), err);
  ASSERT_NE(old, nullptr) << err;
  EXPECT_EQ(enq(*q, pkt(1, 60, 15)), NET_XMIT_SUCCESS);
  EXPECT_EQ(enq(*q, pkt(2, 60, 15)), NET_XMIT_DROP);
  EXPECT_EQ(q->stats().drops, 1u);
  drain_marks(*q);
}

TEST_F(QdiscUnit, PrioRejectsBadOptions) {
  dev_ = make("u0", "testdrv", 1, 1000, false);
  PrioOptions o;
  o.bands = 1;
  EXPECT_FALSE(qdisc_create(*dev_, "prio", o));
  o.bands = 2;  // default priomap uses band 2
  auto r = qdisc_create(*dev_, "prio", o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().msg.find("priomap"), std::string::npos);
  o.bands = 17;
  EXPECT_FALSE(qdisc_create(*dev_, "prio", o));
  FifoOptions f;
  EXPECT_FALSE(qdisc_create(*dev_, "pfifo_fast", f));
  EXPECT_FALSE(qdisc_create(*dev_, "nosuch", {}));
}

TEST_F(QdiscUnit, MqNeedsMultiqueueAndHasAChildPerQueue) {
  dev_ = make("u1", "testdrv", 1, 1000, false);
  EXPECT_FALSE(qdisc_create(*dev_, "mq", {}));
  NetDevice* m = make("u4", "testdrv", 4, 1000, false);
  auto created = qdisc_create(*m, "mq", {});
  ASSERT_TRUE(created) << created.error().msg;
  auto& q = *created;
  EXPECT_EQ(q->num_children(), 4u);
  for (uint32_t i = 1; i <= 4; ++i) EXPECT_STREQ(q->child(i)->kind(), "pfifo_fast");
}

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
  std::string err;
  ASSERT_TRUE(table.set_up(*d, false, err));
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
  const auto* t = (*q)->dump().get<TbfOptions>();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->rate_bytes_ps, 125000u);
  EXPECT_EQ(t->burst, 1500u);
  EXPECT_EQ(t->limit, 125000u / 20 + 1500);  // rate * latency + burst
  EXPECT_TRUE(t->limit_set);
}

using TcModify = XmitFixture;

TEST_F(TcModify, AddReplaceChangeDelete) {
  NetDevice* d = make("t0", "testdrv");
  EXPECT_TRUE(d->root_is_default());
  FifoOptions f;
  f.limit = 10;
  f.limit_set = true;
  tc(d, QdiscOp::Add, "pfifo", f, TC_H_ROOT, 0x10000);
  EXPECT_STREQ(d->qdisc()->kind(), "pfifo");
  EXPECT_EQ(d->qdisc()->handle(), 0x10000u);
  EXPECT_EQ(d->txq(0).qdisc, d->qdisc());
  QdiscRequest r;
  r.op = QdiscOp::Add;
  r.kind = "pfifo";
  EXPECT_FALSE(tc_qdisc_modify(table, *d, r));  // exclusive
  f.limit = 20;
  tc(d, QdiscOp::Change, "pfifo", f);
  EXPECT_EQ(d->qdisc()->dump().get<FifoOptions>()->limit, 20u);
  r.op = QdiscOp::Change;
  r.kind = "bfifo";
  EXPECT_FALSE(tc_qdisc_modify(table, *d, r));
  tc(d, QdiscOp::Replace, "prio");
  EXPECT_STREQ(d->qdisc()->kind(), "prio");
  EXPECT_EQ(d->qdisc()->handle(), 0x80010000u);  // automatic handle
  tc(d, QdiscOp::Add, "bfifo", {}, 0x80010002u);
  EXPECT_STREQ(d->qdisc()->child(2)->kind(), "bfifo");
  for (uint32_t i = 0; i < 5; ++i) send(d, i);
  drain();
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), 5u);
  r.op = QdiscOp::Del;
  r.kind = "";
  auto st = tc_qdisc_modify(table, *d, r);
  EXPECT_TRUE(st) << st.error().msg;
  EXPECT_STREQ(d->qdisc()->kind(), "pfifo_fast");
  EXPECT_TRUE(d->root_is_default());
  EXPECT_FALSE(tc_qdisc_modify(table, *d, r));  // cannot delete the default
  EXPECT_EQ(tc_handle_str(0x80010000u), "8001:");
  EXPECT_EQ(tc_handle_str(0x10002u), "1:2");
  EXPECT_EQ(tc_handle_str(0x3u), ":3");
}

TEST_F(TcModify, MqChildGraftRepointsTheTxQueue) {
  NetDevice* d = make("t4", "testdrv", 4);
  tc(d, QdiscOp::Replace, "mq", {}, TC_H_ROOT, 0x10000);
  tc(d, QdiscOp::Add, "pfifo", {}, 0x10003);
  EXPECT_STREQ(d->txq(2).qdisc->kind(), "pfifo");
  EXPECT_TRUE(d->txq(2).qdisc->flags() & TCQ_F_ONETXQUEUE);
  QdiscRequest r;
  r.op = QdiscOp::Add;
  r.kind = "mq";
  r.parent = 0x10001;
  EXPECT_FALSE(tc_qdisc_modify(table, *d, r));
  r.parent = 0x20001;
  auto st = tc_qdisc_modify(table, *d, r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().msg.find("not found"), std::string::npos);
}

TEST_F(TcModify, ReplaceWhileQueuedDropsOldPackets) {
  NetDevice* d = make("t0", "testdrv");
  NetDevice::tx_stop_queue(d->txq(0));
  for (uint32_t i = 0; i < 7; ++i) send(d, i);
  drain();
  tc(d, QdiscOp::Replace, "pfifo");
  EXPECT_EQ(drops(DropReason::QDISC_DROP), 7u);
  NetDevice::tx_wake_queue(cpu, d->txq(0));
  drain();
  table.reap();
  EXPECT_EQ(table.retired_count(), 0u);
  EXPECT_EQ(outstanding(), 0u);
}

}  // namespace
}  // namespace pktpath::testing
