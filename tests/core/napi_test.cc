// NAPI and net_rx_action: weights, the budget and its time limit, re-polling, MISSED,
// the backlog instance, netif_rx and RPS steering.
#include <gtest/gtest.h>

#include <set>

#include "core/cpu.h"
#include "core/dev_rx.h"
#include "core/host_sink.h"
#include "core/napi.h"
#include "core/net.h"
#include "core/packet_pool.h"
#include "status_assert.h"

namespace pktpath {
namespace {

// A scripted driver queue: `pending` packets arrive; each poll takes up to its budget
// and completes when it took less.
struct ScriptedQueue {
  Napi napi;
  int pending = 0;
  int handled = 0;
  std::vector<int> polls;  // the budget of each poll
  static int poll(Napi& n, Cpu&, int budget) {
    auto* q = static_cast<ScriptedQueue*>(n.ctx);
    q->polls.push_back(budget);
    const int work = std::min(budget, q->pending);
    q->pending -= work;
    q->handled += work;
    if (work < budget) napi_complete_done(n, work);
    return work;
  }
  ScriptedQueue(Cpu& cpu, int packets, int weight = 64) : pending(packets) {
    napi.poll = poll;
    napi.ctx = this;
    napi.cpu = &cpu;
    napi.weight = weight;
  }
};

class NapiTest : public ::testing::Test {
 protected:
  NapiTest() { cpu.bind(); }
  PacketPool pool{PacketPool::Options{.capacity = 4096}};
  Cpu cpu{pool, Cpu::Options{}};
};

TEST_F(NapiTest, ScheduleOnceThenCompleteWhenUnderWeight) {
  ScriptedQueue q(cpu, 10);
  napi_schedule(q.napi);
  napi_schedule(q.napi);  // already scheduled: not listed twice
  EXPECT_EQ(cpu.napi_polling(), 1u);
  EXPECT_TRUE(cpu.has_pending());
  cpu.net_rx_action();
  EXPECT_EQ(q.handled, 10);
  ASSERT_EQ(q.polls.size(), 1u);
  EXPECT_EQ(q.polls[0], 64);
  // The second schedule happened while it was scheduled: MISSED keeps it for one more poll.
  EXPECT_TRUE(q.napi.scheduled());
  EXPECT_EQ(cpu.napi_polling(), 1u);
  cpu.net_rx_action();
  EXPECT_EQ(q.polls.size(), 2u);
  EXPECT_FALSE(q.napi.scheduled());
  EXPECT_FALSE(cpu.has_pending());
}

TEST_F(NapiTest, FullWeightIsPolledAgainInTheNextRound) {
  ScriptedQueue a(cpu, 200), b(cpu, 200);
  napi_schedule(a.napi);
  napi_schedule(b.napi);
  cpu.net_rx_action();  // one poll each per round: the kernel re-raises for the rest
  EXPECT_EQ(a.handled, 64);
  EXPECT_EQ(b.handled, 64);
  EXPECT_EQ(cpu.stats().time_squeeze.get(), 0u);
  EXPECT_EQ(cpu.napi_polling(), 2u);
  while (cpu.has_pending()) cpu.net_rx_action();
  EXPECT_EQ(a.handled, 200);
  EXPECT_EQ(b.handled, 200);
  EXPECT_EQ(a.polls.size(), 4u);  // 64 + 64 + 64 + 8
  EXPECT_FALSE(a.napi.scheduled());
}

TEST_F(NapiTest, BudgetStopsTheRoundAndCountsASqueeze) {
  // Six busy instances, budget 300: five polls of 64 take it below zero.
  std::vector<std::unique_ptr<ScriptedQueue>> qs;
  for (int i = 0; i < 6; ++i) {
    qs.push_back(std::make_unique<ScriptedQueue>(cpu, 1000));
    napi_schedule(qs.back()->napi);
  }
  cpu.net_rx_action();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(qs[i]->handled, 64) << i;
  EXPECT_EQ(qs[5]->handled, 0);
  EXPECT_EQ(cpu.stats().time_squeeze.get(), 1u);
  // The one left out goes first next time.
  cpu.net_rx_action();
  EXPECT_EQ(qs[5]->handled, 64);
  EXPECT_EQ(qs[5]->polls.size(), 1u);
}

TEST(NapiTimeTest, TimeLimitSqueezes) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu cpu(pool, Cpu::Options{.netdev_budget_usecs = 0});
  cpu.bind();
  ScriptedQueue a(cpu, 1000), b(cpu, 1000);
  napi_schedule(a.napi);
  napi_schedule(b.napi);
  cpu.net_rx_action();
  EXPECT_EQ(a.handled, 64);
  EXPECT_EQ(b.handled, 0);
  EXPECT_EQ(cpu.stats().time_squeeze.get(), 1u);
}

TEST_F(NapiTest, ScheduleFromAnotherThreadGoesToTheRemoteList) {
  ScriptedQueue q(cpu, 5);
  std::thread t([&] { napi_schedule(q.napi); });
  t.join();
  EXPECT_TRUE(cpu.remote_pending());
  EXPECT_TRUE(cpu.has_pending());
  cpu.run_pending();
  EXPECT_EQ(q.handled, 5);
  EXPECT_FALSE(cpu.has_pending());
}

// An Ethernet/IPv4/UDP frame from 10.0.0.1:sport to 10.0.0.2:80.
Packet* udp_frame(Cpu& cpu, NetDevice& dev, uint16_t sport) {
  Packet* p = cpu.alloc();
  uint8_t* d = p->put(60);
  std::memset(d, 0, 60);
  d[12] = 0x08;
  const uint8_t ip[20] = {0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
  std::memcpy(d + 14, ip, 20);
  d[34] = static_cast<uint8_t>(sport >> 8);
  d[35] = static_cast<uint8_t>(sport);
  d[37] = 80;
  p->dev = &dev;
  return p;
}

class NetifRxTest : public NapiTest {
 protected:
  NetifRxTest() {
    NetDevice::Config c;
    c.name = "rx0";
    dev = net.devices().add(c, "dummy").value_or(nullptr);
    EXPECT_TRUE(ok(net.devices().set_up(*dev, true)));
  }
  Net net{cpu};
  NetDevice* dev = nullptr;
};

TEST_F(NetifRxTest, BacklogAdmitsUpToMaxPlusOneThenDrops) {
  // enqueue_to_backlog admits while qlen <= netdev_max_backlog.
  Cpu small(pool, Cpu::Options{.max_backlog = 3});
  int ok = 0;
  for (int i = 0; i < 6; ++i) ok += small.backlog_enqueue(udp_frame(cpu, *dev, 1)) ? 1 : 0;
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(small.backlog_dropped(), 2u);
  EXPECT_EQ(small.backlog_queued(), 4u);
}

TEST_F(NetifRxTest, NetifRxOnADownDeviceOrFullBacklogCountsTheDrop) {
  const auto before = drop_totals();
  // Fill the local backlog: 1001 admitted, the rest dropped as CPU_BACKLOG.
  int dropped = 0;
  for (int i = 0; i < 1010; ++i) dropped += netif_rx(cpu, udp_frame(cpu, *dev, 1)) == NET_RX_DROP;
  EXPECT_EQ(dropped, 9);
  EXPECT_EQ(drop_totals()[static_cast<unsigned>(DropReason::CPU_BACKLOG)] -
                before[static_cast<unsigned>(DropReason::CPU_BACKLOG)],
            9u);
  while (cpu.has_pending()) cpu.run_pending();
  EXPECT_EQ(host_stats(net).delivered, 1001u);
  EXPECT_EQ(dev->stats_sum().rx_dropped, 9u);
  EXPECT_EQ(cpu.stats().processed.get(), 1001u);
  ASSERT_TRUE(ok(net.devices().set_up(*dev, false)));
  EXPECT_EQ(netif_rx(cpu, udp_frame(cpu, *dev, 1)), NET_RX_DROP);
}

// Deleting a device drops its packets still waiting in the backlog (flush_backlog from
// the unregister path) and leaves the other devices' packets queued, in order: nothing
// left points at the freed device.
TEST_F(NetifRxTest, DeletingADeviceFlushesItsPacketsFromTheBacklog) {
  NetDevice::Config c;
  c.name = "rx1";
  auto other_added = net.devices().add(c, "dummy");
  ASSERT_TRUE(ok(other_added));
  NetDevice* other = other_added.value_or(nullptr);
  ASSERT_TRUE(ok(net.devices().set_up(*other, true)));
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(netif_rx(cpu, udp_frame(cpu, i % 2 ? *other : *dev, 1)), NET_RX_SUCCESS);
  cpu.run_pending();  // one weight processed: 32 of each; the rest split between the queues
  ASSERT_EQ(host_stats(net).delivered, 64u);  // 32 of each
  const auto before = drop_totals();
  ASSERT_TRUE(ok(net.devices().del("rx1")));
  EXPECT_EQ(drop_totals()[static_cast<unsigned>(DropReason::DEV_READY)] -
                before[static_cast<unsigned>(DropReason::DEV_READY)],
            68u);
  while (cpu.has_pending()) cpu.run_pending();
  EXPECT_EQ(host_stats(net).delivered, 132u);  // all 100 of dev's, 32 of rx1's
  EXPECT_EQ(cpu.backlog_len(), 0u);
}

TEST_F(NetifRxTest, BacklogPollsByWeightWithinTheBudget) {
  for (int i = 0; i < 400; ++i) ASSERT_EQ(netif_rx(cpu, udp_frame(cpu, *dev, 1)), NET_RX_SUCCESS);
  cpu.run_pending();  // the backlog is one instance: one weight per round
  EXPECT_EQ(host_stats(net).delivered, 64u);
  while (cpu.has_pending()) cpu.run_pending();
  EXPECT_EQ(host_stats(net).delivered, 400u);
}

TEST_F(NetifRxTest, RpsSpreadsFlowsAndKeepsEachOnOneCpu) {
  Cpu c1(pool), c2(pool);
  auto m = std::make_unique<RpsMap>();
  m->mask = 3;
  m->cpus = {&c1, &c2};
  dev->set_rps_map(std::move(m));
  std::map<uint16_t, std::set<const Cpu*>> where;
  for (uint16_t port = 1000; port < 1064; ++port)
    for (int k = 0; k < 3; ++k) {
      Packet* p = udp_frame(cpu, *dev, port);
      const Cpu* to = &get_rps_cpu(*dev->rps_map(), *p);
      where[port].insert(to);
      EXPECT_EQ(netif_rx(cpu, p), NET_RX_SUCCESS);
    }
  unsigned on1 = 0;
  for (auto& [port, cpus] : where) {
    EXPECT_EQ(cpus.size(), 1u) << port;  // a flow stays on one Cpu
    on1 += cpus.count(&c1);
  }
  EXPECT_GT(on1, 10u);  // and 64 flows use both
  EXPECT_LT(on1, 54u);
  EXPECT_EQ(c1.backlog_queued() + c2.backlog_queued(), 64u * 3);
  // Handed over from this thread: counted as the IPI's arrivals.
  EXPECT_EQ(c1.stats().received_rps.get() + c2.stats().received_rps.get(), 2u);
  while (c1.has_pending()) c1.run_pending();
  while (c2.has_pending()) c2.run_pending();
  EXPECT_EQ(host_stats(net).delivered, 192u);
  dev->set_rps_map(nullptr);
  while (cpu.has_pending()) cpu.run_pending();
  c1.drain_cache();
  c2.drain_cache();
}

}  // namespace
}  // namespace pktpath
