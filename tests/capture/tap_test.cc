// Taps on the receive and transmit paths: what they see and count, what they write, and
// that the packet goes on unchanged (nothing lost).
#include <gtest/gtest.h>

#include <cstdio>

#include "core/bpf_engine.h"
#include "capture_fixture.h"
#include "core/net.h"
#include "tools/pktgen.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

class TapTest : public CaptureFixture {};

// Destinations 192.168.0.0 .. 192.168.3.255 in turn: a quarter inside 192.168.2.0/24.
uint32_t dst_of(uint32_t i) { return ip4(192, 168, 0, 0) + (i % 1024); }

TEST_F(TapTest, RxTapCountsExactlyTheMatchingPackets) {
  NetDevice* d = make("foo", "dummy");
  auto t = attach(d, tap_spec("net 192.168.2.0/24"));
  for (uint32_t i = 0; i < 2000; ++i) EXPECT_EQ(receive_ip(d, dst_of(i * 7)), NET_RX_SUCCESS);
  uint64_t inside = 0;
  for (uint32_t i = 0; i < 2000; ++i) inside += (dst_of(i * 7) >> 8) == (ip4(192, 168, 2, 0) >> 8);
  ASSERT_GT(inside, 0u);
  TapCounts c = tap_detach(t);
  EXPECT_EQ(c.seen, 2000u);
  EXPECT_EQ(c.received_by_filter, inside);
  EXPECT_EQ(c.captured, inside);
  EXPECT_EQ(c.dropped, 0u);
  // Nothing lost: every packet was delivered, none dropped.
  EXPECT_EQ(delivered(), 2000u);
  EXPECT_EQ(all_drops(), 0u);
  EXPECT_EQ(outstanding(), 0u);
  // Detached: later packets are not seen.
  receive_ip(d, ip4(192, 168, 2, 1));
  EXPECT_EQ(t->counts().seen, 2000u);
  EXPECT_EQ(d->taps(), nullptr);
}

TEST_F(TapTest, NoFilterCapturesEverythingAndTwoTapsBothSee) {
  NetDevice* d = make("foo", "dummy");
  auto all = attach(d, tap_spec(""));
  auto udp = attach(d, tap_spec("udp"));
  auto tcp = attach(d, tap_spec("tcp"));
  for (uint32_t i = 0; i < 100; ++i) receive_ip(d, dst_of(i));
  EXPECT_EQ(tap_detach(all).captured, 100u);
  EXPECT_EQ(tap_detach(udp).captured, 100u);
  TapCounts c = tap_detach(tcp);
  EXPECT_EQ(c.seen, 100u);
  EXPECT_EQ(c.received_by_filter, 0u);
  EXPECT_EQ(delivered(), 100u);
}

TEST_F(TapTest, TapRunsBeforeTcIngressAndThePacketContinuesUnchanged) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  // tc ingress: a direct-action program that drops packets whose first byte is 0x22 and
  // accepts the rest: the tap (before tc) sees both kinds.
  filter(d, tc::Dir::Ingress, spec("4,48 0 0 0,21 0 1 34,6 0 0 2,6 0 0 0,", true));
  auto t = attach(d, tap_spec(""));
  for (int i = 0; i < 30; ++i) {
    Packet* p = ip_packet(d, dst_of(i));
    if (i % 3 == 0) p->data()[0] = 0x22;
    ++sent;
    netif_receive_skb(cpu, p);
  }
  TapCounts c = tap_detach(t);
  EXPECT_EQ(c.seen, 30u);
  EXPECT_EQ(c.captured, 30u);
  EXPECT_EQ(delivered(), 20u);
  EXPECT_EQ(drops(DropReason::TC_INGRESS), 10u);
  EXPECT_EQ(tc::clsact_stats(*d, tc::Dir::Ingress).packets, 30u);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(TapTest, TapSeesNothingOnADownDevice) {
  NetDevice* d = make("foo", "dummy", 1, 1000, /*up=*/false);
  auto t = attach(d, tap_spec(""));
  receive_ip(d, dst_of(1));
  EXPECT_EQ(tap_detach(t).seen, 0u);
  EXPECT_EQ(drops(DropReason::DEV_READY), 1u);
}

TEST_F(TapTest, CountLimitCapturesNThenCountsTheRestAsDropped) {
  NetDevice* d = make("foo", "dummy");
  const std::string path = temp_path("count.pcap");
  auto t = attach(d, tap_spec("net 192.168.2.0/24", kTapDefaultSnaplen, 5, path));
  for (uint32_t i = 0; i < 40; ++i) receive_ip(d, ip4(192, 168, 2 + (i % 2), i));
  TapCounts c = tap_detach(t);
  EXPECT_EQ(c.seen, 40u);
  EXPECT_EQ(c.received_by_filter, 20u);
  EXPECT_EQ(c.captured, 5u);
  EXPECT_EQ(c.dropped, 15u);
  EXPECT_EQ(c.received_by_filter, c.captured + c.dropped);
  std::vector<PcapRecord> recs;
  ASSERT_TRUE(read_pcap_file(path, &recs));
  EXPECT_EQ(recs.size(), 5u);
  EXPECT_EQ(delivered(), 40u);
  std::remove(path.c_str());
}

