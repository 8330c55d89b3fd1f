// The same `nft -f` file (sets, an interval set, a concatenation, a verdict map with a
// jump, anonymous sets) and the same frames in the kernel and in pktpath: the kernel's
// chain hooks veth v0's ingress in a namespace and the frames are sent into its peer v1
// (AF_PACKET, python3); pktpath's hooks a pcap rx device named v0 that replays them.
// `nft list ruleset` afterwards (rules, elements, every counter) must be byte-identical,
// and `nft -j list ruleset` the same JSON after normalise_nft_json().
// Skips without root, nft, python3 or the kernel's nf_tables.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff_frames.h"

namespace pktpath {
namespace {

using kernel_test::Frame;
using kernel_test::frame;
using kernel_test::kernel_send;
using kernel_test::run_out;
using kernel_test::sh;
using kernel_test::write_pcap;

const char* kRuleset =
    "define web = { 22, 80, 443 }\n"
    "table netdev t {\n"
    "\tset bl {\n\t\ttype ipv4_addr\n\t\tflags interval\n"
    "\t\telements = { 10.0.0.0/24, 10.9.0.1-10.9.0.9, 192.168.7.7 }\n\t}\n"
    "\tset svc {\n\t\ttype ipv4_addr . inet_service\n\t\telements = { 10.1.0.1 . 53, 10.1.0.2 . 80 }\n\t}\n"
    "\tset ports {\n\t\ttype inet_service\n\t\telements = { 1000, 1001, 1002, 1003, 1004, 1005, 1006 }\n\t}\n"
    "\tmap vm {\n\t\ttype ipv4_addr : verdict\n\t\telements = { 10.2.0.1 : drop, 10.2.0.2 : jump sub, 10.2.0.3 : accept }\n\t}\n"
    "\tchain sub {\n\t\tcounter\n\t\tudp dport @ports counter drop\n\t\tcounter return\n\t}\n"
    "\tchain c {\n"
    "\t\ttype filter hook ingress device \"v0\" priority 0; policy accept;\n"
    "\t\tcounter\n"
    "\t\tip saddr @bl counter drop\n"
    "\t\tip saddr . udp dport @svc counter accept\n"
    "\t\ttcp dport $web counter drop\n"
    "\t\tip daddr != { 10.2.0.0/24, 10.3.0.1 } counter accept\n"
    "\t\tip daddr vmap @vm\n"
    "\t\tcounter\n"
    "\t}\n"
    "}\n";

// Sets the packet path writes (nft_dynset: full sets, a concatenation, new elements with
// counters) and elements that count what finds them (hash and interval).
const char* kDynamicRuleset =
    "table netdev t {\n"
    "\tset seen {\n\t\ttype ipv4_addr\n\t\tsize 4\n\t\tflags dynamic\n\t\tcounter\n\t}\n"
    "\tset pairs {\n\t\ttype ipv4_addr . inet_service\n\t}\n"
    "\tset small {\n\t\ttype ipv4_addr\n\t\tsize 2\n\t\tflags dynamic\n\t}\n"
    "\tset hot {\n\t\ttype ipv4_addr\n\t\tcounter\n"
    "\t\telements = { 10.1.0.1, 10.2.0.1, 10.9.9.9 counter packets 5 bytes 7 }\n\t}\n"
    "\tset nets {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\tcounter\n"
    "\t\telements = { 10.0.0.0/24, 10.9.0.0/16 }\n\t}\n"
    "\tchain c {\n"
    "\t\ttype filter hook ingress device \"v0\" priority 0; policy accept;\n"
    "\t\tadd @seen { ip saddr }\n"
    "\t\tadd @pairs { ip daddr . udp dport counter }\n"
    "\t\tadd @small { ip daddr } counter\n"
    "\t\tip daddr @hot\n"
    "\t\tip saddr @nets counter\n"
    "\t}\n"
    "}\n";

// Maps whose data is a mark, named and anonymous, declared by type and by typeof, and
// the mark set from them or directly, read back by later rules.
const char* kMarkRuleset =
    "table netdev t {\n"
    "\tmap m {\n\t\ttype ipv4_addr : mark\n"
    "\t\telements = { 10.2.0.1 : 0x5, 10.2.0.2 : 7, 10.3.0.1 : 0x10 }\n\t}\n"
    "\tmap pm {\n\t\ttype inet_service : mark\n\t\telements = { 53 : 1, 80 : 2 }\n\t}\n"
    "\tmap tm {\n\t\ttypeof ip daddr : meta mark\n\t\telements = { 10.2.0.3 : 0x7, 10.5.5.5 : 9 }\n\t}\n"
    "\tset ts {\n\t\ttypeof ip saddr . udp dport\n\t\telements = { 10.1.0.1 . 53, 10.1.0.2 . 80 }\n\t}\n"
    "\tmap tv {\n\t\ttypeof ether saddr : verdict\n\t}\n"
    "\tchain c {\n"
    "\t\ttype filter hook ingress device \"v0\" priority 0; policy accept;\n"
    "\t\tmeta mark set ip daddr map @m counter\n"
    "\t\tmeta mark 0x5 counter\n"
    "\t\tmeta mark set udp dport map { 53 : 0x35, 22 : 0x16 } counter\n"
    "\t\tmeta mark 0x35 counter drop\n"
    "\t\tmeta mark 0x10 counter\n"
    "\t\tip saddr . udp dport @ts counter\n"
    "\t\tmeta mark set ip daddr map @tm counter\n"
    "\t\tmeta mark 0x7 counter\n"
    "\t\tmeta mark set 0x63\n"
    "\t\tmeta mark 0x63 counter\n"
    "\t}\n"
    "}\n";

std::vector<std::vector<uint8_t>> frames() {
  const uint32_t srcs[] = {0x0a000005, 0x0a090003, 0x0a010001, 0x0a010002, 0x0a030303, 0xc0a80707, 0x0a0900ff};
  const uint32_t dsts[] = {0x0a020001, 0x0a020002, 0x0a020003, 0x0a030001, 0x0a050505};
  const uint16_t ports[] = {53, 80, 22, 1003, 9};
  std::vector<std::vector<uint8_t>> out;
  size_t k = 0;
  for (uint32_t s : srcs)
    for (uint32_t d : dsts)
      for (uint16_t p : ports) {
        out.push_back(frame(s, d, k % 3 == 0 ? 6 : 17, p, 18 + (k % 7) * 5));
        ++k;
      }
  return out;
}

// What may differ between `nft -j list ruleset` of nft 1.0.6 and pktpath's, and why:
// - the order of an object's keys: pktpath's JSON library orders them (compared parsed);
// - metainfo's "version" and "release_name": pktpath is not nft 1.0.6;
// - a netdev base chain's "dev": pktpath names the device it hooks, nft 1.0.6 does not.
std::string normalise_nft_json(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("nftables")) return "not JSON: " + text;
  for (auto& item : j["nftables"]) {
    if (item.contains("metainfo")) {
      item["metainfo"].erase("version");
      item["metainfo"].erase("release_name");
    }
    if (item.contains("chain")) item["chain"].erase("dev");
  }
  return j.dump(1);
}

std::string kernel_side(const std::string& rules, const std::vector<Frame>& fs, std::string& why,
                        std::string* json) {
  const std::string ns = "ppnftd" + std::to_string(::getpid());
  sh("ip netns del " + ns);
  if (!sh("ip netns add " + ns)) return why = "ip netns add failed", "";
  sh("ip netns exec " + ns + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
  std::string out;
  if (!sh("ip -n " + ns + " link add v0 type veth peer name v1") || !sh("ip -n " + ns + " link set v0 up") ||
      !sh("ip -n " + ns + " link set v1 up")) {
    why = "cannot make a veth pair";
  } else if (!sh("ip netns exec " + ns + " nft -f " + rules)) {
    why = "the kernel refuses the ruleset (nf_tables missing?)";
  } else {
    if (!kernel_send(ns, "v1", fs)) why = "python3 could not send the frames";
    out = run_out("ip netns exec " + ns + " nft list ruleset");
    *json = run_out("ip netns exec " + ns + " nft -j list ruleset");
  }
  sh("ip netns del " + ns);
  return out;
}

// Loads `ruleset` in the kernel and in pktpath, sends the same frames into both and
// compares `nft list ruleset`.
void compare_with_kernel(const char* ruleset, const char* what) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a kernel namespace and veth)";
  if (!sh("command -v nft") || !sh("command -v python3")) GTEST_SKIP() << "needs nft and python3";
  const std::string dir = ::testing::TempDir();
  const std::string tag = std::to_string(::getpid());
  const std::string rules = dir + "nft_diff_" + tag + ".nft", pcapf = dir + "nft_diff_" + tag + ".pcap",
                    script = dir + "nft_diff_" + tag + ".pp";
  std::ofstream(rules) << ruleset;
  const auto fs = frames();
  ASSERT_TRUE(write_pcap(pcapf, fs));
  std::string why, want_json;
  const std::string want = kernel_side(rules, fs, why, &want_json);
  if (!why.empty()) GTEST_SKIP() << why;
  std::ofstream(script) << "ip link add dev v0 type pcap rx " << pcapf << " pace max\n"
                        << "nft -f " << rules << "\n"
                        << "ip link set dev v0 up\n"
                        << "nft list ruleset\n"
                        << "nft -j list ruleset\n";
  std::string got = run_out(std::string(PKTPATH_BINARY) + " run " + script + " 2>&1");
  for (const std::string& f : {rules, pcapf, script}) std::remove(f.c_str());
  // The JSON is the last line.
  const size_t cut = got.rfind("{\"nftables\"");
  const std::string got_json = cut == std::string::npos ? std::string() : got.substr(cut);
  if (cut != std::string::npos) got.erase(cut);
  const std::string a = normalise_nft_json(want_json), b = normalise_nft_json(got_json);
  const size_t differ = kernel_test::differing_lines(want, got), differ_json = kernel_test::differing_lines(a, b);
  std::printf("nft differential (%s): %zu frames, %zu differing lines, %zu in -j\n", what, fs.size(), differ,
              differ_json);
  EXPECT_EQ(got, want);
  EXPECT_EQ(b, a);
}

TEST(NftDifferential, SetsMapsAndCountersAsTheKernel) { compare_with_kernel(kRuleset, "sets and maps"); }

TEST(NftDifferential, MarkMapsAsTheKernel) { compare_with_kernel(kMarkRuleset, "mark maps, meta mark set"); }

TEST(NftDifferential, DynamicSetsAndElementCountersAsTheKernel) {
  compare_with_kernel(kDynamicRuleset, "dynamic sets, element counters");
}

}  // namespace
}  // namespace pktpath
