// `pktpath` with no arguments: the demo runs all four documents and prints the table.
#include <gtest/gtest.h>

#include "cli/command.h"

namespace pktpath::cli {
namespace {

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
  EXPECT_NE(out.find("ns/req"), std::string::npos);
}

TEST(Demo, RejectsUnknownOptions) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_main({"demo", "--slow"}), 2);
  ::testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace pktpath::cli
