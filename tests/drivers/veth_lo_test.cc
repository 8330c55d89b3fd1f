// lo and veth: every packet delivered exactly once or its drop counted; veth across two
// Nets; the ICMP echo responder; veth with RPS onto datapath Cpus (CpuThread), every
// packet back in its pool with and without the defer list.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "core/cpu.h"
#include "core/cpu_thread.h"
#include "core/dev_xmit.h"
#include "core/host_sink.h"
#include "core/net.h"
#include "core/packet_pool.h"
#include "core/sysctl.h"
#include "drivers/testdrv.h"
#include "sched/qdisc.h"
#include "drivers/veth.h"
#include "sanitizer_scale.h"
#include "status_assert.h"

namespace pktpath {
namespace {

uint16_t csum16(const uint8_t* b, unsigned n) {
  uint32_t s = 0;
  for (unsigned i = 0; i + 1 < n; i += 2) s += static_cast<uint32_t>(b[i] << 8 | b[i + 1]);
  if (n & 1) s += static_cast<uint32_t>(b[n - 1] << 8);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s);
}

// Ethernet + IPv4 + ICMP echo request (type 8) with valid checksums, 98 bytes as ping's.
void fill_echo(uint8_t* d, uint16_t seq, const std::array<uint8_t, 6>& dst,
               const std::array<uint8_t, 6>& src = {0x02, 0, 0, 0, 0, 0x11}) {
  std::memset(d, 0, 98);
  std::memcpy(d, dst.data(), 6);
  std::memcpy(d + 6, src.data(), 6);
  d[12] = 0x08;
  uint8_t* ip = d + 14;
  const uint8_t h[20] = {0x45, 0, 0, 84, 0, 1, 0x40, 0, 64, 1, 0, 0, 192, 168, 2, 1, 192, 168, 2, 2};
  std::memcpy(ip, h, 20);
  const uint16_t hc = csum16(ip, 20);
  ip[10] = static_cast<uint8_t>(hc >> 8);
  ip[11] = static_cast<uint8_t>(hc);
  uint8_t* icmp = ip + 20;
  icmp[0] = 8;
  icmp[5] = 1;  // id 1
  icmp[6] = static_cast<uint8_t>(seq >> 8);
  icmp[7] = static_cast<uint8_t>(seq);
  for (int i = 8; i < 64; ++i) icmp[i] = static_cast<uint8_t>(i);
  const uint16_t c = csum16(icmp, 64);
  icmp[2] = static_cast<uint8_t>(c >> 8);
  icmp[3] = static_cast<uint8_t>(c);
}

class VethLoTest : public ::testing::Test {
 protected:
  VethLoTest() { cpu.bind(); }
  ~VethLoTest() override {
    while (cpu.has_pending()) cpu.run_pending();
  }
  // An echo request leaving `dev`, addressed to whoever receives it (lo, or the peer).
  Packet* frame(NetDevice& dev, uint16_t seq = 0) {
    Packet* p = cpu.alloc();
    const NetDevice* to = veth_peer(dev) ? veth_peer(dev) : &dev;
    fill_echo(p->put(98), seq, to->mac(), dev.mac());
    p->dev = &dev;
    return p;
  }
  void up(Net& n, NetDevice& d) {
    ASSERT_TRUE(ok(n.devices().set_up(d, true)));
  }
  void run() {
    while (cpu.has_pending()) cpu.run_pending();
  }
  PacketPool pool{PacketPool::Options{.capacity = 4096}};
  Cpu cpu{pool};
  Net net{cpu};
};

TEST_F(VethLoTest, EveryNetHasLoDownAtIndexOne) {
  NetDevice* lo = net.devices().find("lo");
  ASSERT_NE(lo, nullptr);
  EXPECT_EQ(lo->ifindex(), 1);
  EXPECT_FALSE(lo->is_up());
  EXPECT_TRUE(lo->flags() & IFF_LOOPBACK);
  EXPECT_EQ(lo->mtu(), 65536u);
  Net other(cpu, "ns1");
  ASSERT_NE(other.devices().find("lo"), nullptr);
  EXPECT_NE(other.devices().find("lo"), lo);
  // Down: dev_queue_xmit drops (the device is not running).
  EXPECT_NE(dev_queue_xmit(cpu, frame(*lo)), 0);
  EXPECT_EQ(lo->stats_sum().tx_packets, 0u);
}

TEST_F(VethLoTest, LoDeliversWhatItSendsOnTheSendingCpu) {
  NetDevice* lo = net.devices().find("lo");
  up(net, *lo);
  EXPECT_EQ(std::string(lo->qdisc()->kind()), "noqueue");
  for (int i = 0; i < 500; ++i) ASSERT_EQ(dev_queue_xmit(cpu, frame(*lo)), 0);
  run();
  const DevStatsSum s = lo->get_stats64();  // loopback_get_stats64: rx is what it carried
  EXPECT_EQ(lo->stats_sum().rx_packets, 0u);
  EXPECT_EQ(s.tx_packets, 500u);
  EXPECT_EQ(s.rx_packets, 500u);
  EXPECT_EQ(s.rx_bytes, 500u * 98);
  EXPECT_EQ(host_stats(net).delivered, 500u);
  EXPECT_EQ(host_stats(net).in_echos, 0u);  // answering is off by default
}

TEST_F(VethLoTest, EchoRequestsOnLoAreAnsweredWithValidChecksums) {
  ASSERT_TRUE(sysctl_find("net.ipv4.icmp_echo_ignore_all")->set(net, "0"));
  NetDevice* lo = net.devices().find("lo");
  up(net, *lo);
  for (uint16_t i = 0; i < 100; ++i) ASSERT_EQ(dev_queue_xmit(cpu, frame(*lo, i)), 0);
  run();
  const HostStats h = host_stats(net);
  EXPECT_EQ(h.in_echos, 100u);
  EXPECT_EQ(h.out_echo_reps, 100u);
  EXPECT_EQ(h.in_echo_reps, 100u);
  EXPECT_EQ(h.delivered, 200u);  // each request and its reply
  EXPECT_EQ(lo->stats_sum().tx_packets, 200u);
}

TEST_F(VethLoTest, EchoReplyIsTheRequestTurnedAround) {
  ASSERT_TRUE(sysctl_find("net.ipv4.icmp_echo_ignore_all")->set(net, "0"));
  NetDevice *a = nullptr, *b = nullptr;
  NetDevice::Config ca, cb;
  ca.name = "va";
  cb.name = "vb";
  auto a_added = veth_newlink(net.devices(), ca, net.devices(), cb);
  ASSERT_TRUE(ok(a_added));
  a = a_added.value_or(nullptr);
  b = veth_peer(*a);
  up(net, *a);
  up(net, *b);
  // b answers; the reply arrives on a, where the sink counts it as an echo reply (it
  // parses as one only if the swap and the checksums are right: see the next test).
  ASSERT_EQ(dev_queue_xmit(cpu, frame(*a, 7)), 0);
  run();
  EXPECT_EQ(b->get_stats64().rx_packets, 1u);
  EXPECT_EQ(a->get_stats64().rx_packets, 1u);
  EXPECT_EQ(host_stats(net).in_echo_reps, 1u);
}

TEST(EchoReplyBytes, SwappedAddressesAndValidChecksums) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu cpu(pool);
  cpu.bind();
  Net net(cpu);
  ASSERT_TRUE(sysctl_find("net.ipv4.icmp_echo_ignore_all")->set(net, "0"));
  NetDevice::Config c;
  c.name = "d0";
  auto d_added = net.devices().add(c, "testdrv");
  ASSERT_TRUE(ok(d_added));
  NetDevice* d = d_added.value_or(nullptr);
  testdrv_state(*d).record_frames = true;
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  Packet* p = cpu.alloc();
  fill_echo(p->put(98), 9, d->mac());
  std::vector<uint8_t> req(p->data(), p->data() + 98);
  p->dev = d;
  host_deliver(cpu, p);  // as netif_receive_skb's delivery would
  while (cpu.has_pending()) cpu.run_pending();
  ASSERT_EQ(testdrv_state(*d).frames.size(), 1u);
  const std::vector<uint8_t>& rep = testdrv_state(*d).frames[0];
  ASSERT_EQ(rep.size(), 98u);
  EXPECT_TRUE(std::equal(rep.begin(), rep.begin() + 6, req.begin() + 6));
  EXPECT_TRUE(std::equal(rep.begin() + 6, rep.begin() + 12, req.begin()));
  EXPECT_TRUE(std::equal(rep.begin() + 26, rep.begin() + 30, req.begin() + 30));
  EXPECT_TRUE(std::equal(rep.begin() + 30, rep.begin() + 34, req.begin() + 26));
  EXPECT_EQ(rep[34], 0);                                // echo reply
  EXPECT_EQ(csum16(rep.data() + 14, 20), 0);            // IPv4 header sums to 0xffff
  EXPECT_EQ(csum16(rep.data() + 34, 64), 0);            // and the ICMP message
  EXPECT_TRUE(std::equal(rep.begin() + 38, rep.end(), req.begin() + 38));  // id, seq, data
}

