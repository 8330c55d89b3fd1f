#include "tools/pktgen_args.h"

#include <gtest/gtest.h>

namespace pktpath {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

TEST(PktgenArgsTest, DocumentZeroReproducerLine) {
  std::string err;
  auto c = parse_pktgen_args(split("-i foo -n 400000000 -m 11:11:11:11:11:11 -d 1.1.1.1"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->cfg.dev, "foo");
  EXPECT_EQ(c->cfg.count, 400000000u);
  EXPECT_EQ(c->cfg.mode, PktgenMode::kQueueXmit);
  EXPECT_EQ(c->cfg.min_pkt_size, 60u);
  EXPECT_EQ(c->cfg.dst_mac[0], 0x11);
  EXPECT_EQ(c->cfg.daddr_min, 0x01010101u);
  EXPECT_EQ(c->cfg.daddr_max, 0x01010101u);
  EXPECT_TRUE(c->cfg.flags & F_QUEUE_MAP_CPU);
  EXPECT_TRUE(c->cfg.flags & F_NO_TIMESTAMP);
  EXPECT_EQ(c->threads, 1u);
}

TEST(PktgenArgsTest, SampleScriptDefaultsAndAllFlags) {
  std::string err;
  auto c = parse_pktgen_args(split("-i foo"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->cfg.count, 10000000u);
  EXPECT_EQ(c->cfg.daddr_min, 0xc612002au);
  EXPECT_EQ(c->cfg.dst_mac[0], 0x90);
  c = parse_pktgen_args(split("-i bar -t 2 -f 1 -s 128 -p 100-200 -k -c 1000 -w 10 --mode start_xmit "
                              "-b 32 --duration 1.5 --repeat 6 --ab bypass=on|off --json --pin -d 10.0.0.0/24 -v"),
                        &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->threads, 2u);
  EXPECT_EQ(c->first_core, 1);
  EXPECT_EQ(c->cfg.min_pkt_size, 128u);
  EXPECT_EQ(c->cfg.udp_dst_min, 100);
  EXPECT_EQ(c->cfg.udp_dst_max, 200);
  EXPECT_TRUE(c->cfg.flags & F_UDPDST_RND);
  EXPECT_TRUE(c->cfg.flags & F_UDPCSUM);
  EXPECT_EQ(c->cfg.clone_skb, 1000u);
  EXPECT_EQ(c->cfg.delay_ns, 10u);
  EXPECT_EQ(c->cfg.mode, PktgenMode::kStartXmit);
  EXPECT_EQ(c->cfg.burst, 32u);
  EXPECT_DOUBLE_EQ(c->cfg.duration_s, 1.5);
  EXPECT_EQ(c->repeat, 6u);
  ASSERT_TRUE(c->ab);
  EXPECT_EQ(c->ab->setting, "bypass");
  EXPECT_EQ(c->ab->a, "on");
  EXPECT_EQ(c->ab->b, "off");
  EXPECT_TRUE(c->json);
  EXPECT_TRUE(c->pin);
  EXPECT_EQ(c->cfg.daddr_min, 0x0a000000u);
  EXPECT_EQ(c->cfg.daddr_max, 0x0a0000ffu);
}

// --ab-order before or after --ab: the order and its seed (0: drawn when the run starts).
TEST(PktgenArgsTest, AbOrder) {
  std::string err;
  auto c = parse_pktgen_args(split("-i foo --ab bypass=on|off --ab-order random:7"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->ab->order, AbOrder::kRandom);
  EXPECT_EQ(c->ab->seed, 7u);
  c = parse_pktgen_args(split("-i foo --ab-order random --ab bypass=on|off"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->ab->setting, "bypass");
  EXPECT_EQ(c->ab->order, AbOrder::kRandom);
  EXPECT_EQ(c->ab->seed, 0u);
  c = parse_pktgen_args(split("-i foo --ab bypass=on|off"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->ab->order, AbOrder::kBalanced);
}

TEST(PktgenArgsTest, BadLinesNameTheFlag) {
  struct Case {
    const char* line;
    const char* message;
  } cases[] = {
      {"-n 10", "-i: missing"},
      {"-i foo -n", "-n: missing value"},
      {"-i foo -n ten", "-n: count: invalid value 'ten'"},
      {"-i foo -t 0", "-t: invalid value '0'"},
      {"-i foo -s 10", "-s: pkt_size: invalid value '10'"},
      {"-i foo -m 11:11", "-m: dst_mac: invalid value '11:11'"},
      {"-i foo -d 1.1.1.1/33", "-d: invalid value '1.1.1.1/33'"},
      {"-i foo -p 200-100", "-p: invalid value '200-100'"},
      {"-i foo -b 4", "-b: bursting is not supported in queue_xmit mode"},
      {"-i foo --mode warp", "--mode: xmit_mode: invalid value 'warp'"},
      {"-i foo --duration -1", "--duration: invalid value '-1'"},
      {"-i foo --repeat 0", "--repeat: invalid value '0'"},
      {"-i foo --ab bypass", "--ab: invalid value 'bypass'"},
      {"-i foo --ab =a|b", "--ab: invalid value '=a|b'"},
      {"-i foo --ab-order random", "--ab-order: needs --ab"},
      {"-i foo --ab bypass=on|off --ab-order shuffled", "--ab-order: invalid value 'shuffled'"},
      {"-i foo --ab bypass=on|off --ab-order random:0", "--ab-order: invalid seed in 'random:0'"},
      {"-i foo --ab bypass=on|off --ab-order random:x", "--ab-order: invalid seed"},
      {"-i foo -z 1", "unknown pktgen flag '-z'"},
      {"-i foo stray", "unexpected word 'stray'"},
      {"-i foo -6", "-6: IPv6 is not supported yet"},
  };
  for (const auto& tc : cases) {
    std::string err;
    EXPECT_FALSE(parse_pktgen_args(split(tc.line), &err)) << tc.line;
    EXPECT_NE(err.find(tc.message), std::string::npos) << tc.line << " -> " << err;
  }
}

TEST(PktgenArgsTest, Ipv4Ranges) {
  uint32_t a, b;
  ASSERT_TRUE(parse_ipv4_range("198.18.0.0/15", &a, &b));
  EXPECT_EQ(a, 0xc6120000u);
  EXPECT_EQ(b, 0xc613ffffu);
  ASSERT_TRUE(parse_ipv4_range("0.0.0.0/0", &a, &b));
  EXPECT_EQ(b, 0xffffffffu);
  EXPECT_FALSE(parse_ipv4_range("1.2.3/8", &a, &b));
  EXPECT_FALSE(parse_ipv4_range("1.2.3.4/", &a, &b));
}

}  // namespace
}  // namespace pktpath