TEST_F(TapTest, PcapFileHasTheRightCountAndBytes) {
  NetDevice* d = make("foo", "dummy");
  const std::string path = temp_path("bytes.pcap");
  auto t = attach(d, tap_spec("udp", kTapDefaultSnaplen, 0, path));
  std::vector<std::vector<uint8_t>> expect;
  for (uint32_t i = 0; i < 25; ++i) {
    const uint32_t size = 60 + i * 37;
    Packet* p = ip_packet(d, dst_of(i), size, static_cast<uint8_t>(i));
    expect.emplace_back(p->data(), p->data() + p->len);
    ++sent;
    netif_receive_skb(cpu, p);
  }
  TapCounts c = tap_detach(t);
  EXPECT_EQ(c.captured, 25u);
  std::vector<PcapRecord> recs;
  int linktype = 0, snaplen = 0;
  ASSERT_TRUE(read_pcap_file(path, &recs, &linktype, &snaplen));
  EXPECT_EQ(linktype, DLT_EN10MB);
  EXPECT_EQ(snaplen, static_cast<int>(kTapDefaultSnaplen));
  ASSERT_EQ(recs.size(), 25u);
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].len, expect[i].size());
    EXPECT_EQ(recs[i].caplen, expect[i].size());
    EXPECT_EQ(recs[i].bytes, expect[i]) << "record " << i;
  }
  std::remove(path.c_str());
}

TEST_F(TapTest, SnaplenCutsTheSnapshotNotThePacket) {
  NetDevice* d = make("foo", "dummy");
  const std::string path = temp_path("snap.pcap");
  auto t = attach(d, tap_spec("ip", 64, 0, path));
  Packet* p = ip_packet(d, dst_of(3), 300, 9);
  const std::vector<uint8_t> head(p->data(), p->data() + 64);
  ++sent;
  netif_receive_skb(cpu, p);
  receive_ip(d, dst_of(4), 40);  // shorter than the snaplen: whole
  tap_detach(t);
  std::vector<PcapRecord> recs;
  int snaplen = 0;
  ASSERT_TRUE(read_pcap_file(path, &recs, nullptr, &snaplen));
  EXPECT_EQ(snaplen, 64);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].caplen, 64u);
  EXPECT_EQ(recs[0].len, 300u);
  EXPECT_EQ(recs[0].bytes, head);
  EXPECT_EQ(recs[1].caplen, 40u);
  EXPECT_EQ(recs[1].len, 40u);
  EXPECT_EQ(delivered(), 2u);
  std::remove(path.c_str());
}

TEST_F(TapTest, SnapshotReachingIntoFragmentsIsGathered) {
  NetDevice* d = make("foo", "dummy");
  const std::string path = temp_path("frags.pcap");
  auto t = attach(d, tap_spec("", 100, 0, path));
  static uint8_t frag[80];
  for (int i = 0; i < 80; ++i) frag[i] = static_cast<uint8_t>(0xa0 + i);
  Packet* p = ip_packet(d, dst_of(1), 60);
  std::vector<uint8_t> expect(p->data(), p->data() + 60);
  expect.insert(expect.end(), frag, frag + 40);
  ASSERT_TRUE(p->add_frag(frag, 80));
  ++sent;
  netif_receive_skb(cpu, p);
  tap_detach(t);
  std::vector<PcapRecord> recs;
  ASSERT_TRUE(read_pcap_file(path, &recs));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].caplen, 100u);
  EXPECT_EQ(recs[0].len, 140u);
  EXPECT_EQ(recs[0].bytes, expect);
  std::remove(path.c_str());
}

