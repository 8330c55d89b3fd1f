// `pktpath` with no arguments: the demo runs all four documents and prints the table.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "cli/command.h"

namespace pktpath::cli {
namespace {

// Effects in a demo row: "xE (LOW-HIGH)" followed, before the next ';', by the verdict
// ", no change", ", faster" or ", slower".
int effects_in(const std::string& line) {
  int n = 0;
  for (size_t at = line.find(" x"); at != std::string::npos; at = line.find(" x", at + 1)) {
    double e, lo, hi;
    int used = 0;
    if (std::sscanf(line.c_str() + at, " x%lf (%lf-%lf)%n", &e, &lo, &hi, &used) != 3 || used == 0) continue;
    const std::string rest = line.substr(at + used, line.find(';', at + used) - (at + used));
    if (rest.find(", no change") != std::string::npos || rest.find(", faster") != std::string::npos ||
        rest.find(", slower") != std::string::npos)
      ++n;
  }
  return n;
}

TEST(Demo, QuickRunPrintsEveryDocumentsRow) {
  ::testing::internal::CaptureStdout();
  int rc = run_main({"demo", "--quick"});
  std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0) << out;
  for (const char* row : {"\n000 ", "\n001 ", "\n002 ", "\n003 "}) EXPECT_NE(out.find(row), std::string::npos) << out;
  EXPECT_NE(out.find("Mb/s"), std::string::npos);
  EXPECT_NE(out.find("kpps (off -> on)"), std::string::npos);
  EXPECT_NE(out.find("Mpps on"), std::string::npos);
  EXPECT_NE(out.find("cycles saved/flush"), std::string::npos);
  EXPECT_NE(out.find("ns/req saved"), std::string::npos);
  // Every row: an effect with its 95 % interval and the verdict a reader takes from it;
  // row 000 twice (before and after the fix).
  std::istringstream in(out);
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 4 || line[0] != '0' || line[3] != ' ') continue;
    ++rows;
    EXPECT_EQ(effects_in(line), line.rfind("000", 0) == 0 ? 2 : 1) << line;
  }
  EXPECT_EQ(rows, 4) << out;
  EXPECT_NE(out.find("before fix"), std::string::npos);
}

TEST(Demo, RejectsUnknownOptions) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_main({"demo", "--slow"}), 2);
  ::testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace pktpath::cli
