// `ip [-s] [-j] [-p] link show`: iproute2's text lines, and with -j its JSON (6.1's keys),
// whatever the runner's own output mode.
#include <gtest/gtest.h>

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
  EXPECT_EQ(j[0]["link_kind"], "dummy");
  EXPECT_EQ(j[0]["stats64"]["tx"]["packets"], 3);
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

}  // namespace
}  // namespace pktpath::cli
