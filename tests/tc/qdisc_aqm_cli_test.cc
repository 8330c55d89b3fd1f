// tc lines for fq_codel, codel, sfq and pfifo_head_drop: iproute2's words, `tc qdisc
// show` and `tc -s qdisc show` text (with the xstats lines), `tc -j` keys. Their parse
// errors are in script_tc_test.cc's table.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "script_runner.h"

namespace pktpath::cli {
namespace {

class AqmCli : public DeviceCliTest {};

TEST_F(AqmCli, FqCodelShowAndStats) {
  run("tc qdisc add dev t0 root handle 1: fq_codel");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc fq_codel 1: root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms "
            "interval 100ms "
            "memory_limit 32Mb ecn drop_batch 64 \n");
  EXPECT_EQ(show("tc -s qdisc show dev t0"),
            "qdisc fq_codel 1: root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms "
            "interval 100ms "
            "memory_limit 32Mb ecn drop_batch 64 \n"
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n"
            "  maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n"
            "  new_flows_len 0 old_flows_len 0\n");
  // replace of the same handle and kind is a change, and flows cannot change (EINVAL).
  ScriptError e;
  EXPECT_FALSE(try_run("tc qdisc replace dev t0 root handle 1: fq_codel flows 64", e));
  EXPECT_NE(e.msg.find("flows cannot change"), std::string::npos) << e.msg;
  run("tc qdisc change dev t0 root handle 1: fq_codel limit 500 noecn");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc fq_codel 1: root refcnt 2 limit 500p flows 1024 quantum 1514 target 5ms "
            "interval 100ms "
            "memory_limit 32Mb drop_batch 64 \n");
  run("tc qdisc del dev t0 root");
  run("tc qdisc add dev t0 root handle 1: fq_codel limit 100 flows 64 quantum 300 target 2ms "
      "interval 50ms "
      "ce_threshold 1ms memory_limit 4mb drop_batch 8 noecn");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc fq_codel 1: root refcnt 2 limit 100p flows 64 quantum 300 target 2ms "
            "ce_threshold 999us "
            "interval 50ms memory_limit 4Mb drop_batch 8 \n");
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
  for (const char* k : {"maxpacket", "drop_overlimit", "new_flow_count", "ecn_mark",
                        "new_flows_len", "old_flows_len"})
    EXPECT_TRUE(j.contains(k)) << k;
}

TEST_F(AqmCli, CodelShowAndStats) {
  run("tc qdisc add dev t0 root handle 2: codel limit 500 target 10ms ecn");
  EXPECT_EQ(show("tc -s qdisc show dev t0"),
            "qdisc codel 2: root refcnt 2 limit 500p target 10ms interval 100ms ecn \n"
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n"
            "  count 0 lastcount 0 ldelay 0us drop_next 0us\n"
            "  maxpacket 0 ecn_mark 0 drop_overlimit 0\n");
  const auto j = nlohmann::json::parse(show("tc -s -j qdisc show dev t0"))[0];
  EXPECT_EQ(j["options"]["limit"], 500);
  EXPECT_EQ(j["options"]["ecn"], true);
  for (const char* k :
       {"count", "lastcount", "ldelay", "drop_next", "maxpacket", "ecn_mark", "drop_overlimit"})
    EXPECT_TRUE(j.contains(k)) << k;
}

