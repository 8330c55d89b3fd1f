// Script runner tests: tokenizer, units, every command, a table of bad lines with the
// word each error names, exit codes and file:line reporting, nothing half-applied.
#include "cli/script.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/script_exec.h"
#include "sched/sch_api.h"
#include "sched/sch_prio.h"

namespace pktpath::cli {
namespace {

std::string temp_script(const std::string& text) {
  static int n = 0;
  std::string path = ::testing::TempDir() + "/pp_script_" + std::to_string(::getpid()) + "_" +
                     std::to_string(n++) + ".pp";
  std::ofstream(path) << text;
  return path;
}

struct RunResult {
  int rc;
  std::string out, err;
};

RunResult run_script(const std::string& text, bool json = false) {
  const std::string path = temp_script(text);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::vector<std::string> args = {"run"};
  if (json) args.push_back("--json");
  args.push_back(path);
  int rc = run_main(args);
  std::fflush(stdout);
  RunResult r{rc, ::testing::internal::GetCapturedStdout(),
              ::testing::internal::GetCapturedStderr()};
  std::remove(path.c_str());
  return r;
}

TEST(ScriptTokenize, QuotesCommentsAndErrors) {
  std::vector<std::string> w;
  ScriptError e;
  ASSERT_TRUE(tokenize_line("  tc  filter 'a b' \"c\"d # comment 'x", w, e));
  EXPECT_EQ(w, (std::vector<std::string>{"tc", "filter", "a b", "cd"}));
  ASSERT_TRUE(tokenize_line("# only a comment", w, e));
  EXPECT_TRUE(w.empty());
  ASSERT_TRUE(tokenize_line("a#b", w, e));
  EXPECT_EQ(w, (std::vector<std::string>{"a#b"}));
  EXPECT_FALSE(tokenize_line("tc 'open", w, e));
  EXPECT_EQ(e.msg, "unterminated quote");
  EXPECT_FALSE(tokenize_line(std::string("ip \x01"), w, e));
}

TEST(ScriptUnits, Mac) {
  std::array<uint8_t, 6> mac;
  ASSERT_TRUE(parse_mac("11:22:33:aa:bb:cc", mac));
  EXPECT_EQ(mac[5], 0xcc);
  EXPECT_FALSE(parse_mac("11:22:33:aa:bb", mac));
  EXPECT_FALSE(parse_mac("11-22-33-aa-bb-cc", mac));
}

// Every bad line gives an error naming the word it is about.
struct BadLine {
  const char* line;
  const char* word;
  const char* msg_part;
};

const BadLine kBadLines[] = {
    {"frobnicate", "frobnicate", "unknown command"},
    {"ip", "", "needs an object"},
    {"ip addr add 1.2.3.4 dev foo", "addr", "unsupported ip object"},
    {"ip -x link show", "-x", "unknown ip option"},
    {"ip link frob", "frob", "unknown ip link command"},
    {"ip link add dev foo", "", "needs \"type KIND\""},
    {"ip link add type dummy", "add", "needs a device name"},
    {"ip link add dev foo numtxqueues 0 type dummy", "0", "numtxqueues"},
    {"ip link add dev foo numtxqueues many type dummy", "many", "numtxqueues"},
    {"ip link add dev foo txqueuelen -1 type dummy", "-1", "txqueuelen"},
    {"ip link add dev foo mtu 20 type dummy", "20", "mtu"},
    {"ip link add dev foo address 11:22 type dummy", "11:22", "MAC"},
    {"ip link add dev foo bogus 1 type dummy", "bogus", "unknown option"},
    {"ip link add dev foo type dummy extra", "extra", "after the link type"},
    {"ip link add dev foo mtu", "mtu", "needs a value"},
    {"ip link set dev foo", "", "nothing to change"},
    {"ip link set dev foo up sideways", "sideways", "unknown option"},
    {"ip link del", "", "needs a device"},
    {"ip link show dev foo bar", "bar", "unexpected"},
    {"tc", "", "needs an object"},
    {"tc qdisc", "", "needs \"dev DEV\""},  // bare `tc qdisc` is show: see GoodLines
    {"tc -q qdisc show", "-q", "unknown tc option"},
    {"tc qdisc frob dev foo root pfifo", "frob", "unknown tc qdisc command"},
    {"tc qdisc add dev foo root cake", "cake", "Specified qdisc kind is unknown"},
    {"tc qdisc add dev foo pfifo", "pfifo", "needs \"root\" or \"parent"},
    {"tc qdisc add root pfifo", "pfifo", "needs \"dev DEV\""},
    {"tc qdisc add dev foo root", "", "needs a qdisc kind"},
    {"tc qdisc add dev foo root root pfifo", "root", "given twice"},
    {"tc qdisc add dev foo parent 1 pfifo", "1", "bad parent"},
    {"tc qdisc add dev foo parent 0: pfifo", "0:", "bad parent"},
    {"tc qdisc add dev foo root handle 1:2 pfifo", "1:2", "invalid qdisc ID"},
    {"tc qdisc add dev foo root pfifo limit", "limit", "needs a value"},
    {"tc qdisc add dev foo root pfifo limit lots", "lots", "bad limit"},
    {"tc qdisc add dev foo root pfifo size 3", "size", "unknown option"},
    {"tc qdisc add dev foo root bfifo limit 10zb", "10zb", "bad limit"},
    {"tc qdisc add dev foo root pfifo_fast bands 3", "bands", "takes no options"},
    {"tc qdisc add dev foo root mq foo", "foo", "takes no options"},
    {"tc qdisc add dev foo root prio bands 1", "1", "bands must be 2..16"},
    {"tc qdisc add dev foo root prio bands 2", "bands", "not a band"},
    {"tc qdisc add dev foo root prio priomap", "priomap", "needs band numbers"},
    {"tc qdisc add dev foo root prio priomap 0 1 2 3", "priomap", "not a band"},
    {"tc qdisc add dev foo root prio weights 1", "weights", "unknown option"},
    {"tc qdisc add dev foo root tbf rate 1mbit burst 10k", "tbf", "exactly one of"},
    {"tc qdisc add dev foo root tbf burst 10k limit 10k", "tbf", "needs \"rate\""},
    {"tc qdisc add dev foo root tbf rate 1mbit limit 10k", "tbf", "needs \"burst\""},
    {"tc qdisc add dev foo root tbf rate fast burst 10k limit 1k", "fast", "bad rate"},
    {"tc qdisc add dev foo root tbf rate 1mbit burst 0 limit 1k", "0", "bad burst"},
    {"tc qdisc add dev foo root tbf rate 1mbit burst 1k latency 5min", "5min", "bad latency"},
    {"tc qdisc add dev foo root tbf rate 1mbit burst 1k limit 1k peakrate 2mbit", "peakrate",
     "not supported"},
    {"tc qdisc show dev", "dev", "needs a value"},
    {"tc qdisc show foo", "foo", "unexpected"},
    {"sleep", "", "usage: sleep"},
    {"sleep soon", "soon", "bad sleep time"},
    {"sleep 1 2", "2", "usage: sleep"},
    {"send dev foo", "send", "needs \"count N\""},
    {"send count 10", "send", "needs \"dev DEV\""},
    {"send dev foo count 0", "0", "bad count"},
    {"send dev foo count 10 size 9", "9", "size must be"},
    {"send dev foo count 10 threads 0", "0", "threads must be"},
    {"send dev foo count 10 speed 3", "speed", "unknown send option"},
    {"send dev foo count", "count", "needs a value"},
};

TEST(ScriptParse, BadLinesNameTheirWord) {
  for (const BadLine& b : kBadLines) {
    SCOPED_TRACE(b.line);
    std::vector<std::string> w;
    ScriptError e;
    ASSERT_TRUE(tokenize_line(b.line, w, e));
    ScriptCommand c;
    if (std::string(b.line) == "tc qdisc") {
      // `tc qdisc` alone is a show: it parses.
      EXPECT_TRUE(parse_command(w, c, e));
      continue;
    }
    ASSERT_FALSE(parse_command(w, c, e));
    EXPECT_EQ(e.word, b.word);
    EXPECT_NE(e.msg.find(b.msg_part), std::string::npos) << e.msg;
  }
}

TEST(ScriptParse, GoodLines) {
  const char* good[] = {
      "ip link add dev foo type dummy",
      "ip link add foo numtxqueues 4 txqueuelen 100 address 02:00:00:00:00:aa mtu 9000 type "
      "testdrv",
      "ip link add name foo type dummy",
      "ip link set dev foo up",
      "ip link set foo down",
      "ip link set dev foo mtu 1400",
      "ip link del dev foo",
      "ip link delete foo",
      "ip -s link show",
      "ip -s link show dev foo",
      "ip link",
      "tc qdisc",
      "tc -s qdisc show",
      "tc -s -j qdisc show dev foo",
      "tc qdisc ls dev foo",
      "tc qdisc add dev foo root handle 1: prio bands 4 priomap 3 3 3 3 2 2 2 2 1 1 1 1 0 0 0 0",
      "tc qdisc replace dev foo parent 1:2 tbf rate 1mbit burst 1600 latency 50ms",
      "tc qdisc change dev foo root pfifo limit 10",
      "tc qdisc del dev foo root",
      "tc qdisc delete dev foo parent 1:1 pfifo",
      "tc qdisc add dev foo root bfifo limit 64kb",
      "tc qdisc add dev foo root mq",
      "tc qdisc add dev foo root noqueue",
      "tc qdisc add dev foo root pfifo_fast",
      "sleep 0.5",
      "send dev foo count 1000 size 128 threads 2 priority 6",
  };
  for (const char* l : good) {
    SCOPED_TRACE(l);
    std::vector<std::string> w;
    ScriptError e;
    ASSERT_TRUE(tokenize_line(l, w, e));
    ScriptCommand c;
    EXPECT_TRUE(parse_command(w, c, e)) << e.msg << " at " << e.word;
  }
}

TEST(ScriptRun, ShowsInTcLayout) {
  RunResult r = run_script(
      "# comment line\n"
      "ip link add dev foo type dummy\n"
      "ip link set dev foo up\n"
      "\n"
      "send dev foo count 10\n"
      "tc -s qdisc show dev foo\n"
      "ip link add dev t0 txqueuelen 64 type testdrv   # trailing comment\n"
      "ip link set dev t0 up\n"
      "send dev t0 count 5 size 100\n"
      "tc -s qdisc show dev t0\n"
      "tc qdisc replace dev t0 root handle 1: pfifo limit 7\n"
      "tc qdisc show\n"
      "tc qdisc del dev t0 root\n"
      "tc qdisc show dev t0\n"
      "ip -s link show dev foo\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string expect_foo =
      "qdisc noqueue 0: root refcnt 2 \n"
      " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
      " backlog 0b 0p requeues 0\n";
  EXPECT_NE(r.out.find(expect_foo), std::string::npos) << r.out;
  const std::string expect_t0 =
      "qdisc pfifo_fast 0: root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n"
      " Sent 500 bytes 5 pkt (dropped 0, overlimits 0 requeues 0) \n"
      " backlog 0b 0p requeues 0\n";
  EXPECT_NE(r.out.find(expect_t0), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find(
          "qdisc noqueue 0: dev foo root refcnt 2 \nqdisc pfifo 1: dev t0 root refcnt 2 limit 7p\n"),
      std::string::npos)
      << r.out;
  // After del root, the default is back.
  EXPECT_NE(r.out.find("qdisc pfifo_fast 0: root refcnt 2 bands 3"), r.out.rfind("qdisc pfifo 1:"))
      << r.out;
  EXPECT_NE(
      r.out.find("2: foo: <BROADCAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc noqueue state UNKNOWN"),
      std::string::npos);
  EXPECT_NE(r.out.find("          600      10      0       0       0       0"), std::string::npos)
      << r.out;
}

TEST(ScriptRun, JsonLinesShapes) {
  RunResult r = run_script(
      "ip link add dev m0 numtxqueues 2 type testdrv\n"
      "ip link set dev m0 up\n"
      "send dev m0 count 100 threads 2\n"
      "tc -s qdisc show dev m0\n"
      "ip -s link show\n",
      /*json=*/true);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::vector<nlohmann::json> docs;
  while (std::getline(in, line)) docs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0]["send"]["packets"], 100);
  EXPECT_EQ(docs[0]["send"]["errors"], 0);
  const nlohmann::json& q = docs[1];
  ASSERT_EQ(q.size(), 3u);  // mq + 2 children
  EXPECT_EQ(q[0]["kind"], "mq");
  EXPECT_EQ(q[0]["handle"], "0:");
  EXPECT_EQ(q[0]["packets"], 100);
  for (const char* k :
       {"kind", "handle", "bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen"})
    EXPECT_TRUE(q[1].contains(k)) << k;
  EXPECT_EQ(q[1]["parent"], ":2");  // the qdisc hash's order: mq's children newest first
  EXPECT_EQ(docs[2][1]["ifname"], "m0");
  EXPECT_EQ(docs[2][1]["stats64"]["tx"]["packets"], 100);
}

TEST(ScriptRun, StoppedQueueTbfAndSleep) {
  RunResult r = run_script(
      "ip link add dev s0 type dummy\n"
      "ip link set dev s0 up\n"
      "tc qdisc add dev s0 root tbf rate 800kbit burst 1514 limit 100k\n"
      "send dev s0 count 50 size 1000\n"
      "tc -s qdisc show dev s0\n"
      "sleep 0.7\n"
      "tc -s qdisc show dev s0\n",
      true);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::vector<nlohmann::json> docs;
  while (std::getline(in, line)) docs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(docs.size(), 3u);
  // 800 kbit/s = 100 kB/s: the 50 kB take 0.5 s, so right after the send most are still
  // queued (even on a slow, loaded machine); after 0.7 s all are out.
  EXPECT_LT(docs[1][0]["packets"].get<int>(), 50);
  EXPECT_GT(docs[1][0]["qlen"].get<int>(), 0);
  EXPECT_EQ(docs[2][0]["packets"], 50);
  EXPECT_EQ(docs[2][0]["qlen"], 0);
  EXPECT_GT(docs[2][0]["overlimits"].get<int>(), 0);
}

TEST(ScriptRun, ErrorsNameFileLineAndWordExitOne) {
  // A parse error anywhere: nothing runs (the first line's output never appears).
  RunResult r = run_script(
      "ip link add dev foo type dummy\ntc -s qdisc show\ntc qdisc add dev foo root prio bands "
      "99\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(":3: bands must be 2..16 (at \"99\")"), std::string::npos) << r.err;
  // A runtime error stops the script at that line.
  r = run_script("ip link add dev foo type dummy\nip link set dev bar up\ntc qdisc show\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2: Cannot find device \"bar\" (at \"bar\")"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  r = run_script("ip link add dev foo type dummy\nip link add dev foo type dummy\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2: device \"foo\" already exists"), std::string::npos) << r.err;
  r = run_script("ip link add dev foo type veth0\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("(at \"veth0\")"), std::string::npos) << r.err;
  r = run_script("ip link add dev foo type dummy\ntc qdisc add dev foo root mq\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2: mq needs a multi-queue device"), std::string::npos) << r.err;
  r = run_script(
      "ip link add dev f type dummy\ntc qdisc add dev f root pfifo\ntc qdisc add dev f root "
      "bfifo\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":3: Exclusivity flag on"), std::string::npos) << r.err;
  // Usage errors exit 2.
  EXPECT_EQ(run_main({"run"}), 2);
  EXPECT_EQ(run_main({"run", "/nonexistent/script.pp"}), 1);
}

// veth in `ip -s link show`: NAME@PEER, no carrier while the peer is down, and the RX
// counters are what the peer's transmit handed over (veth_get_stats64), including
// frames that tc ingress then dropped.
TEST(ScriptRun, VethLinkShowsPeerAndItsTransmitAsReceive) {
  RunResult r = run_script(
      "ip link add a type veth peer name b\n"
      "ip link set dev a up\n"
      "ip link show dev a\n"
      "ip link set dev b up\n"
      "tc qdisc add dev b clsact\n"
      "tc filter add dev b ingress matchall action drop\n"
      "send dev a count 7 size 100\n"
      "ip -s link show dev b\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("a@b: <NO-CARRIER,BROADCAST,MULTICAST,UP>"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("state LOWERLAYERDOWN"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("b@a: <BROADCAST,MULTICAST,UP,LOWER_UP>"), std::string::npos) << r.out;
  // RX: bytes packets errors dropped missed mcast
  EXPECT_NE(r.out.find("           700       7      0       0       0       0"), std::string::npos) << r.out;
}

TEST(ScriptRun, FailedLineChangesNothing) {
  ScriptRunner runner(false, stdout);
  ScriptError e;
  IpLinkAdd add;
  add.cfg.name = "foo";
  add.kind = "testdrv";
  ASSERT_TRUE(runner.execute(add, e));
  IpLinkSet up;
  up.dev = "foo";
  up.up = true;
  ASSERT_TRUE(runner.execute(up, e));
  Qdisc* before = runner.table().find("foo")->qdisc();
  QdiscRequest bad;
  bad.op = QdiscOp::Replace;
  bad.kind = "prio";
  PrioOptions po;
  po.bands = 2;  // default priomap names band 2: rejected at init
  bad.opts = po;
  EXPECT_FALSE(tc_qdisc_modify(runner.table(), *runner.table().find("foo"), bad));
  EXPECT_EQ(runner.table().find("foo")->qdisc(), before);
  EXPECT_STREQ(before->kind(), "pfifo_fast");
}

}  // namespace
}  // namespace pktpath::cli
