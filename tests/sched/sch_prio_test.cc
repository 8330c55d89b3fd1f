// prio (sch_prio.cc): bands, priomap, option checks.
#include <gtest/gtest.h>

#include <cstdint>

#include "qdisc_unit.h"

namespace pktpath::testing {
namespace {

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
  auto child = qdisc_create(*dev_, "pfifo", small);
  ASSERT_TRUE(child);
  auto old = q->graft(*dev_, 1, std::move(*child));
  ASSERT_TRUE(old) << old.error().msg;
  ASSERT_NE(*old, nullptr);
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

}  // namespace
}  // namespace pktpath::testing
