// Driver tests: the link-kind table, dummy's counting and freeing, and the scriptable
// test driver's BUSY / stop-after behaviour through start_xmit directly.
#include <gtest/gtest.h>

#include "core/cpu.h"
#include "core/net.h"
#include "core/dev_table.h"
#include "core/link_kind.h"
#include "core/packet_pool.h"
#include "drivers/testdrv.h"
#include "status_assert.h"

namespace pktpath {
namespace {

class DriverTest : public ::testing::Test {
 protected:
  DriverTest() { cpu.bind(); }
  NetDevice* make(const char* kind) {
    NetDevice::Config cfg;
    cfg.name = std::string("d_") + kind;
    auto d_added = table.add(cfg, kind);
    EXPECT_TRUE(ok(d_added));
    NetDevice* d = d_added.value_or(nullptr);
    return d;
  }
  Packet* pkt(uint32_t mark, uint32_t len = 64) {
    Packet* p = cpu.alloc();
    p->put(len);
    p->mark = mark;
    return p;
  }
  PacketPool pool{PacketPool::Options{.capacity = 256, .buf_size = 512, .headroom = 64}};
  Cpu cpu{pool};
  Net net{cpu};
  DeviceTable& table = net.devices();
};

TEST_F(DriverTest, LinkKinds) {
  const LinkKind* d = link_kind_lookup("dummy");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->flags & IFF_NO_QUEUE);
  EXPECT_TRUE(d->flags & NETIF_F_LLTX);
  const LinkKind* t = link_kind_lookup("testdrv");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->flags & NETIF_F_LLTX);  // exercises the tx lock
  const LinkKind* v = link_kind_lookup("veth");
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->flags & IFF_NO_QUEUE);
  EXPECT_NE(v->dellink, nullptr);
  EXPECT_EQ(link_kind_lookup("nosuch"), nullptr);
}

TEST_F(DriverTest, DummyCountsAndFrees) {
  NetDevice* d = make("dummy");
  const uint32_t avail = pool.available() + cpu.cached();
  for (uint32_t i = 0; i < 10; ++i)
    EXPECT_EQ(d->ops().start_xmit(cpu, pkt(i, 100 + i), *d, d->txq(0)), NetdevTx::OK);
  DevStatsSum s = d->stats_sum();
  EXPECT_EQ(s.tx_packets, 10u);
  EXPECT_EQ(s.tx_bytes, 1045u);
  EXPECT_EQ(pool.available() + cpu.cached(), avail);
}

TEST_F(DriverTest, TestDrvBusyEveryNth) {
  NetDevice* d = make("testdrv");
  TestDrvState& s = testdrv_state(*d);
  s.busy_every = 3;
  int busy = 0;
  for (uint32_t i = 1; i <= 9; ++i) {
    Packet* p = pkt(i);
    if (d->ops().start_xmit(cpu, p, *d, d->txq(0)) == NetdevTx::BUSY) {
      ++busy;
      EXPECT_EQ(i % 3, 0u);
      cpu.free(p);  // BUSY leaves the packet with the caller
    }
  }
  EXPECT_EQ(busy, 3);
  EXPECT_EQ(s.transmitted.load(), 6u);
  EXPECT_EQ(d->stats_sum().tx_packets, 6u);
}

TEST_F(DriverTest, TestDrvStopsQueueAndWakeClears) {
  NetDevice* d = make("testdrv");
  TestDrvState& s = testdrv_state(*d);
  s.stop_after = 4;
  s.record = true;
  s.marks.reserve(8);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(d->txq(0).stopped());
    d->ops().start_xmit(cpu, pkt(i), *d, d->txq(0));
  }
  EXPECT_TRUE(d->txq(0).stopped());
  NetDevice::tx_wake_queue(cpu, d->txq(0));
  EXPECT_FALSE(d->txq(0).stopped());
  EXPECT_EQ(s.marks, (std::vector<uint32_t>{0, 1, 2, 3}));
  cpu.run_pending();
}

}  // namespace
}  // namespace pktpath
