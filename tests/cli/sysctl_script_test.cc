// `sysctl` script lines (cli/sysctl.cc): write, read, list, aliases, bad keys and values.
#include <gtest/gtest.h>

#include "script_run_util.h"

namespace pktpath::cli {
namespace {

using testutil::run_pp;

TEST(SysctlScript, WriteReadAndList) {
  auto r = run_pp(
      "sysctl -w net.core.dev_weight=16\n"
      "sysctl net.core.dev_weight\n"
      "sysctl -n net/core/dev_weight\n"
      "sysctl -q -w bypass=off\n"
      "sysctl bypass\n"
      "sysctl -a\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("net.core.dev_weight = 16\nnet.core.dev_weight = 16\n16\nnet.pktpath.qdisc_bypass = off\n"), 0u)
      << r.out;
  EXPECT_NE(r.out.find("net.core.bpf_jit_enable = "), std::string::npos);
  EXPECT_NE(r.out.find("net.core.default_qdisc = pfifo_fast\n"), std::string::npos);
  EXPECT_NE(r.out.find("net.pktpath.nf_hook_point = off\n"), std::string::npos);
}

// A bad key or value stops the script before anything runs, naming the word.
TEST(SysctlScript, BadKeysAndValuesNameTheWord) {
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {"sysctl -w net.core.nosuch=1", "cannot stat /proc/sys/net/core/nosuch: No such file or directory (at \"net.core.nosuch=1\")"},
      {"sysctl -w net.core.dev_weight=0", "expected a number 1..2147483647, not '0' (at \"net.core.dev_weight=0\")"},
      {"sysctl -w net.core.bpf_jit_enable=2", "(at \"net.core.bpf_jit_enable=2\")"},
      {"sysctl -w net.core.default_qdisc=nosuch", "unknown or unusable qdisc kind 'nosuch'"},
      {"sysctl -w nf_hook_point=maybe", "expected on, off or before_fix, not 'maybe'"},
      {"sysctl net.core.dev_weight=3", "setting a key needs -w (at \"net.core.dev_weight=3\")"},
      {"sysctl -w net.core.dev_weight", "-w needs KEY=VALUE"},
      {"sysctl -x", "unknown option"},
      {"sysctl -w net.core.dev_weight=0x", "not '0x'"},
      {"sysctl -w net.core.dev_weight=-1", "not '-1'"},
      {"sysctl -w net.core.dev_weight=99999999999999999999", "not '99999999999999999999'"},
      {"sysctl", "expected a key, or -a"},
  };
  for (const Case& c : cases) {
    auto r = run_pp(std::string("ip link add dev foo type dummy\n") + c.line + "\n");
    EXPECT_EQ(r.rc, 1) << c.line;
    EXPECT_NE(r.err.find(":2: sysctl: "), std::string::npos) << c.line << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.line << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.line;
  }
}

// Numbers in base 0, as proc_dointvec reads them: hex and octal too.
TEST(SysctlScript, NumbersInHexAndOctal) {
  auto r = run_pp("sysctl -w net.core.dev_weight=0x10\nsysctl -n net.core.dev_weight\n"
                  "sysctl -w net.core.dev_weight=010\nsysctl -n net.core.dev_weight\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "net.core.dev_weight = 0x10\n16\nnet.core.dev_weight = 010\n8\n") << r.out;
}

// net.core.default_qdisc decides what a queueing device gets on its first up.
TEST(SysctlScript, DefaultQdiscIsAttachedOnUp) {
  auto r = run_pp(
      "sysctl -q -w net.core.default_qdisc=pfifo\n"
      "ip link add dev t0 type testdrv\n"
      "ip link set dev t0 up\n"
      "tc qdisc show dev t0\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("qdisc pfifo 0: root"), std::string::npos) << r.out;
}

// pktgen's --ab names a sysctl by its full name too, and leaves A applied.
TEST(SysctlScript, AbTakesFullNames) {
  auto r = run_pp(
      "ip link add dev foo type dummy\n"
      "ip link set dev foo up\n"
      "pktgen -i foo -n 100 --repeat 1 --ab net.pktpath.qdisc_bypass=off|on\n"
      "sysctl bypass\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("A/B net.pktpath.qdisc_bypass: A=off"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("net.pktpath.qdisc_bypass = off\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pktpath::cli
