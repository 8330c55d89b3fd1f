// tc qdisc add/replace/change/del (sch_api.cc: tc_qdisc_modify) and grafting.
#include <gtest/gtest.h>

#include <string>

#include "../core/xmit_fixture.h"

namespace pktpath::testing {
namespace {

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
  EXPECT_NE(st.error().msg.find("Failed to find specified qdisc"), std::string::npos);
}

// mirrors tbf_find and qdisc_graft: `parent MAJ:` (class 0) and any other minor name tbf's
// one class, and the child keeps the parent as written; prio has no class 0.
TEST_F(TcModify, ClassZeroIsTbfsOneClassAndNoOthers) {
  NetDevice* d = make("t5", "testdrv");
  TbfOptions t;
  t.rate_bytes_ps = 1'000'000'000;
  t.burst = 100000;
  t.limit = 100000;
  t.limit_set = true;
  tc(d, QdiscOp::Add, "tbf", t, TC_H_ROOT, 0x10000);
  tc(d, QdiscOp::Add, "pfifo", {}, 0x10000, 0xa0000);
  Qdisc* child = d->qdisc()->child(1);
  ASSERT_NE(child, nullptr);
  EXPECT_STREQ(child->kind(), "pfifo");
  EXPECT_EQ(child->handle(), 0xa0000u);
  EXPECT_EQ(child->parent(), 0x10000u);
  EXPECT_EQ(d->qdisc()->child(0), child);
  for (uint32_t i = 0; i < 4; ++i) send(d, i);
  drain();
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), 4u);
  EXPECT_EQ(child->stats().packets, 4u);
  tc(d, QdiscOp::Replace, "bfifo", {}, 0x10007, 0xb0000);
  EXPECT_STREQ(d->qdisc()->child(1)->kind(), "bfifo");
  EXPECT_EQ(d->qdisc()->child(1)->parent(), 0x10007u);

  NetDevice* p = make("t6", "testdrv");
  tc(p, QdiscOp::Add, "prio", {}, TC_H_ROOT, 0x20000);
  QdiscRequest r;
  r.op = QdiscOp::Add;
  r.kind = "pfifo";
  r.parent = 0x20000;
  auto st = tc_qdisc_modify(table, *p, r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().msg.find("Specified class not found"), std::string::npos) << st.error().msg;
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