TEST_F(AqmCli, SfqAndPfifoHeadDropShow) {
  run("tc qdisc add dev t0 root handle 3: sfq");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc sfq 3: root refcnt 2 limit 127p quantum 1514b depth 127 divisor 1024 \n");
  ScriptError e;  // sfq has no change op: replace of the same handle fails
  EXPECT_FALSE(try_run("tc qdisc replace dev t0 root handle 3: sfq limit 64", e));
  EXPECT_NE(e.msg.find("not supported"), std::string::npos) << e.msg;
  run("tc qdisc del dev t0 root");
  run("tc qdisc add dev t0 root handle 3: sfq perturb 10 quantum 3000 limit 64 depth 20 headdrop "
      "divisor 256");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc sfq 3: root refcnt 2 limit 64p quantum 3000b depth 20 headdrop divisor 256 "
            "perturb 10sec \n");
  const auto j = nlohmann::json::parse(show("tc -j qdisc show dev t0"))[0];
  EXPECT_EQ(j["options"]["limit"], 64);
  EXPECT_EQ(j["options"]["headdrop"], true);
  EXPECT_EQ(j["options"]["perturb"], 10);
  run("tc qdisc replace dev t0 root handle 4: pfifo_head_drop limit 5");
  EXPECT_EQ(show("tc qdisc show dev t0"), "qdisc pfifo_head_drop 4: root refcnt 2 limit 5p\n");
}

// fq: iproute2's show line for the defaults (psched_mtu 1514: quantum 3028, initial
// 15140), the words, the xstats lines and keys, and the kernel's option checks.
TEST_F(AqmCli, FqShowAndStats) {
  run("tc qdisc add dev t0 root handle 1: fq");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc fq 1: root refcnt 2 limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 "
            "quantum 3028b initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40ms "
            "timer_slack 10us horizon 10s horizon_drop \n");
  EXPECT_EQ(show("tc -s qdisc show dev t0"),
            "qdisc fq 1: root refcnt 2 limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 "
            "quantum 3028b initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40ms "
            "timer_slack 10us horizon 10s horizon_drop \n"
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n"
            "  flows 0 (inactive 0 throttled 0)\n"
            "  gc 0 highprio 0 throttled 0\n");
  run("tc qdisc change dev t0 root handle 1: fq limit 500 flow_limit 20 quantum 1514 initial_quantum 3000 "
      "maxrate 10mbit buckets 100 nopacing refill_delay 10ms ce_threshold 2ms timer_slack 20us horizon 2s "
      "horizon_cap");
  EXPECT_EQ(show("tc qdisc show dev t0"),
            "qdisc fq 1: root refcnt 2 limit 500p flow_limit 20p buckets 128 orphan_mask 1023 nopacing "
            "quantum 1514b initial_quantum 3000b maxrate 10Mbit low_rate_threshold 550Kbit "
            "refill_delay 10ms ce_threshold 2ms timer_slack 20us horizon 2s horizon_cap \n");
  run("send dev t0 count 30 size 200");
  const auto j = nlohmann::json::parse(show("tc -s -j qdisc show dev t0"))[0];
  EXPECT_EQ(j["kind"], "fq");
  EXPECT_EQ(j["options"]["limit"], 500);
  EXPECT_EQ(j["options"]["flow_limit"], 20);
  EXPECT_EQ(j["options"]["buckets"], 128);
  EXPECT_EQ(j["options"]["pacing"], false);
  EXPECT_EQ(j["options"]["maxrate"], 1250000);
  EXPECT_EQ(j["options"]["timer_slack"], 20000);
  EXPECT_EQ(j["options"]["horizon"], 2000000);
  EXPECT_TRUE(j["options"].contains("horizon_cap"));
  for (const char* k : {"flows", "inactive", "throttled", "gc", "highprio"}) EXPECT_TRUE(j.contains(k)) << k;
  // Every packet made was sent, dropped or is still queued.
  EXPECT_EQ(j["packets"].get<uint64_t>() + j["drops"].get<uint64_t>() + j["qlen"].get<uint64_t>(), 30u);
  ScriptError e;
  EXPECT_FALSE(try_run("tc qdisc change dev t0 root handle 1: fq quantum 0", e));
  EXPECT_NE(e.msg.find("invalid quantum"), std::string::npos) << e.msg;
  EXPECT_FALSE(try_run("tc qdisc change dev t0 root handle 1: fq buckets 1000000", e));
  EXPECT_NE(e.msg.find("buckets"), std::string::npos) << e.msg;
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

}  // namespace
}  // namespace pktpath::cli
