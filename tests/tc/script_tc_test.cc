// Script lines: tc clsact/filter/show and nft through the `pktpath run` runner, and the
// table of malformed lines with the word each message names.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "script_runner.h"
#include "core/cpu.h"
#include "sched/clsact.h"

namespace pktpath::cli {
namespace {

struct BadLine {
  const char* line;
  const char* word;     // the word the error must name
  const char* message;  // a part of the message
};

TEST(TcScript, MalformedLinesNameTheWord) {
  const BadLine rows[] = {
      {"tc filter add dev foo egress bpf da bytecode '1,6 0 0'", "1,6 0 0", "bytecode"},
      {"tc filter add dev foo egress bpf da bytecode '2,6 0 0 0,'", "2,6 0 0 0,", "bytecode"},
      {"tc filter add dev foo egress bpf da", "bpf", "needs bytecode"},
      {"tc filter add dev foo egress fw classid 1:1", "fw", "unknown filter kind"},
      {"tc filter add dev foo bpf da bytecode '1,6 0 0 0,'", "foo", "egress or ingress"},
      {"tc filter add egress bpf da bytecode '1,6 0 0 0,'", "filter", "dev"},
      {"tc filter add dev foo egress pref 0 bpf da bytecode '1,6 0 0 0,'", "0", "bad pref"},
      {"tc filter add dev foo egress pref x bpf da bytecode '1,6 0 0 0,'", "x", "bad pref"},
      {"tc filter add dev foo egress handle zz bpf da bytecode '1,6 0 0 0,'", "zz", "bad handle"},
      {"tc filter add dev foo egress protocol ipx bpf bytecode '1,6 0 0 0,'", "ipx", "unknown protocol"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' classid 1:2:3", "1:2:3", "bad classid"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action frobnicate", "frobnicate", "unknown action"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action gact maybe", "maybe", "gact"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action mirred sideways redirect dev bar", "sideways",
       "egress or ingress"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action mirred egress bounce dev bar", "bounce",
       "redirect or mirror"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action mirred egress redirect bar", "bar", "dev"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action skbedit mark", "mark", "needs a value"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action skbedit queue_mapping 70000", "70000",
       "out of range"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' action skbedit", "skbedit", "needs"},
      {"tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,' action drop", "action", "da"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' bytecode '1,6 0 0 0,'", "bytecode", "one program"},
      {"tc filter add dev foo egress bpf expr 'tcp port'", "tcp port", "expr"},
      {"tc filter add dev foo egress bpf bytecode-file /nonexistent/x", "/nonexistent/x", "bytecode-file"},
      {"tc filter add dev foo egress bpf bytecode '1,6 0 0 0,' wibble", "wibble", "unexpected word"},
      {"tc filter frob dev foo egress", "frob", "unknown tc filter command"},
      {"tc filter del dev foo egress handle 1", "handle", "needs pref"},
      {"tc filter show dev foo egress extra", "extra", "unexpected word"},
      {"tc qdisc add dev foo clsact extra", "extra", "no options"},
      {"tc qdisc add clsact", "clsact", "dev"},
      {"tc qdisc change dev foo clsact", "change", "clsact supports"},
      {"tc qdisc add dev t0 root fq_codel limit lots", "lots", "bad limit"},
      {"tc qdisc add dev t0 root fq_codel flows", "flows", "needs a value"},
      {"tc qdisc add dev t0 root fq_codel target 5parsecs", "5parsecs", "bad target"},
      {"tc qdisc add dev t0 root fq_codel memory_limit much", "much", "bad memory_limit"},
      {"tc qdisc add dev t0 root fq_codel ecn wibble", "wibble", "unknown option"},
      {"tc qdisc add dev t0 root fq_codel ce_threshold_selector 1/1", "ce_threshold_selector", "not supported"},
      {"tc qdisc add dev t0 root netem delay soon", "soon", "bad delay"},
      {"tc qdisc add dev t0 root netem delay 10ms 2parsecs", "2parsecs", "bad jitter"},
      {"tc qdisc add dev t0 root netem delay", "delay", "needs a time"},
      {"tc qdisc add dev t0 root netem limit lots", "lots", "bad limit"},
      {"tc qdisc add dev t0 root netem loss 1% 2% loss 3%", "loss", "duplicate loss"},
      {"tc qdisc add dev t0 root netem loss fuzzy 3%", "fuzzy", "unknown loss model"},
      // Percentages and correlations outside 0..100% as tc refuses them.
      {"tc qdisc add dev t0 root netem loss 200%", "200%", "Illegal \"loss percent\""},
      {"tc qdisc add dev t0 root netem loss 50% 120%", "120%", "Illegal \"loss correlation\""},
      {"tc qdisc add dev t0 root netem loss random -1%", "-1%", "Illegal \"loss percent\""},
      {"tc qdisc add dev t0 root netem loss nan", "nan", "unknown loss model"},
      {"tc qdisc add dev t0 root netem delay 10ms 5ms 150%", "150%", "Illegal \"delay correlation\""},
      {"tc qdisc add dev t0 root netem duplicate 101%", "101%", "Illegal \"duplicate\""},
      {"tc qdisc add dev t0 root netem corrupt 101%", "101%", "Illegal \"corrupt\""},
      {"tc qdisc add dev t0 root netem reorder 50% 200%", "200%", "Illegal \"reorder correlation\""},
      {"tc qdisc add dev t0 root netem loss state 150%", "150%", "Illegal \"loss p13\""},
      {"tc qdisc add dev t0 root netem loss gemodel 150%", "150%", "Illegal \"loss gemodel p\""},
      {"tc qdisc add dev t0 root netem delay 10000000000s", "10000000000s", "0 to 9223372036s"},
      {"tc qdisc add dev t0 root netem loss state", "state", "needs p13"},
      {"tc qdisc add dev t0 root netem loss random many", "many", "Illegal \"loss percent\""},
      {"tc qdisc add dev t0 root netem duplicate x", "x", "Illegal \"duplicate\""},
      {"tc qdisc add dev t0 root netem reorder 10%", "reorder", "without specifying some delay"},
      {"tc qdisc add dev t0 root netem delay 10ms gap 5", "gap", "gap specified without reorder"},
      {"tc qdisc add dev t0 root netem distribution normal", "normal", "no latency and jitter"},
      {"tc qdisc add dev t0 root netem delay 10ms 1ms distribution lumpy", "lumpy", "no distribution data"},
      {"tc qdisc add dev t0 root netem rate fast", "fast", "bad rate"},
      {"tc qdisc add dev t0 root netem slot distribution normal 1ms 1ms", "distribution", "not supported"},
      {"tc qdisc add dev t0 root netem slot 1ms 2ms packets x", "x", "bad slot packets"},
      {"tc qdisc add dev t0 root netem seed abc", "abc", "bad seed"},
      {"tc qdisc add dev t0 root netem ecn", "ecn", "not supported"},
      {"tc qdisc add dev t0 root netem wobble", "wobble", "unknown option"},
      {"tc qdisc add dev t0 root codel interval x", "x", "bad interval"},
      {"tc qdisc add dev t0 root fq flow_limit many", "many", "Illegal \"flow_limit\""},
      {"tc qdisc add dev t0 root fq maxrate fast", "fast", "Illegal \"maxrate\""},
      {"tc qdisc add dev t0 root fq horizon 2parsecs", "2parsecs", "Illegal \"horizon\""},
      {"tc qdisc add dev t0 root fq timer_slack -1", "-1", "timer_slack"},
      {"tc qdisc add dev t0 root fq quantum", "quantum", "needs a value"},
      {"tc qdisc add dev t0 root fq pacing wibble", "wibble", "What is"},
      {"tc qdisc add dev t0 root codel flows 4", "flows", "unknown option"},
      {"tc qdisc add dev t0 root sfq limit 1", "1", "must be > 1"},
      {"tc qdisc add dev t0 root sfq perturb -1", "-1", "bad perturb"},
      {"tc qdisc add dev t0 root sfq redflowlimit 1000", "redflowlimit", "not supported"},
      {"tc qdisc add dev t0 root sfq divisor", "divisor", "needs a value"},
      {"tc qdisc add dev t0 root pfifo_head_drop limit q", "q", "bad limit"},
      {"nft add table inet t", "inet", "nft"},
      {"nft add chain netdev t c '{ type filter hook egres device foo priority 0; }'", "egres", "nft"},
      {"nft add rule netdev t c meta colour 3 drop", "colour", "nft"},
      {"nft flush everything", "everything", "nft"},
  };
  for (const BadLine& r : rows) {
    SCOPED_TRACE(r.line);
    ScriptCommand c;
    ScriptError e;
    EXPECT_FALSE(parse_line(r.line, c, e));
    EXPECT_EQ(e.word, r.word) << e.msg;
    EXPECT_NE(e.msg.find(r.message), std::string::npos) << e.msg;
  }
}

TEST(TcScript, GoodLinesParse) {
  const char* good[] = {
      "tc qdisc add dev foo clsact",
      "tc qdisc del dev foo clsact",
      "tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,'",
      "tc filter add dev foo ingress pref 3 handle 0x2 protocol ip bpf expr 'udp' classid 1:1 action ok",
      "tc filter replace dev foo egress pref 3 bpf bytecode '1,6 0 0 4294967295,' action skbedit queue_mapping 1 "
      "priority 1:2 mark 7 pipe action mirred egress mirror dev bar action gact drop",
      "tc filter del dev foo egress pref 3",
      "tc filter del dev foo ingress",
      "tc qdisc add dev foo root netem delay 4295s",  // 64-bit latency, as tc takes it
      "tc qdisc add dev foo root netem delay 100 loss 100% 0% duplicate 0 corrupt 100%",
      "tc -s filter show dev foo egress",
      "tc -s -j filter show dev foo ingress",
      "nft add table netdev t",
      "nft list ruleset",
  };
  for (const char* l : good) {
    SCOPED_TRACE(l);
    ScriptCommand c;
    ScriptError e;
    EXPECT_TRUE(parse_line(l, c, e)) << e.word << ": " << e.msg;
    EXPECT_TRUE(std::holds_alternative<ExtCommand>(c));
  }
  // Every tc line takes the one tc front end.
  ScriptCommand c;
  ScriptError e;
  EXPECT_TRUE(parse_line("tc qdisc add dev foo root pfifo_fast", c, e)) << e.msg;
  EXPECT_TRUE(std::holds_alternative<ExtCommand>(c));
}

TEST_F(RunnerTest, Seed000ScriptAndShowCounters) {
  run("ip link add dev foo type dummy");
  run("ip link set dev foo up");
  run("tc qdisc add dev foo clsact");
  run("tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,'");
  run("send dev foo count 500");
  run("tc -s filter show dev foo egress");
  const std::string out = output();
  EXPECT_NE(out.find("filter protocol all pref 49152 bpf chain 0 handle 0x1 direct-action not_in_hw bytecode '1,6 0 0 0'"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Sent 30000 bytes 500 pkt (matched 500, dropped 0)"), std::string::npos) << out;
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 500u);
}

TEST_F(RunnerTest, ActionsCountersAndRuntimeErrors) {
  run("ip link add dev foo type dummy");
  run("ip link add dev bar type dummy");
  run("ip link set dev foo up");
  run("ip link set dev bar up");
  ScriptError e;
  EXPECT_FALSE(run("tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,'", &e));
  EXPECT_NE(e.msg.find("clsact"), std::string::npos);
  run("tc qdisc add dev foo clsact");
  EXPECT_FALSE(run("tc qdisc add dev foo clsact", &e));
  EXPECT_FALSE(run("tc filter add dev nosuch egress bpf da bytecode '1,6 0 0 0,'", &e));
  EXPECT_EQ(e.word, "nosuch");
  EXPECT_FALSE(run("tc filter add dev foo egress bpf bytecode '1,6 0 0 1,' action mirred egress redirect dev nosuch", &e));
  EXPECT_EQ(e.word, "nosuch");
  run("tc filter add dev foo egress pref 1 bpf bytecode '1,6 0 0 4294967295,' action mirred egress redirect dev bar");
  run("send dev foo count 10");
  EXPECT_EQ(runner_.table().find("bar")->stats_sum().tx_packets, 10u);
  run("tc filter del dev foo egress pref 1");
  run("ip link del dev bar");
  run("nft add table netdev t");
  run("nft add chain netdev t c '{ type filter hook egress device foo priority 0; policy drop; }'");
  run("send dev foo count 5");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 0u);
  run("ip link del dev foo");  // its chain is released
  run("nft list ruleset");
  EXPECT_FALSE(run("nft add rule netdev nosuch c drop", &e));
}

// tc's object and verb abbreviations, base-0 numbers, and clsact/ingress as Linux lists
// them; clsact's parents ffff:fff2 (ingress) and ffff:fff3 (egress) as in pkt_sched.h.
TEST_F(RunnerTest, AbbreviationsIngressKindAndClsactParents) {
  run("ip link add dev foo type dummy");
  run("ip link add dev bar type dummy");
  run("ip link set dev foo up");
  run("tc q a dev foo root pfifo limit 0x10");
  run("tc qd add dev bar ingress");
  ScriptError e;
  EXPECT_FALSE(run("tc f add dev bar egress bpf da bytecode '1,6 0 0 0,'", &e));  // ingress: no egress side
  EXPECT_NE(e.msg.find("egress"), std::string::npos) << e.msg;
  run("tc fi add dev bar parent ffff: bpf da bytecode '1,6 0 0 0,'");
  EXPECT_FALSE(run("tc qdisc add dev bar clsact", &e));
  run("tc qdisc del dev bar ingress");
  run("tc qdisc add dev bar clsact");
  run("tc filter add dev bar parent ffff:fff3 pref 7 bpf da bytecode '1,6 0 0 0,'");
  run("tc filter add dev bar parent ffff:fff2 pref 9 bpf da bytecode '1,6 0 0 0,'");
  run("tc qdisc show");
  run("tc filter show dev bar egress");
  run("tc filter show dev bar ingress");
  const std::string out = output();
  EXPECT_NE(out.find("qdisc pfifo 8001: dev foo root refcnt 2 limit 16p\n"), std::string::npos) << out;
  EXPECT_NE(out.find("qdisc clsact ffff: dev bar parent ffff:fff1 \n"), std::string::npos) << out;
  const size_t egress = out.find("pref 7 bpf");
  const size_t ingress = out.find("pref 9 bpf");
  ASSERT_NE(egress, std::string::npos) << out;
  ASSERT_NE(ingress, std::string::npos) << out;
  EXPECT_LT(egress, ingress);  // the egress show printed pref 7 first
}

TEST_F(RunnerTest, IngressQdiscShowsDashes) {
  run("ip link add dev foo type dummy");
  run("tc qdisc add dev foo handle ffff: ingress");
  run("tc qdisc show dev foo");
  EXPECT_NE(output().find("qdisc ingress ffff: parent ffff:fff1 ---------------- \n"), std::string::npos)
      << output();
}

// Deleting a mirred target: the action drops what it would redirect and counts it
// (overlimits, TC_EGRESS), tc shows the target as "*", and a re-created device of that
// name is not the target (Linux's mirred_device_event).
TEST_F(RunnerTest, MirredTargetDeletedDropsAndCounts) {
  run("ip link add dev foo type dummy");
  run("ip link add dev bar type dummy");
  run("ip link set dev foo up");
  run("ip link set dev bar up");
  run("tc qdisc add dev foo clsact");
  run("tc filter add dev foo egress pref 1 bpf bytecode '1,6 0 0 4294967295,' action mirred egress redirect dev bar");
  run("send dev foo count 10");
  EXPECT_EQ(runner_.table().find("bar")->stats_sum().tx_packets, 10u);
  const auto before = drop_totals();
  run("ip link del dev bar");
  run("send dev foo count 7");
  run("tc -s filter show dev foo egress");
  auto tc_egress = [&] {
    return drop_totals()[static_cast<size_t>(DropReason::TC_EGRESS)] -
           before[static_cast<size_t>(DropReason::TC_EGRESS)];
  };
  EXPECT_EQ(tc_egress(), 7u);
  const std::string out = output();
  EXPECT_NE(out.find("mirred (Egress Redirect to device *) stolen"), std::string::npos) << out;
  EXPECT_NE(out.find("Sent 1020 bytes 17 pkt (dropped 0, overlimits 7 requeues 0)"), std::string::npos) << out;
  run("ip link add dev bar type dummy");
  run("ip link set dev bar up");
  run("send dev foo count 2");
  EXPECT_EQ(runner_.table().find("bar")->stats_sum().tx_packets, 0u);
  EXPECT_EQ(tc_egress(), 9u);
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 0u);
}

// An nft netdev chain whose device is deleted is released with its rules, as Linux 6.1
// does (__nft_release_basechain): the listing keeps the table only, and a re-created
// device of that name is not filtered.
TEST_F(RunnerTest, NftChainOfDeletedDeviceIsReleased) {
  run("ip link add dev foo type dummy");
  run("ip link set dev foo up");
  run("nft add table netdev t");
  run("nft add chain netdev t c '{ type filter hook egress device foo priority 0; policy drop; }'");
  run("nft add rule netdev t c counter drop");
  run("send dev foo count 5");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 0u);
  run("ip link del dev foo");
  run("ip link add dev foo type dummy");
  run("ip link set dev foo up");
  run("send dev foo count 5");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 5u);
  run("nft list ruleset");
  const std::string out = output();
  EXPECT_TRUE(out.ends_with("\ntable netdev t {\n}\n")) << out;
  EXPECT_EQ(out.find("chain c"), std::string::npos) << out;
  // The chain can be added again and filters the new device.
  run("nft add chain netdev t c '{ type filter hook egress device foo priority 0; policy drop; }'");
  run("send dev foo count 5");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 5u);
}

}  // namespace
}  // namespace pktpath::cli
