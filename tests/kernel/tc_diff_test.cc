// The same tc lines on a kernel veth in a namespace (the system's tc and kernel) and in a
// pktpath script: `tc qdisc|class|filter show` print the same bytes after the
// normalisations in normalise(). Each configuration prints one line with the number of
// lines that differ. Skips without root, veth or a kind the kernel lacks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "drivers/kernel_ns.h"

namespace pktpath {
namespace {

using kernel_test::run_out;
using kernel_test::sh;

struct Config {
  const char* name;
  std::vector<std::string> lines;  // tc lines (without "tc"), on veth v0 <-> v1
  std::vector<std::string> shows;  // tc show lines compared
};

// What may differ and why, in one place:
// - `refcnt N`: the kernel counts the references its tx queues and the dump itself hold;
//   pktpath's qdiscs have no reference count.
// Nothing else: stdout only (the kernel's warnings go to stderr, as pktpath's), and the
// namespace has IPv6 off so the kernel sends no frames of its own into the counters.
std::string normalise(std::string s) {
  const std::string key = " refcnt ";
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + key.size())) {
    size_t end = at + key.size();
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    if (end > at + key.size()) s.replace(at + key.size(), end - at - key.size(), "*");
  }
  return s;
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
  if (!sh("ip -n " + ns + " link add v0 type veth peer name v1") || !sh("ip -n " + ns + " link set v0 up") ||
      !sh("ip -n " + ns + " link set v1 up")) {
    why = "cannot make a veth pair";
  } else {
    for (const std::string& l : c.lines)
      if (!sh("ip netns exec " + ns + " tc " + l)) {
        why = "the kernel refuses \"tc " + l + "\" (a module missing?)";
        break;
      }
    if (why.empty())
      for (const std::string& s : c.shows) out += run_out("ip netns exec " + ns + " tc " + s + " 2>/dev/null");
  }
  sh("ip netns del " + ns);
  return out;
}

std::string pktpath_output(const Config& c) {
  const std::string path = ::testing::TempDir() + "tc_diff_" + std::to_string(::getpid()) + ".pp";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return "cannot write " + path;
    std::fputs("ip link add v0 type veth peer name v1\nip link set v0 up\nip link set v1 up\n", f);
    for (const std::string& l : c.lines) std::fprintf(f, "tc %s\n", l.c_str());
    for (const std::string& s : c.shows) std::fprintf(f, "tc %s\n", s.c_str());
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
    {"htb tree, tbf/pfifo/bfifo leaves",
     {"qdisc add dev v0 root handle 1: htb default 20",
      "class add dev v0 parent 1: classid 1:1 htb rate 100mbit",
      "class add dev v0 parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit cburst 15k",
      "class add dev v0 parent 1:1 classid 1:20 htb rate 70mbit",
      "class add dev v0 parent 1:1 classid 1:30 htb rate 1gbit",
      "class add dev v0 parent 1:1 classid 1:40 htb rate 10mbit burst 10k cburst 3000 mtu 9000",
      "qdisc add dev v0 parent 1:10 handle 10: tbf rate 10mbit burst 10k latency 50ms",
      "qdisc add dev v0 parent 1:20 handle 20: pfifo limit 100",
      "qdisc add dev v0 parent 1:30 handle 30: bfifo limit 10000",
      "qdisc add dev v0 parent 1:40 handle 40: tbf rate 70mbit burst 1600 limit 3000"},
     {"qdisc show dev v0", "class show dev v0"}},
    {"htb classes in hash order", {"qdisc add dev v0 root handle 1: htb", "class add dev v0 parent 1: classid 1:7 htb rate 1mbit",
      "class add dev v0 parent 1: classid 1:3 htb rate 2mbit", "class add dev v0 parent 1: classid 1:12 htb rate 3mbit",
      "class add dev v0 parent 1: classid 1:1 htb rate 4mbit", "class add dev v0 parent 1: classid 1:ff htb rate 5mbit",
      "class add dev v0 parent 1: classid 1:20 htb rate 6mbit", "class add dev v0 parent 1: classid 1:5 htb rate 7mbit",
      "class del dev v0 classid 1:12"},
     {"class show dev v0"}},
    {"tbf root", {"qdisc add dev v0 root handle 5: tbf rate 30mbit burst 1600 limit 10000"},
     {"qdisc show dev v0", "class show dev v0"}},
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
    {"noqueue, ingress, pfifo_fast", {"qdisc add dev v0 ingress", "qdisc add dev v1 root handle 2: pfifo_fast"},
     {"qdisc show dev v0", "qdisc show dev v1"}},
};

TEST(TcDifferential, ShowsAsTheKernelPrints) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a kernel namespace and veth)";
  if (!sh("command -v tc")) GTEST_SKIP() << "no tc (iproute2) to compare with";
  size_t compared = 0;
  for (const Config& c : kConfigs) {
    std::string why;
    const std::string want = normalise(kernel_output(c, why));
    if (!why.empty()) {
      std::printf("tc differential: %-48s skipped: %s\n", c.name, why.c_str());
      continue;
    }
    const std::string got = normalise(pktpath_output(c));
    const auto a = lines_of(want), b = lines_of(got);
    size_t differ = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) differ += a[i] != b[i];
    std::printf("tc differential: %-48s %zu differing lines\n", c.name, differ);
    EXPECT_EQ(got, want) << c.name;
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "the kernel ran none of the configurations";
}

}  // namespace
}  // namespace pktpath
