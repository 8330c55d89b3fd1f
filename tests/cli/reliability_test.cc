// Bad inputs and lifecycles through the CLI: each case ends promptly with the right
// result or a clear error (docs/reliability.md lists the classes).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace pktpath::cli {
namespace {

std::string temp_path(const std::string& ext) {
  static int n = 0;
  return ::testing::TempDir() + "/pp_rel_" + std::to_string(::getpid()) + "_" +
         std::to_string(n++) + ext;
}

struct RunResult {
  int rc;
  std::string out, err;
};

RunResult run_args(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main(args);
  std::fflush(stdout);
  return RunResult{rc, ::testing::internal::GetCapturedStdout(),
                   ::testing::internal::GetCapturedStderr()};
}

RunResult run_script(const std::string& text) {
  const std::string path = temp_path(".pp");
  std::ofstream(path) << text;
  RunResult r = run_args({"run", path});
  std::remove(path.c_str());
  return r;
}

// A throttled tbf's watchdog is armed on the sender's Cpu; the qdisc then goes away from
// the control thread by every route. Runs clean (asan: no use after free), exit 0.
TEST(ReliabilityTimers, TbfWatchdogOutlivedByNoRoute) {
  const std::string setup =
      "ip link add dev foo type dummy\n"
      "ip link set dev foo up\n";
  const std::string tbf = "tbf rate 8kbit burst 1600 limit 100000\n";
  const std::vector<std::string> scripts = {
      setup + "tc qdisc add dev foo root " + tbf + "send dev foo count 100\nip link del dev foo\n",
      setup + "tc qdisc add dev foo root " + tbf + "send dev foo count 100\n"
              "tc qdisc del dev foo root\n",
      setup + "tc qdisc add dev foo root " + tbf + "send dev foo count 100\n"
              "tc qdisc replace dev foo root pfifo\n",
      setup + "tc qdisc add dev foo root handle 1: prio\n"
              "tc qdisc add dev foo parent 1:1 " + tbf +
              "tc qdisc add dev foo parent 1:2 " + tbf +
              "tc qdisc add dev foo parent 1:3 " + tbf +
              "send dev foo count 100 priority 0\nsend dev foo count 100 priority 6\n"
              "ip link del dev foo\n",
      "ip link add dev foo numtxqueues 4 type testdrv\nip link set dev foo up\n"
      "tc qdisc add dev foo root handle 1: mq\n"
      "tc qdisc add dev foo parent 1:1 " + tbf +
      "tc qdisc add dev foo parent 1:2 " + tbf +
      "tc qdisc add dev foo parent 1:3 " + tbf +
      "tc qdisc add dev foo parent 1:4 " + tbf +
      "send dev foo count 100 threads 2\nip link del dev foo\n",
      setup + "tc qdisc add dev foo root " + tbf + "send dev foo count 100\n"
              "ip link set dev foo down\nip link set dev foo up\n"
              "send dev foo count 10\nip link del dev foo\n",
  };
  for (const std::string& s : scripts) {
    RunResult r = run_script(s + "sleep 0.2\n");
    EXPECT_EQ(r.rc, 0) << s << r.err;
  }
}

}  // namespace
}  // namespace pktpath::cli
