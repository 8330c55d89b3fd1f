// core/net.h: per-Net state through pernet operations, dev.net(), and two Nets in one
// process that never see each other.
#include "core/net.h"
#include "status_assert.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bpf/parse.h"
#include "core/bpf_engine.h"
#include "core/dev_xmit.h"
#include "core/rcu.h"
#include "core/sysctl.h"
#include "netfilter/nft_net.h"
#include "sched/clsact.h"

namespace pktpath {
namespace {


// A subsystem of the test's own: registered statically, one state per Net.
struct CounterNet final : PernetState {
  explicit CounterNet(Net& n) : net(&n) { ++live; }
  ~CounterNet() override { --live; }
  void pre_exit(Net& n) override {
    if (n.name() == "blue") devices_at_pre_exit = n.devices().list().size();
  }
  Net* net;
  int value = 0;
  static inline int live = 0;
  static inline size_t devices_at_pre_exit = 0;
};
const PernetRegistrar counter_pernet{{"test-counter", [](Net& n) -> std::unique_ptr<PernetState> {
                                        return std::make_unique<CounterNet>(n);
                                      }}};

class NetTest : public ::testing::Test {
 protected:
  NetTest() { cpu.bind(); }
  NetDevice* add(Net& net, const std::string& name) {
    NetDevice::Config cfg;
    cfg.name = name;
    std::string err;
    auto d_added = net.devices().add(cfg, "dummy");
    EXPECT_TRUE(ok(d_added));
    NetDevice* d = d_added.value_or(nullptr);
    if (d) {
      EXPECT_TRUE(ok(net.devices().set_up(*d, true)));
    }
    return d;
  }
  static tc::BpfFilterSpec ret(uint32_t k) {
    tc::BpfFilterSpec s;
    std::string err;
    EXPECT_TRUE(bpf::parse_bytecode("1,6 0 0 " + std::to_string(k) + ",", &s.insns, &err)) << err;
    s.da = true;
    return s;
  }
  PacketPool pool{PacketPool::Options{.capacity = 8192}};
  Cpu cpu{pool};
};

TEST_F(NetTest, PernetStateIsMadePerNetAndGoesAfterTheDevices) {
  const int before = CounterNet::live;
  {
    Net a{cpu};
    Net b{cpu, "blue"};
    EXPECT_EQ(CounterNet::live, before + 2);
    a.generic<CounterNet>(counter_pernet.id).value = 7;
    EXPECT_EQ(b.generic<CounterNet>(counter_pernet.id).value, 0);
    EXPECT_EQ(a.generic<CounterNet>(counter_pernet.id).net, &a);
    EXPECT_EQ(b.name(), "blue");
    add(b, "x0");
  }
  EXPECT_EQ(CounterNet::live, before);
  EXPECT_EQ(CounterNet::devices_at_pre_exit, 2u);  // pre_exit ran while lo and x0 existed
}

TEST_F(NetTest, DevicesKnowTheirNet) {
  Net a{cpu}, b{cpu};
  NetDevice* da = add(a, "foo");
  NetDevice* db = add(b, "foo");  // the same name in another namespace
  ASSERT_TRUE(da && db);
  EXPECT_EQ(&da->net(), &a);
  EXPECT_EQ(&db->net(), &b);
  EXPECT_EQ(&a.devices().net(), &a);
  EXPECT_EQ(da->ifindex(), db->ifindex());  // each Net has its own ifindex space
}

TEST_F(NetTest, TcNftAndSysctlsArePerNet) {
  Net a{cpu}, b{cpu};
  NetDevice* da = add(a, "foo");
  NetDevice* db = add(b, "foo");
  ASSERT_TRUE(ok(tc::clsact_add(*da)));
  EXPECT_FALSE(tc::clsact_present(*db));
  ASSERT_TRUE(sysctl_find("bypass")->set(a, "off").has_value());
  EXPECT_TRUE(b.xmit_config().bypass.load());
  ASSERT_TRUE(sysctl_find("bpf_engine")->set(a, "switch"));
  ASSERT_TRUE(sysctl_find("bpf_engine")->set(b, "threaded"));
  ASSERT_TRUE(ok(tc::filter_add(*da, tc::Dir::Egress, ret(2), false)));
  bool seen = false;
  tc::filter_walk(*da, tc::Dir::Egress, [&](const tc::BpfFilter& f) {
    seen = true;
    EXPECT_EQ(f.engine(), bpf::Engine::Switch);
  });
  EXPECT_TRUE(seen);
  tc::tc_egress_hooks_enable(b, false);
  EXPECT_NE(da->egress_hook(), nullptr);  // b's switch leaves a's devices alone
  EXPECT_EQ(&nf::nft_ruleset(a) == &nf::nft_ruleset(b), false);
}

// Two Nets, the same device name, a dropping filter in one and a passing one in the
// other, traffic on both at once while the control thread replaces filters and flips
// sysctls in one of them. Run by `make test-tsan`.
TEST_F(NetTest, TwoNetsStress) {
  Net a{cpu}, b{cpu};
  NetDevice* da = add(a, "foo");
  NetDevice* db = add(b, "foo");
  for (NetDevice* d : {da, db}) ASSERT_TRUE(ok(tc::clsact_add(*d)));
  ASSERT_TRUE(ok(tc::filter_add(*da, tc::Dir::Egress, ret(2), false)));  // TC_ACT_SHOT
  ASSERT_TRUE(ok(tc::filter_add(*db, tc::Dir::Egress, ret(0), false)));  // TC_ACT_OK
  constexpr uint64_t kPerThread = 20000;
  std::atomic<bool> go{false};
  std::vector<std::thread> senders;
  for (NetDevice* d : {da, db})
    senders.emplace_back([&, d] {
      Cpu c{pool};
      c.bind();
      RcuReader reader;
      while (!go.load()) {
      }
      for (uint64_t i = 0; i < kPerThread; ++i) {
        Packet* p = c.alloc();
        if (!p) {
          c.run_pending();
          --i;
          continue;
        }
        p->put(60);
        p->dev = d;
        dev_queue_xmit(c, p);
        if ((i & 63) == 0) {
          rcu_quiescent();
          c.run_pending();
        }
      }
      c.run_pending();
    });
  go.store(true);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(ok(tc::filter_add(*da, tc::Dir::Egress, ret(2), true)));  // replace, same verdict
    ASSERT_TRUE(sysctl_find("bpf_engine")->set(a, i % 2 ? "switch" : "threaded"));
    ASSERT_TRUE(sysctl_find("net.core.dev_weight")->set(a, std::to_string(1 + i % 64)));
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(da->stats_sum().tx_packets, 0u);
  EXPECT_EQ(tc::clsact_stats(*da, tc::Dir::Egress).drops, kPerThread);
  EXPECT_EQ(db->stats_sum().tx_packets, kPerThread);
  EXPECT_EQ(tc::clsact_stats(*db, tc::Dir::Egress).drops, 0u);
  EXPECT_EQ(b.core().dev_weight.load(), 64u);
  EXPECT_EQ(net_bpf_engine(b), bpf::default_engine());
}

}  // namespace
}  // namespace pktpath
