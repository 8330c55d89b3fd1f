// tc lines for fq_codel, codel, sfq and pfifo_head_drop: iproute2's words, `tc qdisc
// show` and `tc -s qdisc show` text (with the xstats lines), `tc -j` keys, and the word
// each parse error names.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/script.h"
#include "cli/script_exec.h"

namespace pktpath::cli {
namespace {

class AqmCli : public ::testing::Test {
 protected:
  AqmCli() : out_(std::tmpfile()), runner_(false, out_) {
    run("ip link add dev t0 type testdrv");
    run("ip link set dev t0 up");
  }
  ~AqmCli() override { std::fclose(out_); }
  void run(const std::string& line) {
    std::vector<std::string> w;
    ScriptCommand c;
    ScriptError e;
    ASSERT_TRUE(tokenize_line(line, w, e) && parse_command(w, c, e) && runner_.execute(c, e))
        << line << ": " << e.word << ": " << e.msg;
  }
  // The output of `line` alone.
  std::string show(const std::string& line) {
    std::fflush(out_);
    const long start = std::ftell(out_);
    run(line);
    std::fflush(out_);
    std::fseek(out_, start, SEEK_SET);
    std::string s;
    char b[4096];
    size_t n;
    while ((n = std::fread(b, 1, sizeof b, out_)) > 0) s.append(b, n);
    std::fseek(out_, 0, SEEK_END);
    return s;
  }
  std::FILE* out_;
  ScriptRunner runner_;
};

TEST_F(AqmCli, FqCodelShowAndStats) {
  run("tc qdisc add dev t0 root handle 1: fq_codel");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc fq_codel 1: root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms "
            "memory_limit 32Mb ecn drop_batch 64\n");
  EXPECT_EQ(show("tc -s qdisc show dev t0"),
            "qdisc fq_codel 1: root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms "
            "memory_limit 32Mb ecn drop_batch 64\n"
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n"
            "  maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n"
            "  new_flows_len 0 old_flows_len 0\n");
  run("tc qdisc replace dev t0 root handle 1: fq_codel limit 100 flows 64 quantum 300 target 2ms interval 50ms "
      "ce_threshold 1ms memory_limit 4mb drop_batch 8 noecn");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc fq_codel 1: root refcnt 2 limit 100p flows 64 quantum 300 target 2ms ce_threshold 999us "
            "interval 50ms memory_limit 4Mb drop_batch 8\n");
  const auto j = nlohmann::json::parse(show("tc -s -j qdisc show dev t0"))[0];
  EXPECT_EQ(j["kind"], "fq_codel");
  EXPECT_EQ(j["options"]["limit"], 100);
  EXPECT_EQ(j["options"]["flows"], 64);
  EXPECT_EQ(j["options"]["quantum"], 300);
  EXPECT_EQ(j["options"]["target"], 1999);
  EXPECT_EQ(j["options"]["interval"], 49999);
  EXPECT_EQ(j["options"]["memory_limit"], 4 << 20);
  EXPECT_EQ(j["options"]["drop_batch"], 8);
  EXPECT_FALSE(j["options"].contains("ecn"));
  for (const char* k : {"maxpacket", "drop_overlimit", "new_flow_count", "ecn_mark", "new_flows_len", "old_flows_len"})
    EXPECT_TRUE(j.contains(k)) << k;
}

TEST_F(AqmCli, CodelShowAndStats) {
  run("tc qdisc add dev t0 root handle 2: codel limit 500 target 10ms ecn");
  EXPECT_EQ(show("tc -s qdisc show dev t0"),
            "qdisc codel 2: root refcnt 2 limit 500p target 10ms interval 100ms ecn\n"
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n"
            "  count 0 lastcount 0 ldelay 0us drop_next 0us\n"
            "  maxpacket 0 ecn_mark 0 drop_overlimit 0\n");
  const auto j = nlohmann::json::parse(show("tc -s -j qdisc show dev t0"))[0];
  EXPECT_EQ(j["options"]["limit"], 500);
  EXPECT_EQ(j["options"]["ecn"], true);
  for (const char* k : {"count", "lastcount", "ldelay", "drop_next", "maxpacket", "ecn_mark", "drop_overlimit"})
    EXPECT_TRUE(j.contains(k)) << k;
}