TEST_F(VethLoTest, VethPairCarriesBothWaysAndCountsPeerDown) {
  NetDevice::Config ca, cb;
  ca.name = "veth0";
  auto a_added = veth_newlink(net.devices(), ca, net.devices(), cb);
  ASSERT_TRUE(ok(a_added));
  NetDevice* a = a_added.value_or(nullptr);
  NetDevice* b = veth_peer(*a);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "veth1");  // the first free vethN
  EXPECT_EQ(veth_peer(*b), a);
  up(net, *a);
  const auto before = drop_totals();
  for (int i = 0; i < 10; ++i) dev_queue_xmit(cpu, frame(*a));  // peer down
  run();
  EXPECT_EQ(a->stats_sum().tx_dropped, 10u);
  EXPECT_EQ(b->stats_sum().rx_dropped, 10u);
  EXPECT_EQ(drop_totals()[static_cast<unsigned>(DropReason::DEV_READY)] -
                before[static_cast<unsigned>(DropReason::DEV_READY)],
            10u);
  up(net, *b);
  for (int i = 0; i < 300; ++i) dev_queue_xmit(cpu, frame(*a));
  for (int i = 0; i < 200; ++i) dev_queue_xmit(cpu, frame(*b));
  run();
  EXPECT_EQ(a->stats_sum().tx_packets, 300u);
  EXPECT_EQ(b->get_stats64().rx_packets, 300u);
  EXPECT_EQ(b->stats_sum().tx_packets, 200u);
  EXPECT_EQ(a->get_stats64().rx_packets, 200u);
  // Deleting one end takes the other.
  ASSERT_TRUE(ok(net.devices().del("veth1")));
  EXPECT_EQ(net.devices().find("veth0"), nullptr);
}

