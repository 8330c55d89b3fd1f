#include "tools/pktgen_packet.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/inet_checksum.h"
#include "core/packet_pool.h"

namespace pktpath {
namespace {

uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t rd32(const uint8_t* p) { return uint32_t{rd16(p)} << 16 | rd16(p + 2); }

class PktgenPacketTest : public ::testing::Test {
 protected:
  PktgenConfig cfg;
  PktgenState st;
  PacketPool pool{PacketPool::Options{.capacity = 64}};
  Cpu cpu{pool};
  const uint8_t dev_mac[6] = {0x02, 0, 0, 0, 0, 0x01};

  void SetUp() override {
    cfg.dev = "foo";
    ASSERT_FALSE(pktgen_set(cfg, "dst_mac", "11:11:11:11:11:11"));
    ASSERT_FALSE(pktgen_set(cfg, "dst", "1.1.1.1"));
    ASSERT_FALSE(pktgen_set(cfg, "flag", "NO_TIMESTAMP"));
  }
  Packet* next() {
    pktgen_mod_cur_headers(cfg, st, 0, 1);
    return pktgen_fill_packet_ipv4(cpu, cfg, st, 0);
  }
};

TEST_F(PktgenPacketTest, SixtyByteFrameByteByByte) {
  st.init(cfg, dev_mac, 1);
  Packet* p = next();
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->len, 60u);
  const uint8_t* d = p->data();
  const uint8_t expect_eth[14] = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00};
  for (int i = 0; i < 14; ++i) EXPECT_EQ(d[i], expect_eth[i]) << "byte " << i;
  const uint8_t* ip = d + 14;
  EXPECT_EQ(ip[0], 0x45);
  EXPECT_EQ(ip[1], 0);
  EXPECT_EQ(rd16(ip + 2), 46);  // 20 + 8 + 18
  EXPECT_EQ(rd16(ip + 4), 0);   // first ip id
  EXPECT_EQ(rd16(ip + 6), 0);
  EXPECT_EQ(ip[8], 32);
  EXPECT_EQ(ip[9], 17);
  EXPECT_EQ(rd32(ip + 12), 0u);
  EXPECT_EQ(rd32(ip + 16), 0x01010101u);
  EXPECT_EQ(inet_checksum(ip, 20), 0) << "IPv4 header checksum must verify";
  const uint8_t* udp = ip + 20;
  EXPECT_EQ(rd16(udp), 9);
  EXPECT_EQ(rd16(udp + 2), 9);
  EXPECT_EQ(rd16(udp + 4), 26);
  EXPECT_EQ(rd16(udp + 6), 0);  // no UDP checksum without UDPCSUM
  EXPECT_EQ(rd32(udp + 8), kPktgenMagic);
  EXPECT_EQ(rd32(udp + 12), 0u);  // seq
  EXPECT_EQ(rd32(udp + 16), 0u);  // NO_TIMESTAMP
  EXPECT_EQ(rd32(udp + 20), 0u);
  EXPECT_EQ(rd16(udp + 24), 0);  // padding
  EXPECT_EQ(p->protocol, __builtin_bswap16(0x0800));
  cpu.free(p);
  Packet* q = next();
  EXPECT_EQ(rd16(q->data() + 14 + 4), 1);  // ip id advances
  cpu.free(q);
}

TEST_F(PktgenPacketTest, UdpChecksumVerifiesWhenAsked) {
  ASSERT_FALSE(pktgen_set(cfg, "flag", "UDPCSUM"));
  ASSERT_FALSE(pktgen_set(cfg, "src_min", "10.0.0.1"));
  ASSERT_FALSE(pktgen_set(cfg, "src_max", "10.0.0.1"));
  ASSERT_FALSE(pktgen_set(cfg, "pkt_size", "101"));
  st.init(cfg, dev_mac, 1);
  Packet* p = next();
  ASSERT_EQ(p->len, 101u);
  const uint8_t* ip = p->data() + 14;
  const uint8_t* udp = ip + 20;
  uint32_t udp_len = rd16(udp + 4);
  EXPECT_EQ(udp_len, 101u - 34u);
  uint32_t pseudo = 0x0a00 + 0x0001 + 0x0101 + 0x0101 + 17 + udp_len;
  EXPECT_NE(rd16(udp + 6), 0);
  EXPECT_EQ(inet_checksum(udp, udp_len, pseudo), 0) << "UDP checksum must verify";
  cpu.free(p);
}

TEST_F(PktgenPacketTest, AddressAndPortRangesAdvanceAndWrapAsPktgen) {
  ASSERT_FALSE(pktgen_set(cfg, "dst_min", "10.0.0.1"));
  ASSERT_FALSE(pktgen_set(cfg, "dst_max", "10.0.0.3"));
  ASSERT_FALSE(pktgen_set(cfg, "udp_dst_min", "100"));
  ASSERT_FALSE(pktgen_set(cfg, "udp_dst_max", "102"));
  st.init(cfg, dev_mac, 1);
  std::vector<uint32_t> dsts;
  std::vector<uint16_t> ports;
  for (int i = 0; i < 5; ++i) {
    Packet* p = next();
    dsts.push_back(rd32(p->data() + 14 + 16));
    ports.push_back(rd16(p->data() + 34 + 2));
    cpu.free(p);
  }
  // mod_cur_headers runs before the first packet too, so the first one is min + 1.
  EXPECT_EQ(dsts, (std::vector<uint32_t>{0x0a000002, 0x0a000003, 0x0a000001, 0x0a000002, 0x0a000003}));
  // Ports wrap when they reach max (exclusive), as pktgen's ">= max".
  EXPECT_EQ(ports, (std::vector<uint16_t>{101, 100, 101, 100, 101}));
}

