// tc lines for the classifiers beyond cls_bpf and the police action: malformed words
// named, and show output in iproute2's layout.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sched/act_api.h"
#include "script_runner.h"

namespace pktpath::cli {
namespace {

struct BadLine {
  const char* line;
  const char* word;
  const char* message;
};

TEST(TcClsScript, MalformedLinesNameTheWord) {
  const std::string pre = "tc filter add dev foo egress ";
  const BadLine rows[] = {
      {"u32 match ip tll 5 0xff", "tll", "not supported"},
      {"u32 match ipx src 1.2.3.4", "ipx", "not supported"},
      {"u32 match ip src 10.0.0.0/33 classid 1:1", "10.0.0.0/33", "prefix"},
      {"u32 match ip src 10.0.0", "10.0.0", "bad address"},
      {"u32 match ip protocol 300 0xff", "300", "bad value"},
      {"u32 match u32 1 0xff at 3", "3", "multiple of 4"},
      {"u32 match u32 0x100 0xff at 0", "0x100", "outside its mask"},
      {"u32 match u16 1 0xffff at 3", "3", "cannot start"},
      {"u32 match u32 1 1 at nexthdr+4", "nexthdr+4", "nexthdr"},
      {"u32 match u32 1", "1", "\"1\" needs a value"},
      {"u32 match u32 1 1 at 0 match u32 2 3 at 0", "0", "contradicts"},
      {"u32 ht 800::1 match u32 1 1 at 0", "800::1", "must be a hash table"},
      {"u32 ht 8000: match u32 1 1 at 0", "8000:", "Illegal"},
      {"u32 divisor 3", "3", "power of 2"},
      {"u32 divisor 512", "512", "power of 2"},
      {"u32 link 1:2: match u32 1 1 at 0", "1:2:", "must be a hash table"},
      {"u32 hashkey mask 0xff at 13", "13", "multiple of 4"},
      {"u32 hashkey mask 0xff at 100000", "100000", "(a multiple of 4 from -32768 to 32764)"},
      {"u32 hashkey mask zz at 12", "zz", "hashkey"},
      {"u32 hashkey", "hashkey", "needs"},
      {"u32 sample ip dst 1.2.3.4 divisor 100", "100", "power of 2"},
      {"u32 offset at 0 mask 0x0f00 shift 6", "offset", "not supported"},
      {"u32 order 0x1000", "0x1000", "bad order"},
      {"u32 match u32 1 1 at 0 flowid 1", "1", "bad classid"},
      {"flower ip_proto tcp", "ip_proto", "needs protocol"},
      {"protocol ip flower dst_port 80", "dst_port", "ip_proto"},
      {"protocol ip flower ip_proto tcp dst_port 90-80", "90-80", "range"},
      {"protocol ip flower ip_proto tcp dst_port 70000", "70000", "bad port"},
      {"protocol ip flower src_ip 2001:db8::1", "src_ip", "needs protocol ipv6"},
      {"protocol ipv6 flower src_ip 10.0.0.1", "src_ip", "needs protocol ip"},
      {"protocol ip flower dst_ip 10.0.0.0/40", "10.0.0.0/40", "prefix"},
      {"protocol ip flower ip_tos 0x100", "0x100", "ip_tos"},
      {"protocol ip flower vlan_id 5", "vlan_id", "802.1q"},
      {"protocol 802.1q flower vlan_id 5000", "5000", "vlan_id"},
      {"protocol ip flower enc_key_id 5", "enc_key_id", "not supported"},
      {"flower dst_mac 00:11:22:33:44", "00:11:22:33:44", "MAC"},
      {"flower ip_proto", "ip_proto", ""},
      {"matchall skip_sw", "skip_sw", "offload"},
      {"matchall frob", "frob", "matchall"},
      {"matchall classid 1:1:1", "1:1:1", "bad classid"},
      {"matchall action police burst 10k", "police", "rate"},
      {"matchall action police rate 1mbit", "police", "burst"},
      {"matchall action police rate fast burst 10k", "fast", "rate"},
      {"matchall action police rate 1mbit burst 10k conform-exceed maybe", "maybe", "exceed"},
      {"matchall action police rate 1mbit burst 10k conform-exceed drop/stolen", "drop/stolen", "conform"},
      {"matchall action police rate 1mbit burst 10k avrate 1mbit", "avrate", "not supported"},
      {"matchall action police rate 1mbit burst 10k conform-exceed", "conform-exceed", ""},
      {"fw classid 1:1", "fw", "supported: bpf, flower, matchall, u32"},
  };
  for (const BadLine& r : rows) {
    const std::string line = pre + r.line;
    SCOPED_TRACE(line);
    ScriptCommand c;
    ScriptError e;
    EXPECT_FALSE(parse_line(line, c, e));
    EXPECT_EQ(e.word, r.word) << e.msg;
    EXPECT_NE(e.msg.find(r.message), std::string::npos) << e.msg;
  }
}

TEST(TcClsScript, GoodLinesParse) {
  const char* good[] = {
      "tc filter add dev foo ingress pref 1 protocol all matchall skip_hw classid 1:1 action drop",
      "tc filter add dev foo egress matchall action police rate 1mbit burst 10k mtu 2k peakrate 2mbit "
      "conform-exceed drop/pipe action ok",
      "tc filter add dev foo egress protocol ip u32 ht 800: order 5 match ip src 10.0.0.0/8 match ip dst 1.2.3.4 "
      "match ip protocol 6 0xff match ip sport 80 0xffff match ip dport 443 0xffff match ip tos 0x10 0xff "
      "match u16 0x0800 0xffff at -2 match u8 5 0x0f at 0 flowid 1:3",
      "tc filter add dev foo egress protocol ip handle 800::7 u32 match u32 0 0 at 0 action ok",
      "tc filter add dev foo egress protocol ip flower ip_proto udp src_ip 10.0.0.0/8 dst_ip 1.2.3.4 src_port 53 "
      "dst_port 1000-2000 ip_tos 0x10/0xfc dst_mac 02:00:00:00:00:01 src_mac 02:00:00:00:00:00/40 classid 1:1",
      "tc filter add dev foo egress protocol ipv6 flower ip_proto icmpv6 dst_ip 2001:db8::/32",
      "tc filter add dev foo egress protocol 802.1q flower vlan_id 100 action drop",
  };
  for (const char* l : good) {
    SCOPED_TRACE(l);
    ScriptCommand c;
    ScriptError e;
    EXPECT_TRUE(parse_line(l, c, e)) << e.word << ": " << e.msg;
  }
}

// The runner with a device foo, up, with clsact.
class ClsRunnerTest : public RunnerTest {
 protected:
  void setup() {
    run("ip link add dev foo type dummy");
    run("ip link set dev foo up");
    run("tc qdisc add dev foo clsact");
  }
};

// As iproute2 6.1 prints it on this kernel: a terminal key's flowid starred, no empty
// line after a node without actions, one after the actions.
TEST_F(ClsRunnerTest, U32ShowAsIproute2) {
  setup();
  run("tc filter add dev foo egress protocol ip pref 1 u32 match ip dst 10.0.0.0/8 match ip dport 80 0xffff "
      "match ip protocol 6 0xff flowid 1:1");
  run("tc filter add dev foo egress protocol ip pref 1 u32 match ip tos 0x10 0xff action drop");
  run("tc filter show dev foo egress");
  EXPECT_EQ(output(),
            "filter protocol ip pref 1 u32 chain 0 \n"
            "filter protocol ip pref 1 u32 chain 0 fh 800: ht divisor 1 \n"
            "filter protocol ip pref 1 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:1 not_in_hw \n"
            "  match 0a000000/ff000000 at 16\n"
            "  match 00000050/0000ffff at 20\n"
            "  match 00060000/00ff0000 at 8\n"
            "filter protocol ip pref 1 u32 chain 0 fh 800::801 order 2049 key ht 800 bkt 0 terminal flowid "
            "not_in_hw \n"
            "  match 00100000/00ff0000 at 0\n"
            "\taction order 1: gact action drop\n"
            "\t random type none pass val 0\n"
            "\t index 1 ref 1 bind 1\n"
            "\n");
}

// The "index N" numbers of a show's output, in order.
std::vector<int> action_indexes(const std::string& out) {
  std::vector<int> v;
  for (size_t at = out.find("index "); at != std::string::npos; at = out.find("index ", at + 6))
    v.push_back(std::atoi(out.c_str() + at + 6));
  return v;
}

// Action indexes are per kind and per Net (tcf_idr_check_alloc): the second mirred
// anywhere is index 2 while a gact beside it is 1 of its own kind. A deleted filter's
// actions give their indexes back when they are freed, after a grace period (batched, as
// call_rcu's work is), so the add right after a delete takes the next index here.
TEST_F(ClsRunnerTest, ActionIndexesArePerKindInTheNet) {
  setup();
  run("ip link add dev bar type dummy");
  run("ip link set dev bar up");
  run("tc qdisc add dev bar clsact");
  run("tc filter add dev foo egress pref 1 matchall action mirred egress redirect dev bar");
  run("tc filter add dev bar ingress pref 1 matchall action drop");
  run("tc filter add dev foo egress pref 2 matchall action mirred egress mirror dev bar action drop");
  size_t mark = output().size();
  run("tc filter show dev foo egress");
  EXPECT_EQ(action_indexes(output().substr(mark)), (std::vector<int>{1, 2, 2})) << output().substr(mark);
  run("tc filter del dev foo egress pref 1");
  run("tc filter add dev foo egress pref 3 matchall action mirred egress redirect dev bar");
  run("tc filter add dev foo egress pref 4 matchall action mirred egress redirect dev bar");
  mark = output().size();
  run("tc filter show dev foo egress");
  EXPECT_EQ(action_indexes(output().substr(mark)), (std::vector<int>{2, 2, 3, 4})) << output().substr(mark);
  // Another Net numbers its own from 1.
  run("ip netns add other");
  run("ip -n other link add dev baz type dummy");
  run("tc -n other qdisc add dev baz clsact");
  run("tc -n other filter add dev baz egress matchall action mirred egress redirect dev baz");
  mark = output().size();
  run("tc -n other filter show dev baz egress");
  EXPECT_EQ(action_indexes(output().substr(mark)), (std::vector<int>{1})) << output().substr(mark);
}

// The index space itself: the lowest free index first, as idr_alloc_u32 from 1.
TEST(ActionIdr, LowestFreeIndexFirst) {
  ::pktpath::tc::ActionIdr idr;
  EXPECT_EQ(idr.alloc(), 1u);
  EXPECT_EQ(idr.alloc(), 2u);
  EXPECT_EQ(idr.alloc(), 3u);
  EXPECT_EQ(idr.alloc(), 4u);
  idr.release(2);
  idr.release(1);
  EXPECT_EQ(idr.alloc(), 1u);
  idr.release(4);  // the top one: 3 is the highest in use
  idr.release(3);
  EXPECT_EQ(idr.alloc(), 2u);
  EXPECT_EQ(idr.alloc(), 3u);
  EXPECT_EQ(idr.alloc(), 4u);
  EXPECT_EQ(idr.alloc(), 5u);
}

// police's counters: rate 800bit (100 B/s) burst 600: ten 60-byte frames conform, the
// rest exceed (the next token is 600 ms away), each counted as an overlimit and a drop.
TEST_F(ClsRunnerTest, MatchallPoliceShowWithStats) {
  setup();
  run("tc filter add dev foo egress matchall action police rate 800bit burst 600 conform-exceed drop");
  run("send dev foo count 20");
  run("tc -s filter show dev foo egress");
  const std::string out = output();
  EXPECT_EQ(out.substr(out.find("filter")),
            "filter protocol all pref 49152 matchall chain 0 \n"
            "filter protocol all pref 49152 matchall chain 0 handle 0x1 \n"
            "  not_in_hw (rule hit 20)\n"
            "\taction order 1:  police 0x1 rate 800bit burst 600b mtu 2Kb action drop overhead 0b \n"
            "\tref 1 bind 1 \n"
            "\tAction statistics:\n"
            "\tSent 1200 bytes 20 pkt (dropped 10, overlimits 10 requeues 0) \n"
            "\tbacklog 0b 0p requeues 0\n"
            "\n");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 10u);
}

// The bare control action of tc-police(8) and LARTC (`police ... drop`) is the exceed
// action, as `conform-exceed drop` is.
TEST_F(ClsRunnerTest, PoliceBareControlActionIsTheExceedAction) {
  setup();
  run("tc filter add dev foo egress matchall action police rate 800bit burst 600 drop");
  run("send dev foo count 20");
  run("tc -s filter show dev foo egress");
  const std::string out = output();
  EXPECT_NE(out.find("rate 800bit burst 600b mtu 2Kb action drop overhead 0b"), std::string::npos) << out;
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 10u);
}

