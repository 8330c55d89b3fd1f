// `ip [-s] [-j] [-p] link show`: iproute2's text lines, and with -j its JSON (6.1's keys),
// whatever the runner's own output mode.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "script_run_util.h"

namespace pktpath::cli {
namespace {

using testutil::run_pp;

TEST(IpLinkShow, TextAndJsonFromTheSameRows) {
  auto r = run_pp(
      "ip link add dev foo type dummy\n"
      "ip link set dev foo up\n"
      "send dev foo count 3\n"
      "ip -s link show dev foo\n"
      "ip -s -j link show dev foo\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("2: foo: <BROADCAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc noqueue state UNKNOWN"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    TX:  bytes packets errors dropped carrier collsns\n"), std::string::npos) << r.out;
  const std::string last = r.out.substr(r.out.rfind("[{"));
  auto j = nlohmann::json::parse(last);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["ifname"], "foo");
  EXPECT_EQ(j[0]["operstate"], "UNKNOWN");
  EXPECT_EQ(j[0]["flags"], nlohmann::json({"BROADCAST", "NOARP", "UP", "LOWER_UP"}));
  EXPECT_EQ(j[0].count("linkinfo"), 0u);  // -d only, as iproute2
  EXPECT_EQ(j[0]["stats64"]["tx"]["packets"], 3);
}

// iproute2 6.1's keys in its order (ip -j link show of a veth end on this kernel), the
// details with -d; `ip link set` changes address, txqueuelen and promisc as ip does.
TEST(IpLinkShow, JsonKeysInIproute2sOrderAndLinkSet) {
  auto r = run_pp(
      "ip link add va type veth peer name vb\n"
      "ip link set dev va address 02:11:22:33:44:55 txqueuelen 500 promisc on\n"
      "ip -j link show dev va\n"
      "ip -j -d link show dev va\n"
      "ip link show dev va\n"
      "ip link set va promisc off\n"
      "ip -d link show dev va\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<nlohmann::ordered_json> js;
  for (size_t at = r.out.find("[{"); at != std::string::npos; at = r.out.find("[{", at + 1))
    js.push_back(nlohmann::ordered_json::parse(r.out.substr(at, r.out.find('\n', at) - at)));
  ASSERT_EQ(js.size(), 2u) << r.out;
  std::vector<std::string> keys;
  for (auto& [k, v] : js[0][0].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"ifindex", "link", "ifname", "flags", "mtu", "qdisc", "operstate",
                                            "linkmode", "group", "txqlen", "link_type", "address", "broadcast"}));
  EXPECT_EQ(js[0][0]["address"], "02:11:22:33:44:55");
  EXPECT_EQ(js[0][0]["txqlen"], 500);
  EXPECT_EQ(js[0][0]["flags"], nlohmann::json({"BROADCAST", "MULTICAST", "PROMISC"}));
  EXPECT_EQ(js[1][0]["promiscuity"], 1);
  EXPECT_EQ(js[1][0]["linkinfo"]["info_kind"], "veth");
  EXPECT_EQ(js[1][0]["num_tx_queues"], 1);
  EXPECT_NE(r.out.find("<BROADCAST,MULTICAST,PROMISC> mtu 1500"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("brd ff:ff:ff:ff:ff:ff promiscuity 0  allmulti 0 minmtu 68 maxmtu 65535 \n    veth numtxqueues 1"),
            std::string::npos)
      << r.out;
}

// Each end of a veth pair has its own address, in one namespace or across two, as Linux
// gives each its own random one.
TEST(IpLinkShow, VethEndsHaveTheirOwnAddresses) {
  auto r = run_pp(
      "ip netns add n1\n"
      "ip link add a type veth peer name b\n"
      "ip link add c type veth peer name d netns n1\n"
      "ip -j link show\n"
      "ip -n n1 -j link show\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::set<std::string> macs;
  size_t n = 0;
  for (size_t at = r.out.find("[{"); at != std::string::npos; at = r.out.find("[{", at + 1))
    for (auto& dev : nlohmann::json::parse(r.out.substr(at, r.out.find('\n', at) - at)))
      if (dev["link_type"] == "ether") ++n, macs.insert(dev["address"].get<std::string>());
  EXPECT_EQ(n, 4u) << r.out;
  EXPECT_EQ(macs.size(), n) << r.out;
}

TEST(IpLinkShow, PrettyJsonAndDownDevice) {
  auto r = run_pp(
      "ip link add dev foo type dummy\n"
      "ip -j -p link show\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("[\n    {\n"), std::string::npos) << r.out;  // indented
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["qdisc"], "noop");
  EXPECT_EQ(j[0]["operstate"], "DOWN");
  EXPECT_FALSE(j[0].contains("stats64"));
}

// A device name is any bytes the kernel's dev_valid_name allows, UTF-8 or not: -j prints
// each byte that is not UTF-8 as U+FFFD (the fuzzer's crash: the JSON writer threw).
TEST(IpLinkShow, JsonOfANameThatIsNotUtf8) {
  auto r = run_pp(
      "ip link add foo\xba type dummy\n"
      "ip -j link show\n"
      "ip -j -p link show\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const size_t second = r.out.find("\n[\n");
  ASSERT_NE(second, std::string::npos) << r.out;
  for (const std::string& doc : {r.out.substr(0, second), r.out.substr(second + 1)}) {
    auto j = nlohmann::json::parse(doc);
    ASSERT_EQ(j.size(), 2u) << doc;  // lo, then the new device
    EXPECT_EQ(j[1]["ifname"], "foo\xef\xbf\xbd");
  }
}

}  // namespace
}  // namespace pktpath::cli