TEST_F(PktgenPacketTest, RandomRangesStayInside) {
  ASSERT_FALSE(pktgen_set(cfg, "dst_min", "192.168.2.0"));
  ASSERT_FALSE(pktgen_set(cfg, "dst_max", "192.168.2.255"));
  ASSERT_FALSE(pktgen_set(cfg, "flag", "IPDST_RND"));
  ASSERT_FALSE(pktgen_set(cfg, "udp_src_min", "1000"));
  ASSERT_FALSE(pktgen_set(cfg, "udp_src_max", "2000"));
  ASSERT_FALSE(pktgen_set(cfg, "flag", "UDPSRC_RND"));
  ASSERT_FALSE(pktgen_set(cfg, "min_pkt_size", "60"));
  ASSERT_FALSE(pktgen_set(cfg, "max_pkt_size", "128"));
  ASSERT_FALSE(pktgen_set(cfg, "flag", "TXSIZE_RND"));
  st.init(cfg, dev_mac, 7);
  bool saw_different = false;
  uint32_t first = 0;
  for (int i = 0; i < 200; ++i) {
    Packet* p = next();
    uint32_t d = rd32(p->data() + 14 + 16);
    uint16_t sp = rd16(p->data() + 34);
    EXPECT_GE(d, 0xc0a80200u);
    EXPECT_LE(d, 0xc0a802ffu);
    EXPECT_GE(sp, 1000);
    EXPECT_LT(sp, 2000);
    EXPECT_GE(p->len, 60u);
    EXPECT_LE(p->len, 128u);
    if (i == 0) first = d; else saw_different |= d != first;
    cpu.free(p);
  }
  EXPECT_TRUE(saw_different);
}

TEST_F(PktgenPacketTest, MacCountsStepTheLowBytes) {
  ASSERT_FALSE(pktgen_set(cfg, "dst_mac", "00:00:00:00:00:fe"));
  ASSERT_FALSE(pktgen_set(cfg, "dst_mac_count", "4"));
  st.init(cfg, dev_mac, 1);
  const uint8_t expect_last[5][2] = {{0, 0xfe}, {0, 0xff}, {1, 0x00}, {1, 0x01}, {0, 0xfe}};
  for (auto& e : expect_last) {
    Packet* p = next();
    EXPECT_EQ(p->data()[4], e[0]);
    EXPECT_EQ(p->data()[5], e[1]);
    cpu.free(p);
  }
}

TEST_F(PktgenPacketTest, QueueMapCpuAndRangeModuloQueues) {
  ASSERT_FALSE(pktgen_set(cfg, "flag", "QUEUE_MAP_CPU"));
  st.init(cfg, dev_mac, 1);
  pktgen_mod_cur_headers(cfg, st, 5, 4);
  EXPECT_EQ(st.cur_queue_map, 1);
  ASSERT_FALSE(pktgen_set(cfg, "flag", "!QUEUE_MAP_CPU"));
  ASSERT_FALSE(pktgen_set(cfg, "queue_map_min", "0"));
  ASSERT_FALSE(pktgen_set(cfg, "queue_map_max", "2"));
  st.init(cfg, dev_mac, 1);
  std::vector<int> q;
  for (int i = 0; i < 4; ++i) {
    pktgen_mod_cur_headers(cfg, st, 0, 8);
    q.push_back(st.cur_queue_map);
  }
  EXPECT_EQ(q, (std::vector<int>{1, 2, 0, 1}));
}

TEST_F(PktgenPacketTest, SeqNumAndTimestampWritten) {
  ASSERT_FALSE(pktgen_set(cfg, "flag", "!NO_TIMESTAMP"));
  st.init(cfg, dev_mac, 1);
  st.seq_num = 77;
  pktgen_mod_cur_headers(cfg, st, 0, 1);
  Packet* p = pktgen_fill_packet_ipv4(cpu, cfg, st, 1'700'000'000'123'456'789ull);
  EXPECT_EQ(rd32(p->data() + 42 + 4), 77u);
  EXPECT_EQ(rd32(p->data() + 42 + 8), 1'700'000'000u);
  EXPECT_EQ(rd32(p->data() + 42 + 12), 123'456u);
  cpu.free(p);
}

TEST_F(PktgenPacketTest, PoolExhaustionReturnsNull) {
  PacketPool tiny(PacketPool::Options{.capacity = 1});
  Cpu c(tiny, Cpu::Options{.cache_size = 1, .cache_batch = 1});
  st.init(cfg, dev_mac, 1);
  Packet* a = pktgen_fill_packet_ipv4(c, cfg, st, 0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(pktgen_fill_packet_ipv4(c, cfg, st, 0), nullptr);
  EXPECT_EQ(c.stats().alloc_fail.get(), 1u);
  c.free(a);
}

}  // namespace
}  // namespace pktpath
