// pfifo and bfifo (sch_fifo.cc): order, packet and byte limits, drop counting.
#include <gtest/gtest.h>

#include "qdisc_unit.h"

namespace pktpath::testing {
namespace {

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

}  // namespace
}  // namespace pktpath::testing
