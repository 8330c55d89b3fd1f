// pktgen over the hooks: netif_receive mode through tc ingress, and pktgen's threads as
// RCU readers while filters change (they report quiescent states in their loop; without
// that the writer's grace periods would never end).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tc_fixture.h"
#include "core/net.h"
#include "tools/pktgen.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

class PktgenHooks : public TcFixture {
 protected:
  PktgenConfig config(PktgenMode mode, uint64_t count, double duration = 0) {
    PktgenConfig c;
    c.dev = "foo";
    c.count = count;
    c.mode = mode;
    c.duration_s = duration;
    EXPECT_FALSE(pktgen_set(c, "dst_mac", "11:11:11:11:11:11"));
    EXPECT_FALSE(pktgen_set(c, "dst", "1.1.1.1"));
    EXPECT_FALSE(pktgen_set(c, "flag", "NO_TIMESTAMP"));
    return c;
  }
};

TEST_F(PktgenHooks, NetifReceiveModeDelivers) {
  NetDevice* d = make("foo", "dummy");
  Pktgen g(*d, pool, config(PktgenMode::kNetifReceive, 5000), PktgenRunOptions{.threads = 1});
  PktgenResult r = g.run();
  EXPECT_EQ(r.packets(), 5000u);
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_EQ(delivered(), 5000u);
  EXPECT_EQ(rx(d), 0u);  // no driver took them in: the kernel's pktgen counts no rx either
  EXPECT_EQ(tx(d), 0u);
}

// As pktgen_xmit: every netif_receive_skb call counts toward the count, a drop is also
// an error; the run ends by its count (the duration is only a safety net).
TEST_F(PktgenHooks, NetifReceiveDroppedByIngressFilterCountsErrors) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, tc::Dir::Ingress, spec(ret_prog(2), true));
  Pktgen g(*d, pool, config(PktgenMode::kNetifReceive, 1000, 30), PktgenRunOptions{.threads = 1});
  PktgenResult r = g.run();
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0].end, PktgenEnd::kCount);
  EXPECT_EQ(r.packets(), 1000u);
  EXPECT_EQ(r.errors(), 1000u);
  EXPECT_EQ(rx(d), 0u);
  EXPECT_EQ(tc::clsact_stats(*d, tc::Dir::Ingress).drops, r.errors());
}

TEST_F(PktgenHooks, QueueXmitDroppedByEgressFilterCountsErrors) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, tc::Dir::Egress, spec(ret_prog(2), true));
  Pktgen g(*d, pool, config(PktgenMode::kQueueXmit, 1000, 0.2), PktgenRunOptions{.threads = 1});
  PktgenResult r = g.run();
  EXPECT_EQ(r.packets(), 0u);
  EXPECT_GT(r.errors(), 0u);
  EXPECT_EQ(tc::clsact_stats(*d, tc::Dir::Egress).drops, r.errors());
}

class TcStressPktgen : public PktgenHooks {};

TEST_F(TcStressPktgen, PktgenThreadsWhileFiltersChange) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, tc::Dir::Egress, spec(ret_prog(0), true, 1));
  Pktgen g(*d, pool, config(PktgenMode::kQueueXmit, 0, 1.0), PktgenRunOptions{.threads = 2});
  PktgenResult r;
  std::thread t([&] { r = g.run(); });
  int changes = 0;
  for (; changes < 200; ++changes) {
    auto s = spec(ret_prog(changes % 2 ? 2 : 0), true, 1);
    s.handle = 1;
    ASSERT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, std::move(s), true)));
  }
  tc::tc_rcu_barrier(net);  // waits for a grace period: the pktgen threads must be quiescing
  t.join();
  ASSERT_EQ(r.threads.size(), 2u);
  // Accepted packets went out; refused ones were dropped by the filter.
  EXPECT_EQ(r.packets(), tx(d));
  EXPECT_EQ(r.errors(), tc::clsact_stats(*d, tc::Dir::Egress).drops);
  EXPECT_GT(r.packets() + r.errors(), 0u);
}

}  // namespace
}  // namespace pktpath::testing
