// The same tc lines on a kernel veth in a namespace (the system's tc and kernel) and in a
// pktpath script: `tc [-s|-d|-j|-s -j|-s -d] qdisc|class|filter show` print the same
// bytes after the normalisations in kernel_test::normalise_tc() (diff_frames.h). Each configuration
// prints one line with the number of lines that differ. Skips without root, veth or a
// kind the kernel lacks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "diff_frames.h"
#include "drivers/kernel_ns.h"

namespace pktpath {
namespace {

using kernel_test::run_out;
using kernel_test::sh;

struct Config {
  const char* name;
  std::vector<std::string> lines;  // tc lines (without "tc"), on veth v0 <-> v1
  std::vector<std::string> shows;  // tc show lines compared, each also with -s, -d, -j, -s -j, -s -d
  const char* link = "v0 type veth peer name v1";  // after `ip link add`
};

// Each show as given and with tc's -s, -d, -j, -s -j and -s -d flags (iproute2 6.1
// prints classes as text under -j, so `-j class show` is not compared: pktpath prints
// JSON there).
std::vector<std::string> with_flags(const std::vector<std::string>& shows) {
  std::vector<std::string> out;
  for (const std::string& s : shows)
    for (const char* f : {"", "-s ", "-d ", "-j ", "-s -j ", "-s -d "})
      if (!(std::string(f).find("-j") != std::string::npos && s.rfind("class", 0) == 0)) out.push_back(f + s);
  return out;
}


std::string kernel_output(const Config& c, std::string& why) {
  const std::string ns = "pptcd" + std::to_string(::getpid());
  sh("ip netns del " + ns);
  if (!sh("ip netns add " + ns)) {
    why = "ip netns add failed";
    return {};
  }
  sh("ip netns exec " + ns + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
  std::string out;
  if (!sh("ip -n " + ns + " link add " + c.link) || !sh("ip -n " + ns + " link set v0 up") ||
      !sh("ip -n " + ns + " link set v1 up")) {
    why = "cannot make a veth pair";
  } else {
    for (const std::string& l : c.lines)
      if (!sh("ip netns exec " + ns + " tc " + l)) {
        why = "the kernel refuses \"tc " + l + "\" (a module missing?)";
        break;
      }
    if (why.empty())
      for (const std::string& s : with_flags(c.shows))
        out += run_out("ip netns exec " + ns + " tc " + s + " 2>/dev/null");
  }
  sh("ip netns del " + ns);
  return out;
}

std::string pktpath_output(const Config& c) {
  const std::string path = ::testing::TempDir() + "tc_diff_" + std::to_string(::getpid()) + ".pp";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return "cannot write " + path;
    std::fprintf(f, "ip link add %s\nip link set v0 up\nip link set v1 up\n", c.link);
    for (const std::string& l : c.lines) std::fprintf(f, "tc %s\n", l.c_str());
    for (const std::string& s : with_flags(c.shows)) std::fprintf(f, "tc %s\n", s.c_str());
    std::fclose(f);
  }
  std::string out = run_out(std::string(PKTPATH_BINARY) + " run " + path + " 2>/dev/null");
  std::remove(path.c_str());
  return out;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

const Config kConfigs[] = {
    {"htb tree, tbf/pfifo/bfifo/pfifo_head_drop leaves",
     {"qdisc add dev v0 root handle 1: htb default 20",
      "class add dev v0 parent 1: classid 1:1 htb rate 100mbit",
      "class add dev v0 parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit cburst 15k",
      "class add dev v0 parent 1:1 classid 1:20 htb rate 70mbit",
      "class add dev v0 parent 1:1 classid 1:30 htb rate 1gbit",
      "class add dev v0 parent 1:1 classid 1:40 htb rate 10mbit burst 10k cburst 3000 mtu 9000",
      "qdisc add dev v0 parent 1:10 handle 10: tbf rate 10mbit burst 10k latency 50ms",
      "qdisc add dev v0 parent 1:20 handle 20: pfifo limit 100",
      "qdisc add dev v0 parent 1:30 handle 30: bfifo limit 10000",
      "qdisc add dev v0 parent 1:40 handle 40: tbf rate 70mbit burst 1600 limit 3000",
      "class add dev v0 parent 1:1 classid 1:50 htb rate 1mbit",
      "qdisc add dev v0 parent 1:50 handle 50: pfifo_head_drop limit 10"},
     {"qdisc show dev v0", "class show dev v0"}},
    {"htb classes in hash order", {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:7 htb rate 1mbit",
      "class add dev v0 parent 1: classid 1:3 htb rate 2mbit", "class add dev v0 parent 1: classid 1:12 htb rate 3mbit",
      "class add dev v0 parent 1: classid 1:1 htb rate 4mbit", "class add dev v0 parent 1: classid 1:ff htb rate 5mbit",
      "class add dev v0 parent 1: classid 1:20 htb rate 6mbit", "class add dev v0 parent 1: classid 1:5 htb rate 7mbit",
      "class del dev v0 classid 1:12"},
     {"class show dev v0"}},
    {"tbf root", {"qdisc add dev v0 root handle 5: tbf rate 30mbit burst 1600 limit 10000"},
     {"qdisc show dev v0", "class show dev v0"}},
    {"tbf's child added at parent MAJ: and at another minor",
     {"qdisc add dev v0 root handle 5: tbf rate 30mbit burst 1600 limit 10000",
      "qdisc add dev v0 parent 5: handle 50: pfifo limit 7", "qdisc add dev v1 root handle 6: tbf rate 1mbit burst 1600 limit 10000",
      "qdisc add dev v1 parent 6:9 handle 60: bfifo limit 3000"},
     {"qdisc show dev v0", "class show dev v0", "qdisc show dev v1", "class show dev v1"}},
    {"u32 keys, a hash table, actions",
     {"qdisc add dev v0 root handle 1: htb",
      "filter add dev v0 parent 1: protocol ip prio 5 handle 2: u32 divisor 256",
      "filter add dev v0 parent 1: protocol ip prio 5 u32 ht 2:1: match ip dst 10.0.0.1 flowid 1:10",
      "filter add dev v0 parent 1: protocol ip prio 5 u32 ht 2:7: match ip dst 10.0.0.7 flowid 1:10",
      "filter add dev v0 parent 1: protocol ip prio 5 u32 ht 800:: match ip dst 10.0.0.0/24 hashkey mask "
      "0x000000ff at 16 link 2:",
      "filter add dev v0 parent 1: protocol ip prio 5 u32 match ip src 10.1.0.0/16 match ip dport 80 0xffff "
      "action mirred egress redirect dev v1",
      "filter add dev v0 parent 1: protocol ip prio 5 u32 match ip tos 0x10 0xff"},
     {"filter show dev v0 parent 1:"}},
    {"u32 table ids across the block's prefs, newest table first",
     {"qdisc add dev v0 root handle 1: htb",
      "filter add dev v0 parent 1: protocol ip prio 5 u32 match ip dst 10.0.0.1 flowid 1:10",
      "filter add dev v0 parent 1: protocol ip prio 6 u32 match ip dst 10.0.0.2 flowid 1:10",
      "filter add dev v0 parent 1: protocol ip prio 6 u32 divisor 16",
      "filter add dev v0 parent 1: protocol ip prio 6 handle 7: u32 divisor 4",
      "filter add dev v0 parent 1: protocol ip prio 6 u32 ht 802:3: match ip src 1.2.3.4 flowid 1:3",
      "filter add dev v0 parent 1: protocol ip prio 6 u32 match ip dst 10.0.0.0/8 hashkey mask 0x0000000f at 12 "
      "link 802:",
      "filter add dev v0 parent 1: protocol ip prio 5 u32 divisor 2",
      "filter del dev v0 parent 1: protocol ip prio 6 handle 7: u32",
      "filter add dev v0 parent 1: protocol ip prio 7 u32 match ip dst 10.0.0.3 flowid 1:10"},
     {"filter show dev v0 parent 1:"}},
    {"u32 table ids per qdisc: clsact's two lists, an htb's classes",
     {"qdisc add dev v0 clsact", "filter add dev v0 ingress prio 5 u32 match u32 0 0 flowid 1:1",
      "filter add dev v0 egress prio 6 u32 match u32 0 0 flowid 1:1",
      "filter add dev v0 egress prio 6 handle 5: u32 divisor 4", "filter add dev v0 egress prio 7 u32 divisor 2",
      "qdisc add dev v1 root handle 1: htb", "class add dev v1 parent 1: classid 1:10 htb rate 1mbit",
      "filter add dev v1 parent 1: prio 3 u32 match u32 0 0 flowid 1:10",
      "filter add dev v1 parent 1:10 prio 4 u32 match u32 0 0 flowid 1:10"},
     {"filter show dev v0 ingress", "filter show dev v0 egress", "filter show dev v1 parent 1:",
      "filter show dev v1 parent 1:10"}},
    {"u32 ids after a class with filters goes",
     {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:10 htb rate 1mbit",
      "filter add dev v0 parent 1: prio 3 u32 match u32 0 0 flowid 1:1",
      "filter add dev v0 parent 1:10 prio 4 u32 match u32 0 0 flowid 1:1", "class del dev v0 classid 1:10",
      "filter del dev v0 parent 1: prio 3 handle 800::800 u32",
      "filter add dev v0 parent 1: prio 5 u32 match u32 1 1 flowid 1:1"},
     {"filter show dev v0 parent 1:"}},
    {"u32 prefs kept and dropped by deletes, ids from 800: again",
     {"qdisc add dev v0 clsact", "filter add dev v0 egress prio 6 u32 match u32 0 0 flowid 1:1",
      "filter add dev v0 egress prio 7 u32 divisor 2", "filter del dev v0 egress prio 6 handle 800::800 u32",
      "filter add dev v0 ingress prio 2 u32 match u32 0 0 flowid 1:2",
      "filter del dev v0 egress prio 7", "filter del dev v0 ingress prio 2 handle 803::800 u32",
      "filter add dev v0 egress prio 6 u32 match u32 1 1 flowid 1:3", "qdisc add dev v1 clsact",
      "filter add dev v1 egress prio 3 u32 match u32 0 0 flowid 1:1", "filter add dev v1 egress prio 3 u32 divisor 4",
      "filter del dev v1 egress prio 3 handle 800::800 u32",
      "filter add dev v1 egress prio 4 u32 match u32 0 0 flowid 1:4"},
     {"filter show dev v0 ingress", "filter show dev v0 egress", "filter show dev v1 egress"}},
    {"htb classes: a parent that is no class makes a root class; change keeps the parent",
     {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:10 htb rate 1mbit",
      "class add dev v0 parent 1:10 classid 1:20 htb rate 1mbit",
      "class add dev v0 parent 1:99 classid 1:11 htb rate 2mbit",
      "class change dev v0 parent 1:11 classid 1:20 htb rate 3mbit",
      "class replace dev v0 parent 1: classid 1:12 htb rate 1mbit"},
     {"class show dev v0"}},
    {"bpf on clsact",
     {"qdisc add dev v1 clsact", "filter add dev v1 ingress bpf da bytecode '1,6 0 0 0,'",
      "filter add dev v1 egress prio 3 bpf bytecode '4,40 0 0 12,21 0 1 2048,6 0 0 65535,6 0 0 0' "
      "action mirred egress mirror dev v0",
      "filter add dev v1 egress prio 4 bpf bytecode '1,6 0 0 65535' classid 1:2"},
     {"filter show dev v1 ingress", "filter show dev v1 egress", "qdisc show dev v1"}},
    {"action indexes, per kind in the namespace",
     {"qdisc add dev v0 clsact", "qdisc add dev v1 clsact",
      "filter add dev v0 egress prio 1 bpf bytecode '1,6 0 0 65535' action mirred egress mirror dev v1",
      "filter add dev v1 egress prio 1 bpf bytecode '1,6 0 0 65535' action mirred egress mirror dev v0",
      "filter add dev v0 egress prio 2 bpf bytecode '1,6 0 0 65535' action mirred egress redirect dev v1"},
     {"filter show dev v0 egress", "filter show dev v1 egress"}},
    {"the root's filters (no parent), u32 without at",
     {"qdisc add dev v0 root handle 1: htb default 20",
      "filter add dev v0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.1/32 flowid 1:10",
      "filter add dev v0 parent 1: protocol ip prio 1 u32 match u32 0x10000 0xffff0000 flowid 1:20"},
     {"filter show dev v0", "filter show dev v1"}},
    {"mq on a 4-queue veth, a child replaced",
     {"qdisc add dev v0 root handle 1: mq", "qdisc add dev v0 parent 1:2 handle 20: pfifo limit 50"},
     {"qdisc show dev v0", "class show dev v0"},
     "v0 numtxqueues 4 type veth peer name v1"},
    {"noqueue, ingress, pfifo_fast", {"qdisc add dev v0 ingress", "qdisc add dev v1 root handle 2: pfifo_fast"},
     {"qdisc show dev v0", "qdisc show dev v1"}},
};

TEST(TcDifferential, ShowsAsTheKernelPrints) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a kernel namespace and veth)";
  if (!sh("command -v tc")) GTEST_SKIP() << "no tc (iproute2) to compare with";
  size_t compared = 0;
  for (const Config& c : kConfigs) {
    std::string why;
    const std::string want = kernel_test::normalise_tc(kernel_output(c, why));
    if (!why.empty()) {
      std::printf("tc differential: %-48s skipped: %s\n", c.name, why.c_str());
      continue;
    }
    const std::string got = kernel_test::normalise_tc(pktpath_output(c));
    const auto a = lines_of(want), b = lines_of(got);
    size_t differ = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) differ += a[i] != b[i];
    std::printf("tc differential: %-48s %zu differing lines\n", c.name, differ);
    EXPECT_EQ(got, want) << c.name;
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "the kernel ran none of the configurations";
}

// Common mistakes, refused by the kernel (or by tc before it) and by pktpath: the message
// tc prints ("Error: MSG." from the kernel's extack, tc's own argument errors, "RTNETLINK
// answers: ERRNO" where the kernel gives no extack) must begin pktpath's, which may add
// what it names in parentheses (and the CLI "(at "WORD")").
struct Mistake {
  const char* name;
  std::vector<std::string> setup;  // tc lines that succeed first
  std::string line;                // the refused tc line
};

const Mistake kMistakes[] = {
    {"unknown qdisc kind", {}, "qdisc add dev v0 root handle 1: nosuchkind"},
    {"bad qdisc handle", {}, "qdisc add dev v0 root handle zz: htb"},
    {"missing parent qdisc", {}, "qdisc add dev v0 parent 1:10 handle 10: pfifo"},
    {"missing parent class", {"qdisc add dev v0 root handle 1: htb"}, "qdisc del dev v0 parent 1:33"},
    {"root already there", {"qdisc add dev v0 root handle 1: htb"}, "qdisc add dev v0 root handle 1: htb"},
    {"another root there", {"qdisc add dev v0 root handle 1: htb"}, "qdisc add dev v0 root handle 2: htb"},
    {"ingress hook busy", {"qdisc add dev v0 ingress"}, "qdisc add dev v0 clsact"},
    {"handle in use elsewhere",
     {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:10 htb rate 1mbit"},
     "qdisc add dev v0 parent 1:10 handle 1: pfifo"},
    {"class exists",
     {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:10 htb rate 1mbit"},
     "class add dev v0 parent 1: classid 1:10 htb rate 1mbit"},
    {"class missing", {"qdisc add dev v0 root handle 1: htb"}, "class del dev v0 classid 1:99"},
    {"qdisc at htb's class 0", {"qdisc add dev v0 root handle 1: htb"}, "qdisc add dev v0 parent 1: handle 10: pfifo"},
    {"htb class without rate", {"qdisc add dev v0 root handle 1: htb"}, "class add dev v0 parent 1: classid 1:10 htb"},
    {"filter on a missing qdisc", {"qdisc add dev v0 root handle 1: htb"},
     "filter add dev v0 parent 7: protocol ip prio 1 u32 match ip dst 1.1.1.1 flowid 1:1"},
    {"u32 table missing", {"qdisc add dev v0 root handle 1: htb"},
     "filter add dev v0 parent 1: protocol ip prio 1 u32 ht 5: match ip dst 1.1.1.1 flowid 1:1"},
    {"no such device", {}, "qdisc add dev nosuch root pfifo"},
    {"change with nothing there", {}, "qdisc change dev v0 root handle 1: htb"},
    {"change to another kind", {"qdisc add dev v0 root handle 1: htb"}, "qdisc change dev v0 root handle 1: tbf rate 1mbit burst 10k latency 5ms"},
    {"filter without clsact", {}, "filter add dev v0 ingress bpf da bytecode '1,6 0 0 0,'"},
    {"class change of a missing class",
     {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:10 htb rate 1mbit"},
     "class change dev v0 parent 1: classid 1:99 htb rate 1mbit"},
    {"class change without the parent", {"qdisc add dev v0 root handle 1: htb"},
     "class change dev v0 classid 1:99 htb rate 1mbit"},
    {"class of another qdisc than its parent's", {"qdisc add dev v0 root handle 1: htb"},
     "class add dev v0 parent 1: classid 2:11 htb rate 1mbit"},
    {"class del of the qdisc's handle", {"qdisc add dev v0 root handle 1: htb"}, "class del dev v0 classid 1:"},
    {"class change without rate",
     {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:10 htb rate 1mbit"},
     "class change dev v0 parent 1: classid 1:10 htb"},
};

// tc's message for the refused line: its first stderr line without "Error: " and the
// period iproute2 adds.
std::string kernel_error(const Mistake& m, std::string& why) {
  const std::string ns = "pptce" + std::to_string(::getpid());
  sh("ip netns del " + ns);
  if (!sh("ip netns add " + ns) || !sh("ip -n " + ns + " link add v0 type veth peer name v1")) {
    why = "cannot make a veth pair";
    sh("ip netns del " + ns);
    return {};
  }
  for (const std::string& l : m.setup)
    if (why.empty() && !sh("ip netns exec " + ns + " tc " + l)) why = "the kernel refuses \"tc " + l + "\"";
  std::string out;
  if (why.empty()) out = run_out("ip netns exec " + ns + " tc " + m.line + " 2>&1 >/dev/null");
  sh("ip netns del " + ns);
  out = out.substr(0, out.find('\n'));
  if (out.rfind("Error: ", 0) == 0) out.erase(0, 7);
  if (!out.empty() && out.back() == '.') out.pop_back();
  if (why.empty() && out.empty()) why = "the kernel took the line";
  return out;
}

// pktpath's message for the refused line: "PATH:N: MSG (at "WORD")" -> MSG.
std::string pktpath_error(const Mistake& m) {
  const std::string path = ::testing::TempDir() + "tc_err_" + std::to_string(::getpid()) + ".pp";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return "cannot write " + path;
    std::fputs("ip link add v0 type veth peer name v1\n", f);
    for (const std::string& l : m.setup) std::fprintf(f, "tc %s\n", l.c_str());
    std::fprintf(f, "tc %s\n", m.line.c_str());
    std::fclose(f);
  }
  std::string out = run_out(std::string(PKTPATH_BINARY) + " run " + path + " 2>&1 >/dev/null");
  std::remove(path.c_str());
  out = out.substr(0, out.find('\n'));
  const size_t at = out.find(".pp:");
  if (at == std::string::npos) return out;
  const size_t msg = out.find(": ", at + 4);
  if (msg == std::string::npos) return out;
  out.erase(0, msg + 2);
  const size_t word = out.rfind(" (at \"");
  if (word != std::string::npos) out.erase(word);
  return out;
}

TEST(TcDifferential, ErrorsAsTcPrintsThem) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a kernel namespace and veth)";
  if (!sh("command -v tc")) GTEST_SKIP() << "no tc (iproute2) to compare with";
  size_t compared = 0;
  for (const Mistake& m : kMistakes) {
    std::string why;
    const std::string want = kernel_error(m, why);
    if (!why.empty()) {
      std::printf("tc error differential: %-28s skipped: %s\n", m.name, why.c_str());
      continue;
    }
    const std::string got = pktpath_error(m);
    const bool same = got.rfind(want, 0) == 0;
    std::printf("tc error differential: %-28s %s\n", m.name, same ? "same" : "differs");
    EXPECT_TRUE(same) << m.name << ": tc says \"" << want << "\", pktpath \"" << got << "\"";
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "the kernel refused none of the lines";
}

}  // namespace
}  // namespace pktpath
