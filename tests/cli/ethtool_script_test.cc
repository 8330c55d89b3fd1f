// `ethtool -K DEV gro on|off` script lines (cli/ethtool.cc): veth's NAPI mode end to end,
// `ip -s link show` counters as veth_get_stats64 sums them, and the errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "script_run_util.h"

namespace pktpath::cli {
namespace {

using testutil::run_pp;

nlohmann::json last_json(const std::string& out) { return nlohmann::json::parse(out.substr(out.rfind("[{"))); }

TEST(EthtoolScript, GroOnCountsThroughThePeersNapi) {
  auto r = run_pp(
      "ip link add a type veth peer name b\n"
      "ip link set dev a up\n"
      "ip link set dev b up\n"
      "ethtool -K b gro on\n"
      "send dev a count 7 size 100\n"
      "ethtool --offload b generic-receive-offload off gro on\n"
      "send dev a count 3 size 100\n"
      "ethtool --features b gro off\n"
      "send dev a count 2 size 100\n"
      "ip -s -j link show dev a\n"
      "ip -s -j link show dev b\n"
      "cat /proc/net/softnet_stat\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string a_line = r.out.substr(0, r.out.rfind("[{"));
  auto jb = last_json(r.out);
  auto ja = last_json(a_line);
  EXPECT_EQ(ja[0]["stats64"]["tx"]["packets"], 12);
  EXPECT_EQ(ja[0]["stats64"]["tx"]["bytes"], 1200);
  EXPECT_EQ(ja[0]["stats64"]["tx"]["dropped"], 0);
  EXPECT_EQ(jb[0]["stats64"]["rx"]["packets"], 12);
  EXPECT_EQ(jb[0]["stats64"]["rx"]["bytes"], 1200);
  EXPECT_EQ(jb[0]["stats64"]["rx"]["dropped"], 0);
  EXPECT_EQ(ja[0]["stats64"]["rx"]["packets"], 0);
}

TEST(EthtoolScript, BadLinesNameTheWord) {
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {"ethtool -k a", "expected -K (--offload, --features) DEV FEATURE on|off (at \"-k\")"},
      {"ethtool", "(at \"ethtool\")"},
      {"ethtool -K", "needs a device (at \"-K\")"},
      {"ethtool -K a", "expected FEATURE on|off after the device (at \"a\")"},
      {"ethtool -K a tso on", "unknown feature \"tso\" (pktpath has gro) (at \"tso\")"},
      {"ethtool -K a gro", "gro needs on or off (at \"gro\")"},
      {"ethtool -K a gro maybe", "expected on or off (at \"maybe\")"},
      {"ethtool -K nosuch gro on", "device \"nosuch\" does not exist (at \"nosuch\")"},
      {"ethtool -K d gro on", "Could not change any device features: d: Operation not supported (at \"d\")"},
  };
  for (const Case& c : cases) {
    auto r = run_pp(std::string("ip link add a type veth peer name b\nip link add dev d type dummy\n") + c.line + "\n");
    EXPECT_EQ(r.rc, 1) << c.line;
    EXPECT_NE(r.err.find(":3: ethtool: "), std::string::npos) << c.line << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.line << ": " << r.err;
  }
}

}  // namespace
}  // namespace pktpath::cli
