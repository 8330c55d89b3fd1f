// pfifo_fast (sch_pfifo_fast.cc): prio2band against Linux's table, per-band rings.
#include <gtest/gtest.h>

#include <cstdint>

#include "qdisc_unit.h"
#include "sched/pfifo_fast.h"

namespace pktpath::testing {
namespace {

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
  const QdiscOptions dumped = q->dump();  // get<> points into it: keep it alive
  const auto* po = dumped.get<PrioOptions>();
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

}  // namespace
}  // namespace pktpath::testing