// Transmit side (dev_queue_xmit_nit): noqueue (dummy's default), a qdisc with bypass and
// a locked driver all hand the packet to the taps just before the driver.
TEST_F(TapTest, TxTapSeesTransmittedPackets) {
  NetDevice* noq = make("foo", "dummy");
  NetDevice* fast = make("bar", "dummy");
  tc(fast, QdiscOp::Add, "pfifo_fast");
  NetDevice* locked = make("baz", "testdrv");
  int n = 0;
  for (NetDevice* d : {noq, fast, locked}) {
    auto t = attach(d, tap_spec("net 192.168.2.0/24"));
    for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(send_ip(d, dst_of(i * 5)), NET_XMIT_SUCCESS) << d->name();
    drain();
    TapCounts c = tap_detach(t);
    uint64_t inside = 0;
    for (uint32_t i = 0; i < 100; ++i) inside += (dst_of(i * 5) >> 8) == (ip4(192, 168, 2, 0) >> 8);
    EXPECT_EQ(c.seen, 100u) << d->name();
    EXPECT_EQ(c.captured, inside) << d->name();
    EXPECT_EQ(tx(d), 100u) << d->name();
    ++n;
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(all_drops(), 0u);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(TapTest, TxTapFilterSeesPacketOutgoing) {
  NetDevice* d = make("foo", "dummy");
  // ld pkt_type (SKF_AD_OFF + SKF_AD_PKTTYPE = 0xfffff004); ret #-1 if PACKET_OUTGOING.
  TapSpec s;
  std::string err;
  ASSERT_TRUE(bpf::parse_bytecode("4,32 0 0 4294963204,21 0 1 4,6 0 0 4294967295,6 0 0 0,", &s.insns, &err)) << err;
  s.has_filter = true;
  auto t = attach(d, std::move(s));
  send_ip(d, dst_of(1));
  receive_ip(d, dst_of(1));
  TapCounts c = tap_detach(t);
  EXPECT_EQ(c.seen, 2u);
  EXPECT_EQ(c.captured, 1u);  // the transmitted one
}

TEST_F(TapTest, EngineSwitchReloadsTapPrograms) {
  NetDevice* d = make("foo", "dummy");
  const bpf::Engine before = net_bpf_engine(net);
  auto t = attach(d, tap_spec("net 192.168.2.0/24"));
  std::string err;
  uint64_t expect = 0;
  for (bpf::Engine e : {bpf::Engine::Switch, bpf::Engine::Threaded, bpf::Engine::Jit}) {
    ASSERT_TRUE(net_set_bpf_engine(net, e, &err)) << err;
    ASSERT_NE(t->program(), nullptr);
    EXPECT_EQ(t->program()->requested_engine(), e);
    if (e != bpf::Engine::Jit) {
      EXPECT_EQ(t->program()->engine(), e);
    }
    for (uint32_t i = 0; i < 64; ++i) receive_ip(d, dst_of(i * 16));
    expect += 16;  // i*16 % 1024 in 512..767 for i in 32..47
    EXPECT_EQ(t->counts().captured, expect) << bpf::engine_name(e);
  }
  // A tap attached now loads on the current engine.
  ASSERT_TRUE(net_set_bpf_engine(net, bpf::Engine::Switch, &err)) << err;
  auto t2 = attach(d, tap_spec("udp"));
  EXPECT_EQ(t2->program()->engine(), bpf::Engine::Switch);
  tap_detach(t2);
  tap_detach(t);
  ASSERT_TRUE(net_set_bpf_engine(net, before, &err)) << err;
}

TEST_F(TapTest, DeviceDeletedUnderATap) {
  NetDevice* d = make("foo", "dummy");
  auto t = attach(d, tap_spec(""));
  receive_ip(d, dst_of(1));
  ASSERT_TRUE(ok(table.del("foo")));
  EXPECT_EQ(t->device(), nullptr);
  TapCounts c = tap_detach(t);
  EXPECT_EQ(c.captured, 1u);
}

TEST_F(TapTest, BadFileIsRefusedAndNothingAttached) {
  NetDevice* d = make("foo", "dummy");
  TapSpec s = tap_spec("", kTapDefaultSnaplen, 0, "/nonexistent-dir/x.pcap");
  std::string err;
  EXPECT_EQ(tap_attach(*d, std::move(s), &err), nullptr);
  EXPECT_NE(err.find("/nonexistent-dir/x.pcap"), std::string::npos) << err;
  EXPECT_EQ(d->taps(), nullptr);
}

// pktgen's netif_receive mode over a /22 destination range: a quarter of the packets are
// inside 192.168.2.0/24.
TEST_F(TapTest, PktgenNetifReceiveThroughATap) {
  NetDevice* d = make("foo", "dummy");
  auto t = attach(d, tap_spec("net 192.168.2.0/24"));
  PktgenConfig c;
  c.dev = "foo";
  c.count = 4096;
  c.mode = PktgenMode::kNetifReceive;
  EXPECT_FALSE(pktgen_set(c, "dst_mac", "11:11:11:11:11:11"));
  EXPECT_FALSE(pktgen_set(c, "dst_min", "192.168.0.0"));
  EXPECT_FALSE(pktgen_set(c, "dst_max", "192.168.3.255"));
  EXPECT_FALSE(pktgen_set(c, "flag", "NO_TIMESTAMP"));
  Pktgen g(*d, pool, c, PktgenRunOptions{.threads = 1});
  PktgenResult r = g.run();
  EXPECT_EQ(r.packets(), 4096u);
  TapCounts k = tap_detach(t);
  EXPECT_EQ(k.seen, 4096u);
  EXPECT_EQ(k.captured, 1024u);
  EXPECT_EQ(delivered(), 4096u);
}

}  // namespace
}  // namespace pktpath::testing
