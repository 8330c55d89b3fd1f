// tc's value syntax and printers (cli/tc/tc_util), against iproute2 6.1's get_u32,
// get_size, get_rate64, get_time, get_tc_classid and print_size/rate/time.
#include "cli/tc/tc_util.h"

#include <gtest/gtest.h>

namespace pktpath::cli::tc {
namespace {

TEST(TcLexer, NumbersTakeBaseZero) {
  EXPECT_EQ(*get_u32("16", 0), 16u);
  EXPECT_EQ(*get_u32("0x10", 0), 16u);
  EXPECT_EQ(*get_u32("010", 0), 8u);  // strtoul base 0: octal
  EXPECT_EQ(*get_u32("4294967295", 0), 4294967295u);
  EXPECT_FALSE(get_u32("4294967296", 0));
  EXPECT_FALSE(get_u32("-1", 0));
  EXPECT_FALSE(get_u32("", 0));
  EXPECT_FALSE(get_u32("12x", 0));
  EXPECT_EQ(get_u32("12x", 0).error().word, "12x");
  EXPECT_EQ(*get_u64("0xffffffffffffffff", 0), ~uint64_t{0});
}

TEST(TcLexer, Handles) {
  EXPECT_EQ(*get_qdisc_handle("1:"), 0x10000u);
  EXPECT_EQ(*get_qdisc_handle("ffff:"), 0xffff0000u);
  EXPECT_EQ(*get_qdisc_handle("8001"), 0x80010000u);
  EXPECT_FALSE(get_qdisc_handle("1:2"));
  EXPECT_FALSE(get_qdisc_handle("10000:"));
  EXPECT_EQ(*get_tc_classid("root"), 0xffffffffu);
  EXPECT_EQ(*get_tc_classid("1:2"), 0x10002u);
  EXPECT_EQ(*get_tc_classid("8001:a"), 0x8001000au);
  EXPECT_EQ(*get_tc_classid(":3"), 3u);
  EXPECT_EQ(*get_tc_classid("1:"), 0x10000u);
  EXPECT_EQ(*get_tc_classid("ffff:fff1"), 0xfffffff1u);
  EXPECT_FALSE(get_tc_classid("1:2:3"));
  EXPECT_FALSE(get_tc_classid("12345:"));
}

TEST(TcLexer, Sizes) {
  EXPECT_EQ(*get_size("1600"), 1600u);
  EXPECT_EQ(*get_size("1600b"), 1600u);
  EXPECT_EQ(*get_size("10kb"), 10240u);
  EXPECT_EQ(*get_size("10K"), 10240u);
  EXPECT_EQ(*get_size("1mb"), 1048576u);
  EXPECT_EQ(*get_size("1m"), 1048576u);
  EXPECT_EQ(*get_size("8kbit"), 1024u);
  EXPECT_FALSE(get_size("10q"));
  EXPECT_FALSE(get_size("1.2.3"));
  EXPECT_FALSE(get_size("5gb"));  // over 32 bits
}

TEST(TcLexer, Rates) {
  EXPECT_EQ(*get_rate64("8kbit"), 1000u);
  EXPECT_EQ(*get_rate64("1mbit"), 125000u);
  EXPECT_EQ(*get_rate64("1gbit"), 125000000u);
  EXPECT_EQ(*get_rate64("1.5Gbit"), 187500000u);
  EXPECT_EQ(*get_rate64("8000"), 1000u);  // bare: bits per second
  EXPECT_EQ(*get_rate64("100mbps"), 100000000u);  // bytes
  EXPECT_EQ(*get_rate64("10kbps"), 10000u);
  EXPECT_EQ(*get_rate64("1Kibit"), 128u);
  EXPECT_FALSE(get_rate64("fast"));
  EXPECT_FALSE(get_rate64("1mbitz"));
}

TEST(TcLexer, Times) {
  EXPECT_EQ(*get_time("10ms"), 10'000'000u);
  EXPECT_EQ(*get_time("1s"), 1'000'000'000u);
  EXPECT_EQ(*get_time("500us"), 500'000u);
  EXPECT_EQ(*get_time("20"), 20'000u);  // bare: microseconds
  EXPECT_EQ(*get_time("1.5sec"), 1'500'000'000u);
  EXPECT_FALSE(get_time("5min"));
}

TEST(TcLexer, MatchesIsAPrefix) {
  EXPECT_TRUE(matches("q", "qdisc"));
  EXPECT_TRUE(matches("qd", "qdisc"));
  EXPECT_TRUE(matches("qdisc", "qdisc"));
  EXPECT_FALSE(matches("qdiscs", "qdisc"));
  EXPECT_FALSE(matches("", "qdisc"));
  EXPECT_TRUE(matches("fi", "filter"));
}

TEST(TcLexer, LexerValues) {
  const std::vector<std::string> w = {"limit", "10", "burst"};
  Lexer lx(w);
  EXPECT_EQ(lx.next(), "limit");
  EXPECT_EQ(*lx.value("limit"), "10");
  EXPECT_EQ(lx.next(), "burst");
  auto v = lx.value("burst");
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().word, "burst");
  EXPECT_TRUE(lx.done());
  EXPECT_EQ(lx.peek(), "");
}

// iproute2 6.1's print_size, print_rate, print_time.
TEST(TcPrint, AsIproute2) {
  EXPECT_EQ(sprint_size(1600), "1600b");
  EXPECT_EQ(sprint_size(4096), "4Kb");
  EXPECT_EQ(sprint_size(1514), "1514b");
  EXPECT_EQ(sprint_size(1048576), "1Mb");
  EXPECT_EQ(sprint_size(1514000), "1514000b");
  EXPECT_EQ(sprint_size(0), "0b");
  EXPECT_EQ(sprint_rate(1000), "8Kbit");
  EXPECT_EQ(sprint_rate(125000), "1Mbit");
  EXPECT_EQ(sprint_rate(125000000), "1Gbit");
  EXPECT_EQ(sprint_rate(100), "800bit");
  EXPECT_EQ(sprint_rate(187500000), "1500Mbit");
  EXPECT_EQ(sprint_time(500), "500us");
  EXPECT_EQ(sprint_time(10000), "10ms");
  EXPECT_EQ(sprint_time(1500000), "1.5s");
  EXPECT_EQ(sprint_time(98400000), "98.4s");
}

// Each kind's q_<kind>.cc parses and prints its own words.
TEST(TcKinds, QdiscUtilsRoundTrip) {
  auto parse_print = [](const char* kind, std::vector<std::string> words) {
    const QdiscUtil* u = get_qdisc_util(kind);
    EXPECT_NE(u, nullptr) << kind;
    Lexer lx(words);
    auto o = u->parse_qopt(lx);
    EXPECT_TRUE(o) << o.error().msg;
    PrintSink p(false);
    u->print_qopt(*o, p);
    return p.take_text();
  };
  EXPECT_EQ(parse_print("pfifo", {"limit", "0x10"}), "limit 16p");
  EXPECT_EQ(parse_print("bfifo", {"limit", "4kb"}), "limit 4Kb");
  EXPECT_EQ(parse_print("prio", {"bands", "3", "priomap", "2", "2", "0"}),
            "bands 3 priomap 2 2 0 2 1 2 0 0 1 1 1 1 1 1 1 1");
  // tbf's dump carries the limit; parsed options with a limit print the same way.
  EXPECT_EQ(parse_print("tbf", {"rate", "1mbit", "burst", "1500", "limit", "7750"}),
            "rate 1Mbit burst 1500b lat 50ms ");
  for (const char* k : {"noqueue", "mq", "pfifo_fast", "clsact", "ingress"})
    EXPECT_NE(get_qdisc_util(k), nullptr) << k;
  for (const char* k : {"gact", "mirred", "skbedit"}) EXPECT_NE(get_action_util(k), nullptr) << k;
  EXPECT_NE(get_filter_util("bpf"), nullptr);
}

}  // namespace
}  // namespace pktpath::cli::tc
