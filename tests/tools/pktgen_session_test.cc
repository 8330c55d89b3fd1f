#include "tools/pktgen_session.h"
#include "core/net.h"
#include "status_assert.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/dev_xmit.h"

namespace pktpath {
namespace {

class PktgenSessionTest : public ::testing::Test {
 protected:
  PacketPool pool{PacketPool::Options{.capacity = 16384}};
  Cpu control{pool};
  Net net{control};
  DeviceTable& devs = net.devices();
  NetDevice* dev = nullptr;

  void SetUp() override {
    std::string err;
    NetDevice::Config c;
    c.name = "foo";
    auto dev_added = devs.add(c, "dummy");
    ASSERT_TRUE(ok(dev_added));
    dev = dev_added.value_or(nullptr);
    ASSERT_TRUE(ok(devs.set_up(*dev, true)));
  }
  PktgenCommand cmd(const std::vector<std::string>& words) {
    std::string err;
    auto c = parse_pktgen_args(words, &err);
    EXPECT_TRUE(c) << err;
    return *c;
  }
  std::string run(const PktgenCommand& c, int* rc, std::string* err) {
    char* buf = nullptr;
    size_t len = 0;
    std::FILE* f = open_memstream(&buf, &len);
    *rc = run_pktgen(c, *dev, pool, f, err);
    std::fclose(f);
    std::string s(buf, len);
    free(buf);
    return s;
  }
};

TEST_F(PktgenSessionTest, RepeatJsonHasContractKeys) {
  int rc;
  std::string err;
  std::string out = run(cmd({"-i", "foo", "-n", "2000", "--repeat", "3", "--json"}), &rc, &err);
  ASSERT_EQ(rc, 0) << err;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["mode"], "queue_xmit");
  EXPECT_EQ(j["total"]["packets"], 2000);
  EXPECT_EQ(j["total"]["errors"], 0);
  EXPECT_GT(j["total"]["pps"].get<double>(), 0);
  EXPECT_GT(j["total"]["mbps"].get<double>(), 0);
  EXPECT_EQ(j["threads"].size(), 1u);
  EXPECT_EQ(j["runs"].size(), 3u);
  EXPECT_GT(j["median_pps"].get<double>(), 0);
}

TEST_F(PktgenSessionTest, TextReportHasResultLines) {
  int rc;
  std::string err;
  std::string out = run(cmd({"-i", "foo", "-n", "1000", "-t", "2"}), &rc, &err);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(out.find("Device: foo@0\nResult: OK: "), std::string::npos) << out;
  EXPECT_NE(out.find("Device: foo@1\nResult: OK: "), std::string::npos) << out;
  EXPECT_NE(out.find(", 1000 (60byte,0frags)"), std::string::npos) << out;
  EXPECT_NE(out.find("Total: 2000 packets"), std::string::npos) << out;
}

TEST_F(PktgenSessionTest, AbAlternatesAndReportsRatio) {
  int rc;
  std::string err;
  PktgenSessionResult res;
  PktgenCommand c = cmd({"-i", "foo", "-n", "1000", "--repeat", "2", "--ab", "defer_free=on|off", "--json"});
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  rc = run_pktgen(c, *dev, pool, f, &err, &res);
  std::fclose(f);
  std::string out(buf, len);
  free(buf);
  ASSERT_EQ(rc, 0) << err;
  // A warm-up run of A (not counted), then AB BA: each side first once.
  EXPECT_EQ(res.run_labels, (std::vector<std::string>{"A", "B", "B", "A"}));
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["setting"], "defer_free");
  EXPECT_EQ(j["a"]["value"], "on");
  EXPECT_EQ(j["b"]["value"], "off");
  EXPECT_EQ(j["a"]["runs"].size(), 2u);
  EXPECT_GT(j["ratio_a_over_b"].get<double>(), 0);
  EXPECT_EQ(j["order"], "abba");
  EXPECT_EQ(j["sequence"], "AB BA");
  EXPECT_EQ(j["warmup"]["side"], "A");
  EXPECT_EQ(j["schedule"].size(), 4u);
  EXPECT_EQ(j["schedule"][2]["side"], "B");
  EXPECT_EQ(j["schedule"][2]["slot"], "first");
  for (const char* k : {"effect", "effect_ci_low", "effect_ci_high", "position_bias", "position_ci_low",
                        "position_ci_high", "few_runs"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"median_pps", "min_pps", "max_pps", "spread", "level_pps"})
    EXPECT_TRUE(j["a"].contains(k)) << k;
  EXPECT_LE(j["effect_ci_low"].get<double>(), j["ratio_a_over_b"].get<double>());
  EXPECT_GE(j["effect_ci_high"].get<double>(), j["ratio_a_over_b"].get<double>());
}

TEST_F(PktgenSessionTest, AbBypassLeavesAApplied) {
  int rc;
  std::string err;
  run(cmd({"-i", "foo", "-n", "100", "--ab", "bypass=off|on"}), &rc, &err);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_FALSE(net.xmit_config().bypass.load());
}

TEST_F(PktgenSessionTest, AbUnknownSettingOrValueIsAnError) {
  int rc;
  std::string err;
  run(cmd({"-i", "foo", "-n", "10", "--ab", "warp=on|off"}), &rc, &err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("--ab: unknown sysctl 'warp'"), std::string::npos) << err;
  run(cmd({"-i", "foo", "-n", "10", "--ab", "bypass=on|maybe"}), &rc, &err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("bypass: expected on or off, not 'maybe'"), std::string::npos) << err;
}

TEST(PktgenMedianTest, Median) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_EQ(median({}), 0);
}

}  // namespace
}  // namespace pktpath
