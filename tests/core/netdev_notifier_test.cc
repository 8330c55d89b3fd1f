// The netdevice notifier chain (src/core/netdev_notifier.h) and the events the device
// table sends on it: NETDEV_UP / NETDEV_DOWN / NETDEV_UNREGISTER, subscriptions that end
// with their owner, a chain that goes before its subscribers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/dev_table.h"
#include "core/net.h"
#include "core/netdev_notifier.h"
#include "core/packet_pool.h"
#include "status_assert.h"

namespace pktpath {
namespace {

struct Recorder {
  std::vector<std::string> seen;
  NetdevSubscription sub;
  static void on(void* self, NetdevEvent ev, NetDevice& dev) {
    static_cast<Recorder*>(self)->seen.push_back(std::string(netdev_event_name(ev)) + " " + dev.name());
  }
};

class NetdevNotifierTest : public ::testing::Test {
 protected:
  NetDevice* add(const std::string& name) {
    NetDevice::Config cfg;
    cfg.name = name;
    auto d_added = table.add(cfg, "dummy");
    EXPECT_TRUE(ok(d_added));
    NetDevice* d = d_added.value_or(nullptr);
    return d;
  }
  PacketPool pool{PacketPool::Options{.capacity = 64, .buf_size = 2048, .headroom = 128}};
  Cpu cpu{pool};
  Net net{cpu};
  DeviceTable& table = net.devices();
};

TEST_F(NetdevNotifierTest, TableSendsUpDownUnregisterInOrder) {
  Recorder r;
  r.sub.subscribe(table.notifier(), &Recorder::on, &r);
  NetDevice* foo = add("foo");
  ASSERT_TRUE(ok(table.set_up(*foo, true)));
  ASSERT_TRUE(ok(table.set_up(*foo, true)));  // no change: no event
  ASSERT_TRUE(ok(table.set_up(*foo, false)));
  ASSERT_TRUE(ok(table.set_up(*foo, true)));
  ASSERT_TRUE(ok(table.del("foo")));  // closes first
  EXPECT_EQ(r.seen, (std::vector<std::string>{"NETDEV_UP foo", "NETDEV_DOWN foo", "NETDEV_UP foo",
                                              "NETDEV_DOWN foo", "NETDEV_UNREGISTER foo"}));
}

TEST_F(NetdevNotifierTest, SubscriptionEndsWithItsOwner) {
  const size_t base = table.notifier().size();  // the Net's own subscribers (nftables)
  Recorder kept;
  kept.sub.subscribe(table.notifier(), &Recorder::on, &kept);
  {
    Recorder gone;
    gone.sub.subscribe(table.notifier(), &Recorder::on, &gone);
    EXPECT_EQ(table.notifier().size(), base + 2);
  }
  EXPECT_EQ(table.notifier().size(), base + 1);
  add("foo");
  ASSERT_TRUE(ok(table.del("foo")));
  EXPECT_EQ(kept.seen, std::vector<std::string>{"NETDEV_UNREGISTER foo"});
  kept.sub.reset();
  kept.sub.reset();  // idempotent
  EXPECT_FALSE(kept.sub.subscribed());
  EXPECT_EQ(table.notifier().size(), base);
}

// A device table destroyed before a subscriber: its devices are unregistered first, and
// the subscription is left detached (its destructor touches no freed chain).
TEST(NetdevNotifier, ChainGoesBeforeSubscriber) {
  Recorder r;
  {
    PacketPool pool{PacketPool::Options{.capacity = 64, .buf_size = 2048, .headroom = 128}};
    Cpu cpu{pool};
    Net net{cpu};
    DeviceTable& table = net.devices();
    NetDevice::Config cfg;
    cfg.name = "bar";
    std::string err;
    ASSERT_NE(table.add(cfg, "dummy").value_or(nullptr), nullptr) << err;
    r.sub.subscribe(table.notifier(), &Recorder::on, &r);
  }
  EXPECT_FALSE(r.sub.subscribed());
  EXPECT_EQ(r.seen, (std::vector<std::string>{"NETDEV_UNREGISTER bar", "NETDEV_UNREGISTER lo"}));
}

}  // namespace
}  // namespace pktpath
