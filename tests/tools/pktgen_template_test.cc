// The prebuilt-frame fast path must produce exactly fill_packet_ipv4's packets: bytes,
// length, metadata; and must refuse configurations it cannot stand for.
#include "tools/pktgen_template.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/inet_checksum.h"
#include "core/packet_pool.h"

namespace pktpath {
namespace {

class PktgenTemplateTest : public ::testing::Test {
 protected:
  PktgenConfig cfg;
  PacketPool pool{PacketPool::Options{.capacity = 64}};
  Cpu cpu{pool};
  const uint8_t dev_mac[6] = {0x02, 0, 0, 0, 0, 0x07};
  NetDevice* const dev = reinterpret_cast<NetDevice*>(0x1000);  // only stored, never used

  void SetUp() override {
    ASSERT_FALSE(pktgen_set(cfg, "dst_mac", "11:11:11:11:11:11"));
    ASSERT_FALSE(pktgen_set(cfg, "dst", "1.1.1.1"));
    ASSERT_FALSE(pktgen_set(cfg, "src_min", "10.0.0.1"));
    ASSERT_FALSE(pktgen_set(cfg, "src_max", "10.0.0.1"));
    ASSERT_FALSE(pktgen_set(cfg, "skb_priority", "5"));
    ASSERT_FALSE(pktgen_set(cfg, "tos", "10"));
  }

  // Sends n packets both ways from the same starting state and compares them.
  void expect_same(unsigned n, uint16_t first_id, uint64_t now) {
    PktgenState a, b;
    a.init(cfg, dev_mac, 1);
    pktgen_mod_cur_headers(cfg, a, 0, 1);
    a.ip_id = first_id;
    a.seq_num = 1000;
    b = a;
    PktgenTemplate t;
    ASSERT_TRUE(t.build(cfg, b, pool, dev));
    for (unsigned i = 0; i < n; ++i) {
      Packet* ref = pktgen_fill_packet_ipv4(cpu, cfg, a, now);
      Packet* got = t.fill(cpu, cfg, b, now);
      ASSERT_NE(ref, nullptr);
      ASSERT_NE(got, nullptr);
      ASSERT_EQ(got->len, ref->len);
      for (uint32_t k = 0; k < ref->len; ++k) ASSERT_EQ(got->data()[k], ref->data()[k]) << "packet " << i << " byte " << k;
      EXPECT_EQ(inet_checksum(got->data() + 14, 20), 0);
      EXPECT_EQ(got->data_off, ref->data_off);
      EXPECT_EQ(got->headlen(), ref->headlen());
      EXPECT_EQ(got->protocol, ref->protocol);
      EXPECT_EQ(got->queue_mapping, ref->queue_mapping);
      EXPECT_EQ(got->priority, 5u);
      EXPECT_EQ(got->pkt_type, ref->pkt_type);
      EXPECT_EQ(got->dev, dev);
      EXPECT_EQ(got->alloc_cpu, cpu.id());
      EXPECT_FALSE(got->is_shared());
      EXPECT_EQ(a.ip_id, b.ip_id);
      cpu.free(ref);
      cpu.free(got);
      ++a.seq_num;
      ++b.seq_num;
    }
  }
};

TEST_F(PktgenTemplateTest, SameBytesAsFillPacketAcrossIpIdWrap) {
  ASSERT_FALSE(pktgen_set(cfg, "flag", "NO_TIMESTAMP"));
  expect_same(6, 0xfffc, 0);
}

TEST_F(PktgenTemplateTest, SameBytesWithTimestamps) {
  expect_same(3, 7, 1'700'000'000'123'456'789ull);
}

TEST_F(PktgenTemplateTest, SameBytesAtSixtyFourBytes) {
  ASSERT_FALSE(pktgen_set(cfg, "pkt_size", "64"));
  expect_same(3, 0, 0);
}

TEST_F(PktgenTemplateTest, RefusesWhatItCannotStandFor) {
  PktgenState st;
  st.init(cfg, dev_mac, 1);
  PktgenTemplate t;
  PktgenConfig c = cfg;
  ASSERT_FALSE(pktgen_set(c, "pkt_size", "65"));  // longer than the copied block
  st.cur_pkt_size = 65;
  EXPECT_FALSE(t.build(c, st, pool, dev));
  st.init(cfg, dev_mac, 1);
  c = cfg;
  ASSERT_FALSE(pktgen_set(c, "flag", "UDPCSUM"));  // checksum over the changing payload
  EXPECT_FALSE(t.build(c, st, pool, dev));
  c = cfg;
  ASSERT_FALSE(pktgen_set(c, "dst_max", "1.1.1.9"));  // addresses vary
  EXPECT_FALSE(t.build(c, st, pool, dev));
  c = cfg;
  ASSERT_FALSE(pktgen_set(c, "udp_src_max", "20"));
  EXPECT_FALSE(t.build(c, st, pool, dev));
  c = cfg;
  ASSERT_FALSE(pktgen_set(c, "dst_mac_count", "4"));
  EXPECT_FALSE(t.build(c, st, pool, dev));
  c = cfg;
  ASSERT_FALSE(pktgen_set(c, "queue_map_max", "3"));
  EXPECT_FALSE(t.build(c, st, pool, dev));
  ASSERT_FALSE(pktgen_set(c, "flag", "QUEUE_MAP_CPU"));  // fixed per thread again
  EXPECT_TRUE(t.build(c, st, pool, dev));
  PacketPool tiny(PacketPool::Options{.capacity = 4, .buf_size = 128 + 32, .headroom = 128});
  EXPECT_FALSE(t.build(cfg, st, tiny, dev));  // no room for the 64-byte copy
  EXPECT_TRUE(t.build(cfg, st, pool, dev));
}

TEST_F(PktgenTemplateTest, PoolExhaustionReturnsNull) {
  PacketPool tiny(PacketPool::Options{.capacity = 1});
  Cpu c(tiny, Cpu::Options{.cache_size = 1, .cache_batch = 1});
  PktgenState st;
  st.init(cfg, dev_mac, 1);
  PktgenTemplate t;
  ASSERT_TRUE(t.build(cfg, st, tiny, dev));
  Packet* a = t.fill(c, cfg, st, 0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(t.fill(c, cfg, st, 0), nullptr);
  EXPECT_EQ(c.stats().alloc_fail.get(), 1u);
  c.free(a);
}

}  // namespace
}  // namespace pktpath
