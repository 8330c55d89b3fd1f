// Differential test against libpcap's bpf_filter: pcap-filter expressions compiled by
// libpcap, run on the synthetic set and on pcap files written here (one truncated by a
// small snapshot length), must give libpcap's result on every packet and engine.
#include <pcap/pcap.h>

#include <cstdio>
#include <filesystem>

#include "bpf/parse.h"
#include "bpf_test_util.h"
#include "sanitizer_scale.h"

namespace pktpath::bpf {
namespace {

constexpr size_t kSyntheticPackets = pktpath::testing::scaled<size_t>(20000, 3000);

const char* const kExpressions[] = {
    "ip", "ip6", "arp", "vlan", "vlan and ip", "vlan 100 or vlan 200", "tcp", "udp", "icmp",
    "net 192.168.2.0/24", "src net 192.168.2.0/24", "dst net 10.0.0.0/8",
    "net 192.168.0.0 mask 255.255.252.0", "host 192.168.2.7", "udp and port 53",
    "tcp port 80 or tcp port 443", "portrange 1000-2000", "tcp dst portrange 20-25",
    "tcp[tcpflags] & tcp-syn != 0", "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
    "tcp[13] = 0x12", "ip[2:2] > 80", "ip[6:2] & 0x1fff != 0", "len > 100", "len <= 64",
    "ether[0] & 1 = 0", "ether broadcast or ether multicast", "ip6 and udp",
    "ip6 and tcp port 443", "ip and not udp", "ip6 or arp", "greater 90", "less 70",
    "udp[8:2] = 0", "ip[0] & 0xf > 5", "(ip[2:2] - ((ip[0] & 0xf) << 2)) > 40",
    "ip[8] * 2 + 1 > 100", "ip[8] / 3 = 21", "ip[8] % 7 = 1", "ip[16] ^ ip[12] = 0",
    "ip[19] - ip[15] > 128", "icmp[icmptype] = icmp-echo", "ip6[6] = 17 and ip6[40:2] > 1000",
    "arp[6:2] = 1", "ether proto 0x8100 and ether[14:2] & 0xfff < 100", "ip[4:2] & 0x8000 = 0x8000",
    "tcp[2:2] > 1023 and tcp[0:2] < 1024", "udp src port 53 or udp dst port 5353",
    "not ip and not ip6", "ether host 00:00:00:00:00:00 or ip[12:4] = 0xc0a80201",
};

int run_differential(const PacketSet& set, const std::string& savefile) {
  int exprs = 0;
  for (const char* expr : kExpressions) {
    CompileOptions opt;
    opt.linktype = set.linktype;
    opt.snaplen = set.snaplen;
    opt.savefile = savefile;
    Insns prog;
    std::string err;
    EXPECT_TRUE(compile_expression(expr, opt, &prog, &err)) << expr << ": " << err;
    if (prog.empty()) continue;
    ++exprs;
    for (Engine e : testing::engines()) {
      auto p = testing::load(prog, e, &err);
      if (!p) {
        ADD_FAILURE() << expr << ": " << err;
        continue;
      }
      int mismatches = 0;
      for (size_t i = 0; i < set.size(); ++i) {
        uint32_t want = testing::pcap_run(prog, set.bytes(i), set.wirelen(i), set.caplen(i));
        uint32_t got = p->run(set.views()[i]);
        if (got != want && mismatches++ < 3)
          ADD_FAILURE() << "'" << expr << "' [" << engine_name(e) << "] packet " << i << ": got "
                        << got << ", libpcap " << want;
      }
    }
  }
  return exprs;
}

TEST(BpfDifferential, SyntheticSetEqualsLibpcap) {
  PacketSet set = make_synthetic(kSyntheticPackets);
  EXPECT_GE(run_differential(set, ""), 30);
}

// The synthetic set's mix is what the benchmarks assume.
TEST(BpfDifferential, SyntheticSetShape) {
  PacketSet set = make_synthetic(10000);
  CompileOptions opt;
  Insns prog;
  std::string err;
  ASSERT_TRUE(compile_expression("net 192.168.2.0/24", opt, &prog, &err)) << err;
  size_t hits = 0;
  for (size_t i = 0; i < set.size(); ++i) {
    EXPECT_GE(set.caplen(i), 60u);
    EXPECT_LE(set.caplen(i), 128u);
    hits += testing::pcap_run(prog, set.bytes(i), set.wirelen(i), set.caplen(i)) != 0;
  }
  EXPECT_GT(hits, 2000u);  // about 30%, less the ARP/IPv6 frames libpcap's `net` skips
  EXPECT_LT(hits, 4000u);
  PacketSet again = make_synthetic(10000);
  ASSERT_EQ(again.size(), set.size());
  EXPECT_EQ(0, std::memcmp(again.bytes(0), set.bytes(0), set.caplen(0)));  // deterministic
}

// Writes `set` as a pcap file with the given snapshot length (packets are truncated).
std::string write_pcap(const PacketSet& set, int snaplen, const std::string& name) {
  std::string path = (std::filesystem::temp_directory_path() / name).string();
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, snaplen);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  EXPECT_NE(d, nullptr) << pcap_geterr(dead);
  for (size_t i = 0; d && i < set.size(); ++i) {
    pcap_pkthdr h{};
    h.caplen = std::min<uint32_t>(set.caplen(i), static_cast<uint32_t>(snaplen));
    h.len = set.wirelen(i);
    pcap_dump(reinterpret_cast<u_char*>(d), &h, set.bytes(i));
  }
  if (d) pcap_dump_close(d);
  pcap_close(dead);
  return path;
}

TEST(BpfDifferential, CraftedPcapFilesEqualLibpcap) {
  PacketSet src = make_synthetic(2000, 7);
  for (int snaplen : {262144, 54}) {
    std::string path = write_pcap(src, snaplen, "pktpath_bpf_diff_" + std::to_string(snaplen) + ".pcap");
    PacketSet set;
    std::string err;
    ASSERT_TRUE(read_pcap(path, &set, &err)) << err;
    ASSERT_EQ(set.size(), src.size());
    EXPECT_EQ(set.snaplen, snaplen);
    if (snaplen < 128) {
      EXPECT_LT(set.caplen(0), set.wirelen(0));
    }
    EXPECT_GE(run_differential(set, path), 30);
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace pktpath::bpf
