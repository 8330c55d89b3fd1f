// The four reproduction scripts run (in their short mode) and every line they print with
// --json parses as JSON.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"

namespace pktpath::cli {
namespace {

class ExamplesTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExamplesTest, ShortModeRunsAndPrintsJsonLines) {
  ::setenv("PP_DURATION", "0.05", 1);
  ::setenv("PP_REPEAT", "1", 1);
  ::setenv("PP_PACKETS", "20000", 1);
  ::setenv("PP_COUNT", "20000", 1);
  const std::string path = std::string(PKTPATH_SOURCE_DIR) + "/examples/" + GetParam();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int rc = run_main({"run", "--json", path});
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << err;
  std::istringstream in(out);
  int docs = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
    ++docs;
  }
  EXPECT_GT(docs, 0) << out;
}

INSTANTIATE_TEST_SUITE_P(Seeds, ExamplesTest,
                         ::testing::Values("seed-000-egress.pp", "seed-001-bypass.pp", "seed-002-defer.pp",
                                           "seed-003-bpf.pp"));

}  // namespace
}  // namespace pktpath::cli
