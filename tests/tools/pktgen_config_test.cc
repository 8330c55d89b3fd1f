#include "tools/pktgen_config.h"

#include <gtest/gtest.h>

namespace pktpath {
namespace {

TEST(PktgenConfigTest, DefaultsAreLinuxs) {
  PktgenConfig c;
  EXPECT_EQ(c.count, 1000u);
  EXPECT_EQ(c.min_pkt_size, 60u);
  EXPECT_EQ(c.udp_src_min, 9);
  EXPECT_EQ(c.udp_dst_max, 9);
  EXPECT_EQ(c.burst, 1u);
  EXPECT_EQ(c.mode, PktgenMode::kStartXmit);
}

TEST(PktgenConfigTest, SetsTypedValues) {
  PktgenConfig c;
  EXPECT_FALSE(pktgen_set(c, "count", "400000000"));
  EXPECT_EQ(c.count, 400000000u);
  EXPECT_FALSE(pktgen_set(c, "pkt_size", "128"));
  EXPECT_EQ(c.min_pkt_size, 128u);
  EXPECT_EQ(c.max_pkt_size, 128u);
  EXPECT_FALSE(pktgen_set(c, "dst_mac", "aa:BB:cc:00:11:22"));
  EXPECT_EQ(c.dst_mac[1], 0xbb);
  EXPECT_FALSE(pktgen_set(c, "dst_min", "198.18.0.42"));
  EXPECT_EQ(c.daddr_min, 0xc612002au);
  EXPECT_FALSE(pktgen_set(c, "xmit_mode", "queue_xmit"));
  EXPECT_EQ(c.mode, PktgenMode::kQueueXmit);
  EXPECT_FALSE(pktgen_set(c, "flag", "UDPSRC_RND"));
  EXPECT_TRUE(c.flags & F_UDPSRC_RND);
  EXPECT_FALSE(pktgen_set(c, "flag", "!UDPSRC_RND"));
  EXPECT_FALSE(c.flags & F_UDPSRC_RND);
  EXPECT_FALSE(pktgen_set(c, "ratep", "1000"));
  EXPECT_EQ(c.delay_ns, 1'000'000u);
  EXPECT_FALSE(pktgen_set(c, "pkt_size", "60"));
  EXPECT_FALSE(pktgen_set(c, "rate", "480"));  // 60 B * 8 bits / 480 Mb/s = 1000 ns
  EXPECT_EQ(c.delay_ns, 1000u);
}

struct BadParam {
  const char* key;
  const char* value;
  const char* message_part;
};

TEST(PktgenConfigTest, RejectsBadValuesNamingTheKey) {
  const BadParam cases[] = {
      {"count", "-1", "count: invalid value '-1'"},
      {"count", "12x", "count: invalid value '12x'"},
      {"pkt_size", "20", "pkt_size: invalid value '20'"},
      {"pkt_size", "100000", "pkt_size: invalid value"},
      {"dst", "1.1.1", "dst: invalid value '1.1.1'"},
      {"dst_min", "1.1.1.256", "dst_min: invalid value"},
      {"dst_mac", "11:11:11:11:11", "dst_mac: invalid value"},
      {"dst_mac", "11:11:11:11:11:1g", "dst_mac: invalid value"},
      {"udp_dst_min", "65536", "udp_dst_min: invalid value"},
      {"burst", "0", "burst: invalid value '0'"},
      {"rate", "0", "rate: invalid value '0'"},
      {"flag", "NOPE", "flag: invalid value 'NOPE' (unknown flag)"},
      {"xmit_mode", "fast", "xmit_mode: invalid value 'fast'"},
      {"bogus", "1", "unknown pktgen parameter 'bogus'"},
      {"count", "", "count: invalid value ''"},
  };
  for (const auto& bc : cases) {
    PktgenConfig c;
    auto e = pktgen_set(c, bc.key, bc.value);
    ASSERT_TRUE(e.has_value()) << bc.key << " " << bc.value;
    EXPECT_NE(e->find(bc.message_part), std::string::npos) << *e;
  }
}

TEST(PktgenConfigTest, ValidateCrossFieldRules) {
  PktgenConfig c;
  EXPECT_EQ(pktgen_validate(c).value_or(""), "no device (-i DEV)");
  c.dev = "foo";
  EXPECT_FALSE(pktgen_validate(c));
  c.min_pkt_size = 100;
  c.max_pkt_size = 60;
  EXPECT_FALSE(pktgen_validate(c));  // pktgen accepts it: the size stays at min
  c.max_pkt_size = 100;
  c.mode = PktgenMode::kQueueXmit;
  c.burst = 4;
  EXPECT_NE(pktgen_validate(c).value_or("").find("burst"), std::string::npos);
}

// pktgen_if_write reads tos as up to two hex digits.
TEST(PktgenConfigTest, TosIsHexLikeTheKernel) {
  PktgenConfig c;
  EXPECT_FALSE(pktgen_set(c, "tos", "10"));
  EXPECT_EQ(c.tos, 0x10);
  EXPECT_FALSE(pktgen_set(c, "tos", "ff"));
  EXPECT_EQ(c.tos, 0xff);
  EXPECT_FALSE(pktgen_set(c, "tos", "b8"));
  EXPECT_EQ(c.tos, 0xb8);
  for (const char* bad : {"", "100", "0x10", "zz", "-1"}) {
    auto e = pktgen_set(c, "tos", bad);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_NE(e->find("hex"), std::string::npos) << *e;
  }
}

// One end of a range set alone is accepted, as the kernel does; the value then stays
// at MIN (no variation while min >= max).
TEST(PktgenConfigTest, MinSetAloneIsAccepted) {
  for (const char* key : {"src_min", "dst_min"}) {
    PktgenConfig c;
    c.dev = "foo";
    if (std::string(key) == "dst_min") c.daddr_min = c.daddr_max = 0x01010101;
    EXPECT_FALSE(pktgen_set(c, key, "10.0.0.9"));
    EXPECT_FALSE(pktgen_validate(c)) << key;
  }
  PktgenConfig c;
  c.dev = "foo";
  EXPECT_FALSE(pktgen_set(c, "min_pkt_size", "100"));
  EXPECT_FALSE(pktgen_validate(c));
  EXPECT_FALSE(pktgen_set(c, "udp_src_min", "1000"));
  EXPECT_FALSE(pktgen_validate(c));
}

// A frame larger than a packet buffer could never be built: refused when set.
TEST(PktgenConfigTest, SizeAboveThePacketBufferIsRefused) {
  PktgenConfig c;
  EXPECT_FALSE(pktgen_set(c, "pkt_size", std::to_string(kPktgenMaxSize)));
  for (const char* key : {"pkt_size", "min_pkt_size", "max_pkt_size"}) {
    auto e = pktgen_set(c, key, std::to_string(kPktgenMaxSize + 1));
    ASSERT_TRUE(e.has_value()) << key;
    EXPECT_NE(e->find("a packet buffer holds 1920 bytes"), std::string::npos) << *e;
  }
}

TEST(PktgenConfigTest, ParseHelpers) {
  EXPECT_EQ(parse_ipv4("1.2.3.4"), 0x01020304u);
  EXPECT_FALSE(parse_ipv4("1.2.3.4.5"));
  EXPECT_FALSE(parse_ipv4("1..3.4"));
  EXPECT_FALSE(parse_ipv4(""));
  std::array<uint8_t, 6> m{};
  EXPECT_TRUE(parse_mac("00:11:22:33:44:55", m));
  EXPECT_EQ(m[5], 0x55);
  EXPECT_FALSE(parse_mac("00:11:22:33:44:55:", m));
  EXPECT_FALSE(parse_u64("18446744073709551616"));
}

}  // namespace
}  // namespace pktpath
