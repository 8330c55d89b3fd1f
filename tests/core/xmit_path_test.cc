// dev_queue_xmit path tests: noqueue, bypass (locked and NOLOCK), requeue, stopped
// queues, link down, quota, bulk dequeue, the egress hook point and accounting.
#include <vector>

#include "xmit_fixture.h"
#include "core/net.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

using XmitPath = XmitFixture;

TEST_F(XmitPath, DummyDefaultsToNoqueueAndCountsEverything) {
  NetDevice* d = make("foo", "dummy");
  ASSERT_STREQ(d->qdisc()->kind(), "noqueue");
  for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(send(d, i, 100), NET_XMIT_SUCCESS);
  DevStatsSum s = d->stats_sum();
  EXPECT_EQ(s.tx_packets, 100u);
  EXPECT_EQ(s.tx_bytes, 100u * 100u);
  EXPECT_EQ(all_drops(), 0u);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(XmitPath, DefaultQdiscsFollowAttachDefaultQdiscs) {
  EXPECT_STREQ(make("t1", "testdrv", 1)->qdisc()->kind(), "pfifo_fast");
  NetDevice* mq = make("t4", "testdrv", 4);
  ASSERT_STREQ(mq->qdisc()->kind(), "mq");
  for (uint16_t i = 0; i < 4; ++i) {
    EXPECT_EQ(mq->txq(i).qdisc, mq->qdisc()->child(i + 1u));
    EXPECT_STREQ(mq->txq(i).qdisc->kind(), "pfifo_fast");
    EXPECT_TRUE(mq->txq(i).qdisc->flags() & TCQ_F_ONETXQUEUE);
  }
  EXPECT_STREQ(make("d4", "dummy", 4)->qdisc()->kind(), "noqueue");
}

TEST_F(XmitPath, ZeroTxqueuelenFallsBackToNoqueue) {
  NetDevice* d = make("z0", "testdrv", 1, /*txqlen=*/0);
  ASSERT_NE(d->qdisc(), nullptr);
  EXPECT_STREQ(d->qdisc()->kind(), "noqueue");
  EXPECT_EQ(send(d, 1), NET_XMIT_SUCCESS);
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), 1u);
}

