// The same tc configuration and the same frames in the kernel and in pktpath, then the
// counters compared: veth v0's clsact ingress drops TCP (bpf da) and redirects UDP to v2
// (mirred), whose egress drops port 53, so the mirred counts those as overlimits. The
// kernel's frames come from v0's peer v1 (AF_PACKET, python3); pktpath's from a pcap rx
// device named v0, v2 a dummy. `tc -s filter show` and `tc -s qdisc show dev D clsact`
// must match after kernel_test::normalise_tc() (diff_frames.h). Skips without root, veth,
// clsact or python3.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "diff_frames.h"

namespace pktpath {
namespace {

using kernel_test::Frame;
using kernel_test::run_out;
using kernel_test::sh;

const std::vector<std::string> kLines = {
    "qdisc add dev v0 clsact",
    "qdisc add dev v2 clsact",
    // TCP: TC_ACT_SHOT; the rest: TC_ACT_UNSPEC, on to the next filter.
    "filter add dev v0 ingress prio 1 bpf da bytecode '6,40 0 0 12,21 0 3 2048,48 0 0 23,21 0 1 6,6 0 0 2,6 0 0 "
    "4294967295'",
    "filter add dev v0 ingress prio 2 bpf bytecode '6,40 0 0 12,21 0 3 2048,48 0 0 23,21 0 1 17,6 0 0 65535,6 0 0 0' "
    "action mirred egress redirect dev v2",
    // UDP port 53 (IHL 5): dropped on v2's way out.
    "filter add dev v2 egress prio 1 bpf da bytecode '4,40 0 0 36,21 0 1 53,6 0 0 2,6 0 0 0'",
};
const std::vector<std::string> kShows = {"-s filter show dev v0 ingress", "-s qdisc show dev v0 clsact",
                                         "-s qdisc show dev v2 clsact"};

std::vector<Frame> frames() {
  std::vector<Frame> out;
  const uint16_t ports[] = {53, 80, 9, 53, 1000};
  for (size_t k = 0; k < 60; ++k)
    out.push_back(kernel_test::frame(0x0a000001 + static_cast<uint32_t>(k % 5), 0x0a000002, k % 4 == 0 ? 6 : 17,
                                     ports[k % 5], 18 + (k % 7) * 9));
  return out;
}


std::string kernel_side(const std::vector<Frame>& fs, std::string& why) {
  const std::string ns = "pptcc" + std::to_string(::getpid());
  sh("ip netns del " + ns);
  if (!sh("ip netns add " + ns)) return why = "ip netns add failed", "";
  sh("ip netns exec " + ns + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
  std::string out;
  bool ok = sh("ip -n " + ns + " link add v0 type veth peer name v1") &&
            sh("ip -n " + ns + " link add v2 type veth peer name v3");
  for (const char* d : {"v0", "v1", "v2", "v3"}) ok = ok && sh("ip -n " + ns + " link set " + d + " up");
  if (!ok) why = "cannot make the veth pairs";
  for (const std::string& l : kLines)
    if (why.empty() && !sh("ip netns exec " + ns + " tc " + l)) why = "the kernel refuses \"tc " + l + "\"";
  if (why.empty() && !kernel_test::kernel_send(ns, "v1", fs)) why = "python3 could not send the frames";
  if (why.empty())
    for (const std::string& s : kShows) out += run_out("ip netns exec " + ns + " tc " + s + " 2>/dev/null");
  sh("ip netns del " + ns);
  return out;
}

TEST(TcCountersDifferential, ActionAndQdiscCountersAsTheKernel) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a kernel namespace and veth)";
  if (!sh("command -v python3")) GTEST_SKIP() << "needs python3";
  const auto fs = frames();
  std::string why;
  const std::string want = kernel_test::normalise_tc(kernel_side(fs, why));
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string tag = std::to_string(::getpid());
  const std::string pcapf = ::testing::TempDir() + "tc_counters_" + tag + ".pcap",
                    script = ::testing::TempDir() + "tc_counters_" + tag + ".pp";
  ASSERT_TRUE(kernel_test::write_pcap(pcapf, fs));
  {
    std::ofstream f(script);
    f << "ip link add dev v0 type pcap rx " << pcapf << " pace max\n"
      << "ip link add dev v2 type dummy\nip link set dev v2 up\n";
    for (const std::string& l : kLines) f << "tc " << l << "\n";
    f << "ip link set dev v0 up\n";
    for (const std::string& s : kShows) f << "tc " << s << "\n";
  }
  const std::string got = kernel_test::normalise_tc(run_out(std::string(PKTPATH_BINARY) + " run " + script + " 2>&1"));
  std::remove(pcapf.c_str());
  std::remove(script.c_str());
  const size_t differ = kernel_test::differing_lines(want, got);
  std::printf("tc counters differential: %zu frames, %zu differing lines\n", fs.size(), differ);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace pktpath
