// iproute2's namespace verbs as script lines (cli/ip_netns.cc).
#include <gtest/gtest.h>

#include "script_run_util.h"

namespace pktpath::cli {
namespace {

using testutil::run_pp;

TEST(NetnsScript, SameNamesDifferentStateAndSysctls) {
  auto r = run_pp(
      "ip netns add blue\n"
      "ip netns add red\n"
      "ip netns list\n"
      "ip link add dev foo type dummy\n"
      "ip -n blue link add dev foo type dummy\n"
      "ip netns exec blue ip link set dev foo up\n"
      "tc -n blue qdisc add dev foo clsact\n"
      "tc -n blue filter add dev foo egress bpf da bytecode '1,6 0 0 0,'\n"
      "ip netns exec blue sysctl -w net.core.dev_weight=8\n"
      "ip netns exec blue pktgen -i foo -n 300 --repeat 1\n"
      "ip netns exec blue tc -s filter show dev foo egress\n"
      "tc filter show dev foo egress\n"
      "sysctl net.core.dev_weight\n"
      "ip netns exec blue nft add table netdev t\n"
      "nft list ruleset\n"
      "ip -n blue link show\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("red\nblue\n"), 0u) << r.out;
  EXPECT_NE(r.out.find("Sent 18000 bytes 300 pkt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("net.core.dev_weight = 8\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("net.core.dev_weight = 64\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("table netdev t"), std::string::npos) << r.out;  // blue's table only
  EXPECT_NE(r.out.find("2: foo: <BROADCAST,NOARP,UP,LOWER_UP>"), std::string::npos) << r.out;
}

// dev_change_net_namespace: down, qdiscs and filters flushed, ifindex kept when free.
TEST(NetnsScript, LinkSetNetnsMovesTheDevice) {
  auto r = run_pp(
      "ip netns add blue\n"
      "ip link add dev foo type dummy\n"
      "ip link add dev bar type testdrv\n"
      "ip link set dev bar up\n"
      "tc qdisc add dev bar clsact\n"
      "tc filter add dev bar egress bpf da bytecode '1,6 0 0 0,'\n"
      "ip link set dev bar netns blue\n"
      "ip link show\n"
      "ip -n blue link show\n"
      "tc -n blue filter show dev bar egress\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("3: bar"), r.out.rfind("3: bar")) << r.out;  // listed once, in blue
  EXPECT_NE(r.out.find("3: bar: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("filter protocol"), std::string::npos) << r.out;
}

TEST(NetnsScript, BadLines) {
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {"ip netns exec nosuch ip link show", "Cannot open network namespace \"nosuch\": No such file or directory (at \"nosuch\")"},
      {"ip -n nosuch link show", "Cannot open network namespace \"nosuch\""},
      {"ip netns add a/b", "Invalid netns name \"a/b\" (at \"a/b\")"},
      {"ip netns add ..", "Invalid netns name \"..\""},
      {"ip netns exec blue send dev foo count 1", "ip netns exec runs ip, tc, nft, pktgen, capture, tcpdump or sysctl lines"},
      {"ip netns frob", "Command \"frob\" is unknown"},
      {"ip netns add blue", "File exists"},
      {"ip link set dev nosuch netns blue", "Cannot find device \"nosuch\""},
      {"ip link set dev foo netns nosuch", "Cannot open network namespace \"nosuch\""},
      {"ip netns exec blue ip link frob", "(at \"frob\")"},
  };
  const std::string too_long = "ip netns add " + std::string(256, 'n');  // NAME_MAX is 255
  for (const Case& c : cases) {
    auto r = run_pp(std::string("ip netns add blue\nip link add dev foo type dummy\n") + c.line + "\n");
    EXPECT_EQ(r.rc, 1) << c.line;
    EXPECT_NE(r.err.find(":3: "), std::string::npos) << c.line << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.line << ": " << r.err;
  }
  auto r = run_pp(too_long + "\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("Invalid netns name"), std::string::npos) << r.err;
  EXPECT_EQ(run_pp("ip netns add " + std::string(255, 'n') + "\n").rc, 0);
}

}  // namespace
}  // namespace pktpath::cli
