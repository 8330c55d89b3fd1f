// mq (sch_mq.cc): multiqueue devices only, one child per tx queue.
#include <gtest/gtest.h>

#include "qdisc_unit.h"

namespace pktpath::testing {
namespace {

TEST_F(QdiscUnit, MqNeedsMultiqueueAndHasAChildPerQueue) {
  dev_ = make("u1", "testdrv", 1, 1000, false);
  std::string err;
  EXPECT_EQ(qdisc_create(*dev_, "mq", {}, err), nullptr);
  NetDevice* m = make("u4", "testdrv", 4, 1000, false);
  auto q = qdisc_create(*m, "mq", {}, err);
  ASSERT_NE(q, nullptr) << err;
  EXPECT_EQ(q->num_children(), 4u);
  for (uint32_t i = 1; i <= 4; ++i) EXPECT_STREQ(q->child(i)->kind(), "pfifo_fast");
}

}  // namespace
}  // namespace pktpath::testing