TEST_F(ClsRunnerTest, FlowerShowAsIproute2) {
  setup();
  run("tc filter add dev foo egress protocol ip pref 2 flower ip_proto tcp dst_ip 10.0.0.0/8 dst_port 80-90 "
      "ip_tos 0x10/0xfc ip_ttl 64 src_mac 02:00:00:00:00:01 skip_hw classid 1:5 action police rate 1mbit burst 10k "
      "conform-exceed drop/pipe");
  run("tc filter show dev foo egress");
  EXPECT_EQ(output(),
            "filter protocol ip pref 2 flower chain 0 \n"
            "filter protocol ip pref 2 flower chain 0 handle 0x1 classid 1:5 \n"
            "  src_mac 02:00:00:00:00:01\n"
            "  eth_type ipv4\n"
            "  ip_proto tcp\n"
            "  ip_tos 16/0xfc\n"
            "  ip_ttl 64\n"
            "  dst_ip 10.0.0.0/8\n"
            "  dst_port 80-90\n"
            "  skip_hw\n"
            "  not_in_hw\n"
            "\taction order 1:  police 0x1 rate 1Mbit burst 10Kb mtu 2Kb action drop/pipe overhead 0b \n"
            "\tref 1 bind 1 \n"
            "\n");
}

// ip_ttl matches the IPv4 TTL (the sender's frames carry 64) under its mask.
TEST_F(ClsRunnerTest, FlowerMatchesTtlUnderItsMask) {
  setup();
  run("tc filter add dev foo egress protocol ip pref 1 flower ip_ttl 63 action drop");
  run("send dev foo count 4");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 4u);
  run("tc filter add dev foo egress protocol ip pref 2 flower ip_ttl 0x40/0xc0 action drop");
  run("send dev foo count 3");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 4u);
  run("tc -j filter show dev foo egress");
  EXPECT_NE(output().find(R"("ip_ttl":64,"ip_ttl_mask":"c0")"), std::string::npos) << output();
  ScriptError e;
  EXPECT_FALSE(run("tc filter add dev foo egress protocol ip pref 3 flower ip_ttl 256 action drop", &e));
  EXPECT_NE(e.msg.find("bad ip_ttl"), std::string::npos) << e.msg;
}

// Replace, delete and the one-kind-per-pref rule through the command line.
TEST_F(ClsRunnerTest, ReplaceDeleteAndMixedKinds) {
  setup();
  run("tc filter add dev foo egress pref 5 matchall action drop");
  run("send dev foo count 3");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 0u);
  ScriptError e;
  EXPECT_FALSE(run("tc filter add dev foo egress pref 5 bpf da bytecode '1,6 0 0 0,'", &e));
  EXPECT_NE(e.msg.find("do not match"), std::string::npos) << e.msg;
  run("tc filter replace dev foo egress pref 5 handle 1 matchall action ok");
  run("send dev foo count 3");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 3u);
  run("tc filter del dev foo egress pref 5");
  run("tc filter add dev foo egress pref 5 bpf da bytecode '1,6 0 0 2,'");
  run("send dev foo count 3");
  EXPECT_EQ(runner_.table().find("foo")->stats_sum().tx_packets, 3u);
}

}  // namespace
}  // namespace pktpath::cli
