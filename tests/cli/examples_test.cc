// The four reproduction scripts run (in their short mode) and every line they print with
// --json parses as JSON.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "sanitizer_scale.h"

namespace pktpath::cli {
namespace {

// `pktpath run --json examples/NAME`: its exit code and stdout; stderr is printed on failure.
struct ExampleRun {
  int rc;
  std::string out, err;
};
ExampleRun run_example(const std::string& name) {
  const std::string path = std::string(PKTPATH_SOURCE_DIR) + "/examples/" + name;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"run", "--json", path});
  std::string out = ::testing::internal::GetCapturedStdout();
  return {rc, out, ::testing::internal::GetCapturedStderr()};
}

class ExamplesTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExamplesTest, ShortModeRunsAndPrintsJsonLines) {
  ::setenv("PP_DURATION", "0.05", 1);
  ::setenv("PP_REPEAT", "1", 1);
  ::setenv("PP_PACKETS", "20000", 1);
  ::setenv("PP_COUNT", "20000", 1);
  const ExampleRun r = run_example(GetParam());
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(r.out);
  int docs = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
    ++docs;
  }
  EXPECT_GT(docs, 0) << r.out;
}

// Every pktgen run's elapsed time in a document (its "total" objects, however nested).
void collect_run_usec(const nlohmann::json& j, std::vector<uint64_t>& out) {
  if (j.is_object()) {
    if (j.contains("total") && j["total"].is_object() && j["total"].contains("usec"))
      out.push_back(j["total"]["usec"].get<uint64_t>());
    for (const auto& [k, v] : j.items()) collect_run_usec(v, out);
  } else if (j.is_array()) {
    for (const auto& v : j) collect_run_usec(v, out);
  }
}

// The README's short mode as written (PP_DURATION and PP_REPEAT only): every pktgen run
// ends at its duration, not at the example's full packet count. (001 and 002 run only
// `-n 0 --ab` lines, which end by their duration alone.)
TEST(ExamplesShortMode, ReadmeShortModeBoundsEveryRun) {
  if (pktpath::testing::kUnderSanitizer) GTEST_SKIP() << "the bench lines' full synthetic counts take minutes sanitized";
  for (const char* example : {"seed-000-egress.pp", "seed-003-bpf.pp"}) {
    SCOPED_TRACE(example);
    ::setenv("PP_DURATION", "0.2", 1);
    ::setenv("PP_REPEAT", "1", 1);
    ::unsetenv("PP_PACKETS");
    ::unsetenv("PP_COUNT");
    const ExampleRun r = run_example(example);
    ASSERT_EQ(r.rc, 0) << r.err;
    std::vector<uint64_t> usec;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) collect_run_usec(nlohmann::json::parse(line), usec);
    EXPECT_FALSE(usec.empty()) << r.out;
    for (uint64_t u : usec) EXPECT_LE(u, 600'000u) << "a run went on past its 0.2 s duration";
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ExamplesTest,
                         ::testing::Values("seed-000-egress.pp", "seed-001-bypass.pp", "seed-002-defer.pp",
                                           "seed-003-bpf.pp"));

}  // namespace
}  // namespace pktpath::cli
