// tc lines for netem: iproute2's words and defaults, `tc qdisc show` as q_netem.c prints
// it, `tc -j` keys. Its parse errors are in script_tc_test.cc's table.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "script_runner.h"

namespace pktpath::cli {
namespace {

class NetemCli : public RunnerTest {
 protected:
  NetemCli() {
    run("ip link add dev t0 type testdrv");
    run("ip link set dev t0 up");
  }
};

TEST_F(NetemCli, ShowPrintsAsIproute2) {
  run("tc qdisc add dev t0 root handle 8001: netem delay 10ms 2ms 25% loss 1% duplicate 0.5% seed 42");
  run("tc qdisc show dev t0");
  EXPECT_EQ(output(),
            "qdisc netem 8001: root refcnt 2 limit 1000 delay 10ms  2ms 25% loss 1% duplicate 0.5% seed 42\n");
}

TEST_F(NetemCli, ShowEveryGroupAndDefaultSeed) {
  run("tc qdisc add dev t0 root handle 1: netem limit 200 delay 100ms 10ms distribution normal "
      "loss state 5% reorder 25% 50% gap 5 corrupt 0.1% rate 1mbit 20 48 5 slot 1ms 2ms packets 4 bytes 3000");
  run("tc qdisc show dev t0");
  EXPECT_EQ(output(),
            "qdisc netem 1: root refcnt 2 limit 200 delay 100ms  10ms loss state p13 5% p31 95% p32 0% "
            "p23 100% p14 0% reorder 25% 50% corrupt 0.1% rate 1Mbit packetoverhead 20 cellsize 48 "
            "celloverhead 5 slot 1ms 2ms packets 4 bytes 3000 seed 474148529517 gap 5\n");
}

TEST_F(NetemCli, GemodelShowsOneMinusH) {
  run("tc qdisc add dev t0 root netem loss gemodel 1% 10% 70% 0.1%");
  run("tc qdisc show dev t0");
  const std::string s = output();
  EXPECT_NE(s.find(" loss gemodel p 1% r 10% 1-h 70% 1-k 0.1% "), std::string::npos) << s;
}

TEST_F(NetemCli, ChangeAndStatsAndJson) {
  run("tc qdisc add dev t0 root handle 1: netem delay 10ms");
  run("tc qdisc change dev t0 root handle 1: netem delay 20ms loss random 2% 10% seed 5");
  run("tc -s qdisc show dev t0");
  EXPECT_EQ(output(),
            "qdisc netem 1: root refcnt 2 limit 1000 delay 20ms loss 2% 10% seed 5\n"
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n");
}

TEST_F(NetemCli, JsonKeys) {
  run("tc qdisc add dev t0 root netem delay 10ms 2ms 25% loss 1% rate 8kbit seed 3");
  run("tc -j qdisc show dev t0");
  const auto j = nlohmann::json::parse(output());
  const auto& o = j.at(0).at("options");
  EXPECT_EQ(o.at("limit"), 1000);
  EXPECT_DOUBLE_EQ(o.at("delay").at("delay").get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(o.at("delay").at("jitter").get<double>(), 0.002);
  EXPECT_NEAR(o.at("delay").at("correlation").get<double>(), 25, 1e-6);
  EXPECT_NEAR(o.at("loss-random").at("loss").get<double>(), 1, 1e-6);
  EXPECT_EQ(o.at("rate").at("rate"), 1000);
  EXPECT_EQ(o.at("seed"), 3);
  EXPECT_EQ(o.at("ecn"), false);
}

}  // namespace
}  // namespace pktpath::cli
