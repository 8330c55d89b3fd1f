// mq (sch_mq.cc): multiqueue devices only, one child per tx queue.
#include <gtest/gtest.h>

#include "qdisc_unit.h"

namespace pktpath::testing {
namespace {

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

}  // namespace
}  // namespace pktpath::testing
