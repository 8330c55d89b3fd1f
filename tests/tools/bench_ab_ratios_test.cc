// scripts/bench-ab-ratios, the verdict of the benchmark guard CI runs: fed rounds of
// made-up timings, it must fail on a clear regression of 25 % or more and only then.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace pktpath {
namespace {

struct Verdict {
  int exit_code;
  std::string text;
};

// Six ABBA rounds of one benchmark: A takes `a` ns, B `b` ns, each run off by a fixed
// small pattern so the bootstrap has spread to work with.
Verdict judge(double a, double b, double max_ratio) {
  char path[] = "/tmp/bench-ab-rows.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return {-1, "mkstemp failed"};
  close(fd);
  {
    std::ofstream rows(path);
    const double wobble[] = {1.00, 1.03, 0.98, 1.02, 0.99, 1.01};
    for (int round = 0; round < 6; ++round) {
      bool a_first = round % 2 == 0;
      rows << "A," << round << "," << (a_first ? "first" : "second") << ",BM_X,"
           << a * wobble[round] << "\n";
      rows << "B," << round << "," << (a_first ? "second" : "first") << ",BM_X,"
           << b * wobble[(round + 3) % 6] << "\n";
    }
  }
  std::string cmd = std::string("python3 ") + PKTPATH_SOURCE_DIR + "/scripts/bench-ab-ratios " +
                    path + " REV " + std::to_string(max_ratio) + " 2>&1";
  Verdict v{-1, ""};
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) v.text += buf;
    int status = pclose(p);
    v.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  unlink(path);
  return v;
}

TEST(BenchAbRatios, EqualSidesPass) {
  Verdict v = judge(10.0, 10.0, 1.25);
  EXPECT_EQ(v.exit_code, 0) << v.text;
  EXPECT_NE(v.text.find("BM_X"), std::string::npos) << v.text;
  EXPECT_EQ(v.text.find("REGRESSION"), std::string::npos) << v.text;
}

TEST(BenchAbRatios, ClearRegressionFails) {
  Verdict v = judge(10.0, 14.0, 1.25);
  EXPECT_EQ(v.exit_code, 1) << v.text;
  EXPECT_NE(v.text.find("REGRESSION"), std::string::npos) << v.text;
}

TEST(BenchAbRatios, SlowdownUnderTheLimitPasses) {
  Verdict v = judge(10.0, 11.5, 1.25);
  EXPECT_EQ(v.exit_code, 0) << v.text;
  EXPECT_NE(v.text.find("1.150"), std::string::npos) << v.text;
}

TEST(BenchAbRatios, SpeedupPasses) {
  Verdict v = judge(10.0, 5.0, 1.25);
  EXPECT_EQ(v.exit_code, 0) << v.text;
  EXPECT_NE(v.text.find("0.500"), std::string::npos) << v.text;
}

}  // namespace
}  // namespace pktpath