TEST_F(VethLoTest, VethAcrossNetsDeliversOnlyInThePeersNet) {
  Net ns(cpu, "ns1");
  NetDevice::Config ca, cb;
  ca.name = "a";
  cb.name = "b";
  auto a_added = veth_newlink(net.devices(), ca, ns.devices(), cb);
  ASSERT_TRUE(ok(a_added));
  NetDevice* a = a_added.value_or(nullptr);
  NetDevice* b = ns.devices().find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(&b->net(), &ns);
  EXPECT_EQ(net.devices().find("b"), nullptr);
  up(net, *a);
  up(ns, *b);
  for (int i = 0; i < 100; ++i) {
    Packet* p = frame(*a);
    p->mark = 5;
    dev_queue_xmit(cpu, p);
  }
  run();
  EXPECT_EQ(host_stats(ns).delivered, 100u);
  EXPECT_EQ(host_stats(net).delivered, 0u);
  EXPECT_EQ(b->get_stats64().rx_packets, 100u);
}

TEST_F(VethLoTest, NetGoingAwayTakesThePeerInTheOtherNet) {
  std::string err;
  {
    Net ns(cpu, "ns1");
    NetDevice::Config ca, cb;
    ca.name = "a";
    cb.name = "b";
    ASSERT_NE(veth_newlink(net.devices(), ca, ns.devices(), cb).value_or(nullptr), nullptr) << err;
  }
  EXPECT_EQ(net.devices().find("a"), nullptr);
}