TEST_F(AqmCli, SfqAndPfifoHeadDropShow) {
  run("tc qdisc add dev t0 root handle 3: sfq");
  EXPECT_EQ(show("tc qdisc show dev t0"), "qdisc sfq 3: root refcnt 2 limit 127p quantum 1514b depth 127 divisor 1024\n");
  run("tc qdisc replace dev t0 root handle 3: sfq perturb 10 quantum 3000 limit 64 depth 20 headdrop divisor 256");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc sfq 3: root refcnt 2 limit 64p quantum 3000b depth 20 headdrop divisor 256 perturb 10sec\n");
  const auto j = nlohmann::json::parse(show("tc -j qdisc show dev t0"))[0];
  EXPECT_EQ(j["options"]["limit"], 64);
  EXPECT_EQ(j["options"]["headdrop"], true);
  EXPECT_EQ(j["options"]["perturb"], 10);
  run("tc qdisc replace dev t0 root handle 4: pfifo_head_drop limit 5");
  EXPECT_EQ(show("tc qdisc show dev t0"), "qdisc pfifo_head_drop 4: root refcnt 2 limit 5p\n");
}

// As a child: under prio and as mq's per-queue qdisc.
TEST_F(AqmCli, AsChildren) {
  run("tc qdisc add dev t0 root handle 1: prio");
  run("tc qdisc add dev t0 parent 1:1 handle 10: fq_codel");
  run("tc qdisc add dev t0 parent 1:2 handle 20: sfq");
  run("send dev t0 count 20 size 200");
  const std::string out = show("tc qdisc show dev t0");
  EXPECT_NE(out.find("qdisc fq_codel 10: parent 1:1 limit 10240p"), std::string::npos) << out;
  EXPECT_NE(out.find("qdisc sfq 20: parent 1:2 limit 127p"), std::string::npos) << out;
  run("ip link add dev m0 numtxqueues 4 type testdrv");
  run("ip link set dev m0 up");
  run("tc qdisc add dev m0 root handle 1: mq");
  run("tc qdisc add dev m0 parent 1:3 handle 30: codel");
  const std::string m = show("tc qdisc show dev m0");
  EXPECT_NE(m.find("qdisc codel 30: parent 1:3 limit 1000p"), std::string::npos) << m;
}

bool parse_line(const std::string& line, ScriptCommand& c, ScriptError& e) {
  std::vector<std::string> w;
  if (!tokenize_line(line, w, e)) return false;
  return parse_command(w, c, e);
}

TEST(AqmCliErrors, MalformedLinesNameTheWord) {
  struct Row {
    const char* line;
    const char* word;
    const char* message;
  };
  const Row rows[] = {
      {"tc qdisc add dev t0 root fq_codel limit lots", "lots", "bad limit"},
      {"tc qdisc add dev t0 root fq_codel flows", "flows", "needs a value"},
      {"tc qdisc add dev t0 root fq_codel target 5parsecs", "5parsecs", "bad target"},
      {"tc qdisc add dev t0 root fq_codel memory_limit much", "much", "bad memory_limit"},
      {"tc qdisc add dev t0 root fq_codel ecn wibble", "wibble", "unknown option"},
      {"tc qdisc add dev t0 root fq_codel ce_threshold_selector 1/1", "ce_threshold_selector", "not supported"},
      {"tc qdisc add dev t0 root codel interval x", "x", "bad interval"},
      {"tc qdisc add dev t0 root codel flows 4", "flows", "unknown option"},
      {"tc qdisc add dev t0 root sfq limit 1", "1", "must be > 1"},
      {"tc qdisc add dev t0 root sfq perturb -1", "-1", "bad perturb"},
      {"tc qdisc add dev t0 root sfq redflowlimit 1000", "redflowlimit", "not supported"},
      {"tc qdisc add dev t0 root sfq divisor", "divisor", "needs a value"},
      {"tc qdisc add dev t0 root pfifo_head_drop limit q", "q", "bad limit"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.line);
    ScriptCommand c;
    ScriptError e;
    EXPECT_FALSE(parse_line(r.line, c, e));
    EXPECT_EQ(e.word, r.word) << e.msg;
    EXPECT_NE(e.msg.find(r.message), std::string::npos) << e.msg;
  }
}

}  // namespace
}  // namespace pktpath::cli
