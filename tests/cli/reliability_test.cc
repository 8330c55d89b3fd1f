// Bad inputs and lifecycles through the CLI: each case ends promptly with the right
// result or a clear error (docs/reliability.md lists the classes).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
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


// pktgen ends promptly: a size no buffer holds is refused when the script is parsed, a
// device that is down is refused at start, a MIN set alone runs as in the kernel.
TEST(ReliabilityPktgen, RefusesWhatWouldHangAndAcceptsWhatLinuxAccepts) {
  const std::string up = "ip link add dev foo type dummy\nip link set dev foo up\n";
  RunResult r = run_script(up + "pktgen -i foo -n 10 -s 2000\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":3: -s: pkt_size: invalid value '2000' (expected 42..1920: a packet buffer holds 1920 bytes)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");  // nothing ran
  r = run_script("ip link add dev foo type dummy\npktgen -i foo -n 0\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2: device is not up: \"foo\""), std::string::npos) << r.err;
  r = run_script("ip link add dev foo type dummy\npktgen set dev foo\npktgen set count 0\npktgen start\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("device is not up"), std::string::npos) << r.err;
  r = run_script(up + "pktgen set dev foo\npktgen set count 100\npktgen set src_min 10.0.0.1\n"
                      "pktgen set min_pkt_size 100\npktgen set tos 10\npktgen start\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("100 (100byte,0frags)"), std::string::npos) << r.out;
}


// A failing -w file (/dev/full) is an error: message, exit 1, the lost packets counted
// as dropped, never reported as captured.
TEST(ReliabilityCapture, WriteErrorSurfaces) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  const std::string setup = "ip link add dev foo type dummy\nip link set dev foo up\ncapture -i foo -w /dev/full\n";
  for (const std::string stop : {"capture stop\n", ""}) {  // stopped, or at the script's end
    RunResult r = run_script(setup + "send dev foo count 20 size 1000\n" + stop);
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.err.find("capture: /dev/full: write failed: No space left on device (20 packets not written)"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("0 packets captured\n20 packets received by filter\n20 packets dropped by kernel"),
              std::string::npos)
        << r.out;
  }
}

// Script inputs are bounded and must be text files.
TEST(ReliabilityInput, ScriptReadsAreBounded) {
  RunResult r = run_args({"run", "/dev/zero"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("/dev/zero: binary data (a NUL byte), not text"), std::string::npos) << r.err;
  r = run_args({"run", ::testing::TempDir()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(": is a directory"), std::string::npos) << r.err;
  const std::string big = temp_path(".pp");
  {
    std::ofstream f(big);
    const std::string line(1023, '#');
    for (int i = 0; i < 16 * 1024 + 1; ++i) f << line << '\n';
  }
  r = run_args({"run", big});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(": larger than 16 MiB"), std::string::npos) << r.err;
  std::remove(big.c_str());
  r = run_args({"bpf", "check", "--bytecode-file", "/dev/zero"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("binary data"), std::string::npos) << r.err;
  r = run_args({"bpf", "check", "--bytecode-file", ::testing::TempDir()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  r = run_args({"bpf", "bench", "--expr", "ip", "--synthetic", "10", "--packets", "99999999999"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("bad --packets '99999999999' (1..1000000000)"), std::string::npos) << r.err;
  r = run_args({"bpf", "bench", "--expr", "ip", "--synthetic", "99999999999"});
  EXPECT_EQ(r.rc, 2);
}

// Every byte of a `send` frame is written: Ethernet, a valid IPv4 header, UDP, zeros,
// whatever the recycled buffer held before (pktgen's frames here).
TEST(ReliabilitySend, FramesHaveNoUninitialisedBytes) {
  const std::string pcap = temp_path(".pcap");
  RunResult r = run_script(
      "ip link add dev foo type dummy\nip link set dev foo up\n"
      "pktgen -i foo -n 20000 -s 200\n"
      "capture -i foo -w " + pcap + "\nsend dev foo count 3 size 100\ncapture stop\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::ifstream in(pcap, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 24u + 3 * (16 + 100));
  const auto* f = reinterpret_cast<const uint8_t*>(bytes.data()) + 24 + 16;
  const uint8_t ip[20] = {0x45, 0, 0, 86, 0, 0, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2};
  for (int i = 0; i < 20; ++i) {
    if (i == 10 || i == 11) continue;  // checksum
    EXPECT_EQ(f[14 + i], ip[i]) << "ip byte " << i;
  }
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uint32_t(f[14 + i] << 8 | f[14 + i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu);
  EXPECT_EQ(f[14 + 20 + 5], 100 - 14 - 20);  // UDP length
  for (int i = 14 + 28; i < 100; ++i) EXPECT_EQ(f[i], 0) << "payload byte " << i;
  std::remove(pcap.c_str());
}

// A pcap cut mid-record: the packets before the cut are run and printed, then the error.
TEST(ReliabilityPcap, TruncatedFileRunsWhatCameBefore) {
  const std::string pcap = temp_path(".pcap");
  RunResult r = run_script(
      "ip link add dev foo type dummy\nip link set dev foo up\n"
      "capture -i foo -w " + pcap + "\nsend dev foo count 3 size 100\ncapture stop\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(::truncate(pcap.c_str(), 24 + 2 * (16 + 100) + 16 + 50), 0);
  r = run_args({"bpf", "run", "--expr", "udp", "--pcap", pcap});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "262144\n262144\n");
  EXPECT_NE(r.err.find(pcap + ": truncated dump file"), std::string::npos) << r.err;
  std::remove(pcap.c_str());
}

}  // namespace
}  // namespace pktpath::cli

namespace pktpath::cli {
namespace {

// A packet that circles for ever (lo's ingress redirected to lo's egress, which is lo's
// ingress again) keeps the receiving Cpu busy, as it would keep a kernel's softirq busy;
// the runner's bounded drains stop it, and what still circles at the end is dropped
// before the devices go: the script ends, nothing is touched after it is freed.
TEST(ReliabilityReceive, RedirectLoopOnLoEnds) {
  RunResult r = run_script(
      "ip link set dev lo up\n"
      "tc qdisc add dev lo clsact\n"
      "tc filter add dev lo ingress matchall action mirred egress redirect dev lo\n"
      "send dev lo count 10\n"
      "ip -s link show dev lo\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("1: lo:"), std::string::npos) << r.out;
}

TEST(ReliabilityReceive, VethPairsLoopingThroughBothNamespacesEnd) {
  RunResult r = run_script(
      "ip netns add blue\n"
      "ip link add a type veth peer name b netns blue\n"
      "ip link set dev a up\n"
      "ip -n blue link set dev b up\n"
      "tc -n blue qdisc add dev b clsact\n"
      "tc -n blue filter add dev b ingress matchall action mirred egress redirect dev b\n"
      "tc qdisc add dev a clsact\n"
      "tc filter add dev a ingress matchall action mirred egress redirect dev a\n"
      "send dev a count 5\n"
      "ip netns del blue\n");
  EXPECT_EQ(r.rc, 0) << r.err;
}

}  // namespace
}  // namespace pktpath::cli