// Document 002's flow: veth a -> b with b's RPS map on two datapath Cpus (threads):
// packets allocated here are freed there, and come back through this Cpu's defer list
// (or straight to the pool with it off). Nothing is lost either way.
void remote_free_round_trip(bool defer) {
  constexpr int kPackets = pktpath::testing::scaled<int>(200'000, 20'000);
  PacketPool pool(PacketPool::Options{.capacity = 8192});
  Cpu::Options o;
  o.defer_free = defer;
  Cpu cpu(pool, o);
  cpu.bind();
  uint64_t delivered = 0, dropped = 0;
  {
    Net net(cpu);
    CpuSet set(pool);
    net.set_cpu_set(&set);
    NetDevice::Config ca, cb;
    ca.name = "a";
    cb.name = "b";
    std::string err;
    auto a_added = veth_newlink(net.devices(), ca, net.devices(), cb);
    ASSERT_TRUE(ok(a_added));
    NetDevice* a = a_added.value_or(nullptr);
    NetDevice* b = veth_peer(*a);
    ASSERT_TRUE(ok(net.devices().set_up(*a, true)));
    ASSERT_TRUE(ok(net.devices().set_up(*b, true)));
    auto m = std::make_unique<RpsMap>();
    m->mask = 3;
    Cpu::Options ro = net.cpu_options();
    ro.defer_free = defer;
    m->cpus = {&set.get(0, ro).cpu(), &set.get(1, ro).cpu()};
    b->set_rps_map(std::move(m));
    for (int i = 0; i < kPackets; ++i) {
      Packet* p = cpu.alloc();
      if (!p) {
        cpu.run_pending();
        --i;
        continue;
      }
      fill_echo(p->put(98), static_cast<uint16_t>(i), b->mac());
      p->data()[37] = static_cast<uint8_t>(i);  // vary the flow (IP id byte)
      p->data()[29] = static_cast<uint8_t>(i & 7);  // source address: eight flows
      p->dev = a;
      dev_queue_xmit(cpu, p);
      if ((i & 63) == 0) cpu.run_pending();
    }
    while (!set.idle()) cpu.run_pending();
    cpu.run_pending();
    delivered = host_stats(net).delivered;
    dropped = b->stats_sum().rx_dropped;
    EXPECT_EQ(delivered + dropped, static_cast<uint64_t>(kPackets));
    const uint64_t queued = set.at(0)->cpu().stats().defer_queued.get() + set.at(1)->cpu().stats().defer_queued.get();
    if (defer) {
      EXPECT_GT(queued, 0u);
      EXPECT_EQ(cpu.stats().defer_flushed.get(), queued);
    } else {
      EXPECT_EQ(queued, 0u);
    }
    EXPECT_GT(set.at(0)->cpu().stats().processed.get(), 0u);
    EXPECT_GT(set.at(1)->cpu().stats().processed.get(), 0u);
  }
  cpu.run_pending();
  cpu.drain_cache();
  EXPECT_EQ(pool.available(), 8192u);
}

TEST(VethRpsStress, EveryPacketReturnsWithTheDeferList) { remote_free_round_trip(true); }
TEST(VethRpsStress, EveryPacketReturnsWithoutTheDeferList) { remote_free_round_trip(false); }

}  // namespace
}  // namespace pktpath
