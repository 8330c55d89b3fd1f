// `pktgen` script lines: the short form, the long set/start form, JSON Lines, errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"

namespace pktpath::cli {
namespace {

struct Out {
  int rc;
  std::string out, err;
};

Out run(const std::string& text, bool json = false) {
  static int n = 0;
  std::string path = ::testing::TempDir() + "/pp_pktgen_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + ".pp";
  std::ofstream(path) << text;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::vector<std::string> args = {"run"};
  if (json) args.push_back("--json");
  args.push_back(path);
  int rc = run_main(args);
  std::fflush(stdout);
  Out o{rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  std::remove(path.c_str());
  return o;
}

const char* kSetup = "ip link add dev foo type dummy\nip link set dev foo up\n";

TEST(ScriptPktgen, DocumentZeroLineRunsAsWritten) {
  Out o = run(std::string(kSetup) + "pktgen -i foo -n 20000 -m \"11:11:11:11:11:11\" -d 1.1.1.1\n");
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("Device: foo@0\nResult: OK: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(", 20000 (60byte,0frags)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("errors: 0"), std::string::npos) << o.out;
}

TEST(ScriptPktgen, LongFormSetAndStart) {
  Out o = run(std::string(kSetup) +
              "pktgen set dev foo\npktgen set count 3000\npktgen set pkt_size 100\n"
              "pktgen set xmit_mode start_xmit\npktgen set burst 16\npktgen set threads 2\npktgen start\n",
              true);
  ASSERT_EQ(o.rc, 0) << o.err;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["mode"], "start_xmit");
  EXPECT_EQ(j["total"]["packets"], 6000);
  EXPECT_EQ(j["threads"].size(), 2u);
  EXPECT_EQ(j["threads"][0]["pkt_size"], 100);
}

TEST(ScriptPktgen, JsonLinesAndAb) {
  Out o = run(std::string(kSetup) + "pktgen -i foo -n 1000 --repeat 2 --ab defer_free=on|off\n", true);
  ASSERT_EQ(o.rc, 0) << o.err;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["setting"], "defer_free");
  EXPECT_EQ(j["a"]["runs"].size(), 2u);
  EXPECT_TRUE(j.contains("ratio_a_over_b"));
}

TEST(ScriptPktgen, ErrorsNameLineAndWord) {
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {"pktgen -i foo -s 9", "-s: pkt_size: invalid value '9'"},
      {"pktgen -i nosuch -n 10", "cannot find device \"nosuch\""},
      {"pktgen set cuont 10", "unknown pktgen parameter 'cuont'"},
      {"pktgen set count x", "count: invalid value 'x'"},
      {"pktgen set count", "usage: pktgen set KEY VALUE"},
      {"pktgen start now", "takes no arguments"},
      {"pktgen start", "no device (-i DEV)"},
      {"pktgen -i foo -n 10 --ab nosuch=a|b", "--ab: unknown sysctl 'nosuch'"},
  };
  for (const auto& c : cases) {
    Out o = run(std::string(kSetup) + c.line + "\n");
    EXPECT_EQ(o.rc, 1) << c.line;
    EXPECT_NE(o.err.find(":3: "), std::string::npos) << c.line << " -> " << o.err;  // file:line
    EXPECT_NE(o.err.find(c.expect), std::string::npos) << c.line << " -> " << o.err;
  }
}

}  // namespace
}  // namespace pktpath::cli