TEST_F(XmitPath, DownDeviceDropsWithDevReady) {
  NetDevice* d = make("foo", "dummy", 1, 1000, /*up=*/false);
  EXPECT_EQ(send(d, 1), NET_XMIT_DROP);
  NetDevice* t = make("t0", "testdrv", 1, 1000, false);
  EXPECT_EQ(send(t, 1), NET_XMIT_DROP);
  EXPECT_EQ(drops(DropReason::DEV_READY), 2u);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(XmitPath, NoqueueRecursionLimit) {
  NetDevice* d = make("foo", "dummy");
  cpu.xmit_recursion = kXmitRecursionLimit;
  EXPECT_EQ(send(d, 1), NET_XMIT_DROP);
  cpu.xmit_recursion = kXmitRecursionLimit - 1;
  EXPECT_EQ(send(d, 2), NET_XMIT_SUCCESS);
  cpu.xmit_recursion = 0;
  EXPECT_EQ(drops(DropReason::XMIT_RECURSION), 1u);
  EXPECT_EQ(d->stats_sum().tx_dropped, 1u);
}

// Bypass is taken exactly when the qdisc allows it: CAN_BYPASS, empty, run_begin won.
class BypassTest : public XmitFixture, public ::testing::WithParamInterface<const char*> {};

TEST_P(BypassTest, TakenOnlyWhenEmptyAndAllowed) {
  NetDevice* d = make("t0", "testdrv");
  if (std::string(GetParam()) != "pfifo_fast") tc(d, QdiscOp::Add, GetParam());
  Qdisc* q = d->txq(0).qdisc;
  ASSERT_STREQ(q->kind(), GetParam());
  const bool nolock = q->flags() & TCQ_F_NOLOCK;
  EXPECT_EQ(nolock, std::string(GetParam()) == "pfifo_fast");
  TestDrvState& drv = testdrv_state(*d);
  drv.marks.reserve(64);
  drv.record = true;

  for (uint32_t i = 0; i < 10; ++i) send(d, i);
  EXPECT_EQ(q->stats().bypassed, 10u);
  EXPECT_EQ(q->stats().packets, 10u);
  EXPECT_EQ(q->qlen(), 0u);

  // A stopped queue: the first packet tries the bypass, is requeued; the rest queue.
  NetDevice::tx_stop_queue(d->txq(0));
  for (uint32_t i = 10; i < 20; ++i) send(d, i);
  drain();
  EXPECT_EQ(q->stats().bypassed, 11u);
  EXPECT_EQ(q->qlen(), 10u);
  EXPECT_EQ(q->stats().requeues, 1u);
  EXPECT_EQ(drv.transmitted.load(), 10u);

  // Wake drains them, in order, through the Cpu's tx work.
  NetDevice::tx_wake_queue(cpu, d->txq(0));
  EXPECT_TRUE(cpu.has_pending());
  drain();
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(drv.transmitted.load(), 20u);

  // Empty again: bypass again.
  send(d, 20);
  EXPECT_EQ(q->stats().bypassed, 12u);

  // Bypass switched off: every packet goes through enqueue + run.
  net.xmit_config().bypass.store(false);
  for (uint32_t i = 21; i < 31; ++i) send(d, i);
  drain();
  EXPECT_EQ(q->stats().bypassed, 12u);
  EXPECT_EQ(drv.transmitted.load(), 31u);
  ASSERT_EQ(drv.marks.size(), 31u);
  for (uint32_t i = 0; i < 31; ++i) EXPECT_EQ(drv.marks[i], i);
  EXPECT_EQ(q->stats().packets, 31u);
  EXPECT_EQ(outstanding(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Qdiscs, BypassTest, ::testing::Values("pfifo_fast", "pfifo", "bfifo"));

TEST_F(XmitPath, NoBypassForQdiscWithoutCanBypass) {
  NetDevice* d = make("t0", "testdrv");
  PrioOptions po;
  tc(d, QdiscOp::Add, "prio", po);
  for (uint32_t i = 0; i < 5; ++i) send(d, i);
  drain();
  EXPECT_EQ(d->qdisc()->stats().bypassed, 0u);
  EXPECT_EQ(d->qdisc()->stats().packets, 5u);
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), 5u);
}

class BusyRequeue : public XmitFixture, public ::testing::WithParamInterface<const char*> {};

TEST_P(BusyRequeue, BusyIsRequeuedAndSentInOrder) {
  NetDevice* d = make("t0", "testdrv");
  if (std::string(GetParam()) != "pfifo_fast") tc(d, QdiscOp::Add, GetParam());
  TestDrvState& drv = testdrv_state(*d);
  drv.busy_every = 3;
  drv.record = true;
  drv.marks.reserve(1000);
  for (uint32_t i = 0; i < 300; ++i) {
    send(d, i);
    if (i % 7 == 0) drain();
  }
  drain();
  Qdisc* q = d->txq(0).qdisc;
  EXPECT_EQ(drv.transmitted.load(), 300u);
  EXPECT_GT(drv.busy_returned.load(), 0u);
  EXPECT_EQ(q->stats().requeues, drv.busy_returned.load());
  EXPECT_EQ(q->qlen(), 0u);
  ASSERT_EQ(drv.marks.size(), 300u);
  for (uint32_t i = 0; i < 300; ++i) ASSERT_EQ(drv.marks[i], i) << "at " << i;
  EXPECT_EQ(all_drops(), 0u);
  EXPECT_EQ(outstanding(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Qdiscs, BusyRequeue, ::testing::Values("pfifo_fast", "pfifo", "prio"));

TEST_F(XmitPath, QuotaReschedulesOnTheCpu) {
  NetDevice* d = make("t0", "testdrv");
  NetDevice::tx_stop_queue(d->txq(0));
  for (uint32_t i = 0; i < 200; ++i) send(d, i);
  drain();
  TestDrvState& drv = testdrv_state(*d);
  EXPECT_EQ(drv.transmitted.load(), 0u);
  NetDevice::tx_wake_queue(cpu, d->txq(0));
  cpu.run_pending();
  // One run sends dev_tx_weight packets and puts the qdisc back on the work list.
  EXPECT_EQ(drv.transmitted.load(), static_cast<uint64_t>(kDevTxWeight));
  EXPECT_TRUE(cpu.has_pending());
  drain();
  EXPECT_EQ(drv.transmitted.load(), 200u);
}

TEST_F(XmitPath, LinkDownDropsQueuedPacketsWithReason) {
  for (const char* kind : {"pfifo_fast", "pfifo", "prio", "tbf"}) {
    SCOPED_TRACE(kind);
    NetDevice* d = make(std::string("t_") + kind, "testdrv");
    if (std::string(kind) == "tbf") {
      TbfOptions o;
      o.rate_bytes_ps = 1000;
      o.burst = 1500;
      o.limit = 100000;
      o.limit_set = true;
      tc(d, QdiscOp::Add, kind, o);
    } else if (std::string(kind) != "pfifo_fast") {
      tc(d, QdiscOp::Add, kind);
    }
    NetDevice::tx_stop_queue(d->txq(0));
    const uint64_t before = drops(DropReason::QDISC_DROP);
    for (uint32_t i = 0; i < 10; ++i) send(d, i);
    drain();
    EXPECT_EQ(d->qdisc()->qlen(), 10u);
    ASSERT_TRUE(ok(table.set_up(*d, false)));
    EXPECT_EQ(drops(DropReason::QDISC_DROP) - before, 10u);
    EXPECT_EQ(d->qdisc()->qlen(), 0u);
    EXPECT_EQ(send(d, 99), NET_XMIT_DROP);
    NetDevice::tx_wake_queue(cpu, d->txq(0));
    drain();
    // Up again: the same qdisc, empty, working.
    ASSERT_TRUE(ok(table.set_up(*d, true)));
    EXPECT_EQ(send(d, 100), NET_XMIT_SUCCESS);
    drain();
  }
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(XmitPath, BulkDequeueSetsXmitMore) {
  NetDevice* d = make("t0", "testdrv");
  d->txq(0).bulk_bytes = 100000;
  NetDevice::tx_stop_queue(d->txq(0));
  for (uint32_t i = 0; i < 10; ++i) send(d, i);
  drain();
  TestDrvState& drv = testdrv_state(*d);
  drv.record = true;
  drv.marks.reserve(16);
  NetDevice::tx_wake_queue(cpu, d->txq(0));
  drain();
  EXPECT_EQ(drv.transmitted.load(), 10u);
  // The requeued first packet goes alone; the other nine come as one chain of nine,
  // all but its last marked xmit_more.
  EXPECT_EQ(drv.xmit_more_seen.load(), 8u);
  for (uint32_t i = 0; i < 10; ++i) EXPECT_EQ(drv.marks[i], i);
}

TEST_F(XmitPath, StopInsideBulkRequeuesTheRest) {
  NetDevice* d = make("t0", "testdrv");
  d->txq(0).bulk_bytes = 100000;
  NetDevice::tx_stop_queue(d->txq(0));
  for (uint32_t i = 0; i < 20; ++i) send(d, i);
  drain();
  TestDrvState& drv = testdrv_state(*d);
  drv.stop_after = 5;
  drv.record = true;
  drv.marks.reserve(32);
  for (int round = 0; round < 10 && drv.transmitted.load() < 20; ++round) {
    NetDevice::tx_wake_queue(cpu, d->txq(0));
    drain();
  }
  EXPECT_EQ(drv.transmitted.load(), 20u);
  for (uint32_t i = 0; i < 20; ++i) EXPECT_EQ(drv.marks[i], i);
  EXPECT_EQ(d->qdisc()->qlen(), 0u);
}

TEST_F(XmitPath, QueuePickUsesHashThenCpu) {
  NetDevice* d = make("t4", "testdrv", 4);
  std::vector<uint64_t> per_queue(4);
  for (uint32_t i = 0; i < 64; ++i) {
    Packet* p = cpu.alloc();
    p->put(60);
    p->dev = d;
    p->hash = i * 0x9e3779b9u;
    TxQueue& q = netdev_core_pick_tx(cpu, *d, p);
    EXPECT_EQ(p->queue_mapping, q.index);
    EXPECT_EQ(q.index, static_cast<uint16_t>((static_cast<uint64_t>(p->hash) * 4) >> 32));
    ++per_queue[q.index];
    cpu.free(p);
  }
  for (uint64_t n : per_queue) EXPECT_GT(n, 0u);
  Packet* p = cpu.alloc();
  p->dev = d;
  EXPECT_EQ(netdev_core_pick_tx(cpu, *d, p).index, cpu.id() % 4);
  d->set_real_num_tx_queues(1);
  p->hash = 12345;
  EXPECT_EQ(netdev_core_pick_tx(cpu, *d, p).index, 0);
  cpu.free(p);
}

TEST_F(XmitPath, MqSpreadsOverChildren) {
  NetDevice* d = make("t4", "testdrv", 4);
  for (uint32_t i = 0; i < 400; ++i) send(d, i, 60, 0, i * 0x9e3779b9u);
  drain();
  QdiscStats total = d->qdisc()->stats();
  EXPECT_EQ(total.packets, 400u);
  for (uint32_t c = 1; c <= 4; ++c) EXPECT_GT(d->qdisc()->child(c)->stats().packets, 0u);
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), 400u);
}

int g_hook_calls = 0;
Packet* drop_odd_hook(Cpu& cpu, Packet* p, NetDevice&, void*) {
  ++g_hook_calls;
  if (p->mark & 1) {
    cpu.free_reason(p, DropReason::TC_EGRESS);
    return nullptr;
  }
  return p;
}
Packet* pick_queue_hook(Cpu&, Packet* p, NetDevice&, void*) {
  p->queue_mapping = 3;
  netdev_xmit_skip_txqueue(true);
  return p;
}

TEST_F(XmitPath, EgressHookPoint) {
  NetDevice* d = make("foo", "dummy");
  d->set_egress_hook(drop_odd_hook, nullptr);
  for (uint32_t i = 0; i < 10; ++i) send(d, i);
  EXPECT_EQ(g_hook_calls, 10);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 5u);
  EXPECT_EQ(d->stats_sum().tx_packets, 5u);
  d->set_egress_hook(nullptr, nullptr);
  send(d, 1);
  EXPECT_EQ(g_hook_calls, 10);

  NetDevice* m = make("t4", "testdrv", 4);
  m->set_egress_hook(pick_queue_hook, nullptr);
  send(m, 1, 60, 0, 1);
  drain();
  EXPECT_EQ(m->qdisc()->child(4)->stats().packets, 1u);
}

TEST_F(XmitPath, AccountingInvariantOverMixedEvents) {
  NetDevice* d = make("t0", "testdrv", 1, /*txqlen=*/16);
  TestDrvState& drv = testdrv_state(*d);
  drv.busy_every = 5;
  uint32_t mark = 0;
  for (int round = 0; round < 50; ++round) {
    if (round % 3 == 0) NetDevice::tx_stop_queue(d->txq(0));
    for (int i = 0; i < 40; ++i) send(d, mark++, 60 + round, static_cast<uint32_t>(i % 16));
    if (round % 3 == 1) NetDevice::tx_wake_queue(cpu, d->txq(0));
    if (round % 2) drain();
    const uint64_t queued = d->qdisc()->qlen();
    ASSERT_EQ(sent, drv.transmitted.load() + all_drops() + queued) << "round " << round;
  }
  NetDevice::tx_wake_queue(cpu, d->txq(0));
  drain();
  EXPECT_EQ(sent, drv.transmitted.load() + all_drops());
  EXPECT_GT(drops(DropReason::QDISC_DROP), 0u);  // the 16-packet rings overflowed
  EXPECT_EQ(d->qdisc()->qlen(), 0u);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(XmitPath, DeleteDeviceWithQueuedPackets) {
  NetDevice* d = make("t0", "testdrv");
  NetDevice::tx_stop_queue(d->txq(0));
  for (uint32_t i = 0; i < 5; ++i) send(d, i);
  drain();
  ASSERT_TRUE(ok(table.del("t0")));
  EXPECT_EQ(table.find("t0"), nullptr);
  EXPECT_EQ(drops(DropReason::QDISC_DROP), 5u);
  EXPECT_EQ(outstanding(), 0u);
}

}  // namespace
}  // namespace pktpath::testing
