// veth's NAPI mode (GRO on at the receiving end): frames go through the peer's ring and
// NAPI poll, not the input queue; a full ring drops (FULL_RING); a poll takes at most its
// weight; GRO off or down drains the ring, every packet counted; RPS still steers after
// the poll; two senders into one end account for every packet.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "core/cpu.h"
#include "core/cpu_thread.h"
#include "core/dev_xmit.h"
#include "core/host_sink.h"
#include "core/net.h"
#include "core/packet_pool.h"
#include "drivers/veth.h"
#include "sanitizer_scale.h"
#include "status_assert.h"

namespace pktpath {
namespace {

// A 98-byte IPv4 frame to `dst`; `flow` varies the source address (the flow hash).
void fill(uint8_t* d, const std::array<uint8_t, 6>& dst, uint8_t flow) {
  std::memset(d, 0, 98);
  std::memcpy(d, dst.data(), 6);
  d[6] = 0x02;
  d[11] = 0x11;
  d[12] = 0x08;
  const uint8_t ip[20] = {0x45, 0, 0, 84, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, flow, 10, 0, 1, 1};
  std::memcpy(d + 14, ip, 20);
}

// veth a/b in `net`, both up, GRO on at b; null (with a failure) if any step fails.
NetDevice* up_pair_gro_on(Net& net) {
  NetDevice::Config ca, cb;
  ca.name = "a";
  cb.name = "b";
  std::string err;
  NetDevice* a = veth_newlink(net.devices(), ca, net.devices(), cb).value_or(nullptr);
  NetDevice* b = a ? veth_peer(*a) : nullptr;
  if (!b || !net.devices().set_up(*a, true) || !net.devices().set_up(*b, true) ||
      !veth_set_gro(*b, true, err)) {
    ADD_FAILURE() << err;
    return nullptr;
  }
  return a;
}

uint64_t drops(const Cpu& c, DropReason r) { return c.stats().drops[static_cast<unsigned>(r)].get(); }

class VethNapiTest : public ::testing::Test {
 protected:
  explicit VethNapiTest(Cpu::Options o = {}) : cpu(pool, o), net(cpu) {
    cpu.bind();
    a = up_pair_gro_on(net);
    b = a ? veth_peer(*a) : nullptr;
  }
  ~VethNapiTest() override { run(); }
  void SetUp() override {
    ASSERT_NE(b, nullptr);
    ASSERT_TRUE(veth_gro(*b));
  }
  void send(int n) {
    for (int i = 0; i < n; ++i) {
      Packet* p = cpu.alloc();
      ASSERT_NE(p, nullptr);
      fill(p->put(98), b->mac(), static_cast<uint8_t>(i));
      p->dev = a;
      dev_queue_xmit(cpu, p);
    }
  }
  void run() {
    while (cpu.has_pending()) cpu.run_pending();
  }
  PacketPool pool{PacketPool::Options{.capacity = 4096}};
  Cpu cpu;
  Net net;
  NetDevice* a = nullptr;
  NetDevice* b = nullptr;
};

TEST_F(VethNapiTest, FramesReachThePeerThroughItsNapiNotTheBacklog) {
  send(100);
  // Scheduled on the sending Cpu, nothing on its input queue.
  EXPECT_EQ(cpu.napi_polling(), 1u);
  EXPECT_EQ(cpu.backlog_len(), 0u);
  run();
  EXPECT_EQ(host_stats(net).delivered, 100u);
  EXPECT_EQ(cpu.stats().processed.get(), 100u);
  EXPECT_EQ(cpu.stats().backlog_processed.get(), 0u);
  // The sender's own counters stay untouched; veth_get_stats64 reads b's ring counters.
  EXPECT_EQ(a->stats_sum().tx_packets, 0u);
  const DevStatsSum sa = veth_get_stats64(*a), sb = veth_get_stats64(*b);
  EXPECT_EQ(sa.tx_packets, 100u);
  EXPECT_EQ(sa.tx_bytes, 9800u);
  EXPECT_EQ(sb.rx_packets, 100u);
  EXPECT_EQ(sb.rx_bytes, 9800u);
  EXPECT_EQ(sa.rx_packets, 0u);
  EXPECT_EQ(sb.tx_packets, 0u);
}

TEST_F(VethNapiTest, TheFrameAfterAFullRingIsDroppedAndCounted) {
  send(257);  // nobody polls meanwhile
  EXPECT_EQ(a->stats_sum().tx_dropped, 1u);
  EXPECT_EQ(veth_get_stats64(*a).tx_dropped, 1u);
  EXPECT_EQ(drops(cpu, DropReason::FULL_RING), 1u);
  run();
  EXPECT_EQ(host_stats(net).delivered, 256u);
  EXPECT_EQ(veth_get_stats64(*a).tx_packets, 256u);
}

class VethNapiBudgetTest : public VethNapiTest {
 protected:
  static Cpu::Options one_weight() {
    Cpu::Options o;
    o.netdev_budget = 64;  // one poll's weight per net_rx_action
    return o;
  }
  VethNapiBudgetTest() : VethNapiTest(one_weight()) {}
};

TEST_F(VethNapiBudgetTest, APollTakesAtMostItsWeightAndIsPolledAgain) {
  send(200);
  cpu.net_rx_action();
  EXPECT_EQ(host_stats(net).delivered, 64u);
  EXPECT_EQ(cpu.napi_polling(), 1u);  // still scheduled: more is queued
  cpu.net_rx_action();
  EXPECT_EQ(host_stats(net).delivered, 128u);
  run();
  EXPECT_EQ(host_stats(net).delivered, 200u);
  EXPECT_EQ(cpu.napi_polling(), 0u);
}

TEST_F(VethNapiTest, GroOffDrainsTheRingCountingEveryPacket) {
  send(100);
  std::string err;
  ASSERT_TRUE(veth_set_gro(*b, false, err)) << err;
  run();
  const DevStatsSum sb = veth_get_stats64(*b), sa = veth_get_stats64(*a);
  EXPECT_EQ(sb.rx_packets + sb.rx_dropped, 100u);  // sent = received + dropped
  EXPECT_EQ(sb.rx_dropped, 100u);                   // the pending poll ran out first
  EXPECT_EQ(sa.tx_packets + sa.tx_dropped + sb.rx_dropped, 100u);
  EXPECT_EQ(drops(cpu, DropReason::DEV_READY), 100u);
  // Without NAPI the next frames take the input queue.
  send(10);
  EXPECT_EQ(cpu.backlog_len(), 10u);
  run();
  EXPECT_EQ(host_stats(net).delivered, 10u);
  EXPECT_EQ(veth_get_stats64(*a).tx_packets, 10u);
  EXPECT_EQ(veth_get_stats64(*b).rx_packets, 10u);
}

TEST_F(VethNapiTest, DownDrainsTheRingAndUpRestoresNapi) {
  send(50);
  cpu.net_rx_action();  // 50 < weight: all received
  send(30);
  ASSERT_TRUE(ok(net.devices().set_up(*b, false)));
  run();
  // The close may run the control Cpu's pending work (the poll) before the ring is
  // drained: what was not received then is dropped, nothing else.
  const DevStatsSum sb = veth_get_stats64(*b);
  EXPECT_GE(sb.rx_packets, 50u);
  EXPECT_EQ(sb.rx_packets + sb.rx_dropped, 80u);
  EXPECT_EQ(host_stats(net).delivered, sb.rx_packets);
  EXPECT_EQ(cpu.napi_polling(), 0u);
  ASSERT_TRUE(ok(net.devices().set_up(*b, true)));
  send(5);
  EXPECT_EQ(cpu.napi_polling(), 1u);  // GRO is still wanted: NAPI again once up
  run();
  EXPECT_EQ(veth_get_stats64(*b).rx_packets, sb.rx_packets + 5);
  EXPECT_EQ(cpu.stats().backlog_processed.get(), 0u);
}

// After the poll, b's RPS map still steers (netif_receive_skb_list_internal).
TEST(VethNapiRps, RpsOnThePeerSteersAfterThePoll) {
  constexpr int kPackets = 2000;
  PacketPool pool(PacketPool::Options{.capacity = 4096});
  Cpu cpu(pool);
  cpu.bind();
  Net net(cpu);
  CpuSet set(pool);
  net.set_cpu_set(&set);
  NetDevice* a = up_pair_gro_on(net);
  ASSERT_NE(a, nullptr);
  NetDevice* b = veth_peer(*a);
  auto m = std::make_unique<RpsMap>();
  m->mask = 3;
  m->cpus = {&set.get(0, net.cpu_options()).cpu(), &set.get(1, net.cpu_options()).cpu()};
  b->set_rps_map(std::move(m));
  for (int i = 0; i < kPackets; ++i) {
    Packet* p = cpu.alloc();
    if (!p) {
      cpu.run_pending();
      --i;
      continue;
    }
    fill(p->put(98), b->mac(), static_cast<uint8_t>(i & 7));
    p->dev = a;
    dev_queue_xmit(cpu, p);
    if ((i & 31) == 0) cpu.run_pending();
  }
  while (cpu.has_pending() || !set.idle()) cpu.run_pending();
  const uint64_t p0 = set.at(0)->cpu().stats().processed.get(), p1 = set.at(1)->cpu().stats().processed.get();
  const DevStatsSum sb = veth_get_stats64(*b);
  EXPECT_EQ(sb.rx_packets + veth_get_stats64(*a).tx_dropped, static_cast<uint64_t>(kPackets));
  EXPECT_EQ(host_stats(net).delivered + b->stats_sum().rx_dropped, sb.rx_packets);
  EXPECT_EQ(cpu.stats().processed.get(), 0u);  // polled here, received there
  EXPECT_GT(p0, 0u);
  EXPECT_GT(p1, 0u);
  EXPECT_EQ(p0 + p1, host_stats(net).delivered);
  set.stop();
}

// Two sender threads, each on its own Cpu, into one end with GRO on: the NAPI instance
// moves between the senders' Cpus; every packet is received or dropped (FULL_RING).
TEST(VethNapiStress, TwoSendersIntoOnePeerAccountForEveryPacket) {
  constexpr int kPerSender = pktpath::testing::scaled<int>(100'000, 10'000);
  PacketPool pool(PacketPool::Options{.capacity = 8192});
  Cpu::Options o;
  o.defer_free = false;
  Cpu control(pool, o);
  control.bind();
  Net net(control);
  NetDevice* a = up_pair_gro_on(net);
  ASSERT_NE(a, nullptr);
  NetDevice* b = veth_peer(*a);
  const uint64_t total = 2ull * kPerSender;
  auto accounted = [&] { return host_stats(net).delivered + a->stats_sum().tx_dropped; };
  auto sender = [&](Cpu* cpu, uint8_t flow) {
    cpu->bind();
    for (int i = 0; i < kPerSender; ++i) {
      Packet* p = cpu->alloc();
      if (!p) {
        cpu->run_pending();
        --i;
        continue;
      }
      fill(p->put(98), b->mac(), flow);
      p->dev = a;
      dev_queue_xmit(*cpu, p);
      if ((i & 15) == 0) cpu->run_pending();
    }
    // The instance may sit on this Cpu's poll list until the ring is empty.
    while (accounted() != total || cpu->has_pending()) cpu->run_pending();
  };
  Cpu c1(pool, o), c2(pool, o);
  std::thread t1(sender, &c1, 1), t2(sender, &c2, 2);
  t1.join();
  t2.join();
  const DevStatsSum sa = veth_get_stats64(*a), sb = veth_get_stats64(*b);
  EXPECT_EQ(sa.tx_packets + sa.tx_dropped, total);
  EXPECT_EQ(sb.rx_packets, sa.tx_packets);
  EXPECT_EQ(host_stats(net).delivered, sb.rx_packets);
  EXPECT_EQ(drops(c1, DropReason::FULL_RING) + drops(c2, DropReason::FULL_RING), sa.tx_dropped);
  EXPECT_EQ(c1.stats().backlog_processed.get() + c2.stats().backlog_processed.get(), 0u);
}

}  // namespace
}  // namespace pktpath
