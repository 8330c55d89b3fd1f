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
