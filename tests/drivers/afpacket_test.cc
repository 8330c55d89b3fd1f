// The afpacket device against real kernel interfaces: each test makes its own kernel
// network namespace (IPv6 off, so the kernel sends no ND/MLD of its own) with veth
// pairs, and removes it. pktgen through afpacket arrives on the kernel peer exactly
// (its counters and a libpcap capture there, frame for frame against pktpath's capture);
// frames the kernel sends arrive in pktpath's capture; the kernel's ring-full drops show
// as rx.dropped, delivered plus dropped being all sent; a tc egress filter's drops are
// missing on the wire; kernel veth A -> pktpath (tc redirect between two afpacket
// devices) -> kernel veth B carries what the rule allows. Option and setup errors need
// no privilege. Tests that need root and veth skip with the reason.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/cpu.h"
#include "core/drop_reason.h"
#include "core/link_kind.h"
#include "core/net.h"

// After pktpath's headers (PACKET_HOST is an enumerator there, a macro here).
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>

namespace pktpath {
namespace {

using Frame = std::vector<uint8_t>;

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

std::string run_out(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

// Runs f on a thread that entered the kernel namespace `ns` (fds it opens work anywhere).
bool in_netns(const std::string& ns, const std::function<void()>& f) {
  bool ok = false;
  std::thread t([&] {
    const int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ok = ::setns(fd, CLONE_NEWNET) == 0;
    ::close(fd);
    if (ok) f();
  });
  t.join();
  return ok;
}

// A kernel namespace with veth pairs, removed (with them) at the end.
class KernelNs {
 public:
  KernelNs() : name_("ppafp" + std::to_string(::getpid())) {
    if (::geteuid() != 0) {
      why_ = "needs root (kernel namespaces, veth, AF_PACKET)";
      return;
    }
    sh("ip netns del " + name_);
    if (!sh("ip netns add " + name_)) {
      why_ = "ip netns add failed";
      return;
    }
    sh("ip netns exec " + name_ + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
    ok_ = true;
  }
  ~KernelNs() {
    if (ok_) sh("ip netns del " + name_);
  }
  const std::string& name() const { return name_; }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  // A veth pair a <-> b in the namespace, both up.
  bool veth(const std::string& a, const std::string& b) {
    if (!sh("ip -n " + name_ + " link add " + a + " type veth peer name " + b)) {
      why_ = "cannot make a veth pair (no veth module?)";
      return false;
    }
    return sh("ip -n " + name_ + " link set " + a + " up") && sh("ip -n " + name_ + " link set " + b + " up");
  }
  // The test's first pair, pa<pid> <-> pb<pid>; false (why() says) without root or veth.
  bool pair(std::string& a, std::string& b) {
    a = "pa" + std::to_string(::getpid());
    b = "pb" + std::to_string(::getpid());
    return ok_ && veth(a, b);
  }
  // The kernel's counters of dev (`ip -s -j link`): "rx" or "tx", "packets" or "bytes".
  uint64_t stat(const std::string& dev, const char* dir, const char* what) const {
    const auto j = nlohmann::json::parse(run_out("ip -n " + name_ + " -s -j link show dev " + dev), nullptr, false);
    if (!j.is_array() || j.empty()) return UINT64_MAX;
    return j[0]["stats64"][dir][what].get<uint64_t>();
  }

 private:
  std::string name_, why_;
  bool ok_ = false;
};

// A libpcap capture on a kernel interface of the namespace (incoming frames only).
class KernelCapture {
 public:
  KernelCapture(const std::string& ns, const std::string& dev) {
    in_netns(ns, [&] {
      char e[PCAP_ERRBUF_SIZE];
      p_ = pcap_create(dev.c_str(), e);
      if (!p_) return;
      pcap_set_snaplen(p_, 4096);
      pcap_set_buffer_size(p_, 64 << 20);  // holds a whole test's frames: read after the line that sent them
      pcap_set_immediate_mode(p_, 1);
      if (pcap_activate(p_) < 0) {
        pcap_close(p_);
        p_ = nullptr;
        return;
      }
      pcap_setdirection(p_, PCAP_D_IN);
      pcap_setnonblock(p_, 1, e);
    });
  }
  ~KernelCapture() {
    if (p_) pcap_close(p_);
  }
  bool ok() const { return p_ != nullptr; }
  // What arrived: until `want` frames or 3 s, then 200 ms more for any extra.
  std::vector<Frame> take(size_t want) {
    std::vector<Frame> got;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    bool extra = false;
    for (;;) {
      pcap_dispatch(
          p_, -1,
          [](u_char* u, const pcap_pkthdr* h, const u_char* d) {
            reinterpret_cast<std::vector<Frame>*>(u)->emplace_back(d, d + h->caplen);
          },
          reinterpret_cast<u_char*>(&got));
      const auto now = std::chrono::steady_clock::now();
      if (!extra && got.size() >= want) {
        extra = true;
        until = now + std::chrono::milliseconds(200);
      }
      if (now >= until) return got;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

 private:
  pcap_t* p_ = nullptr;
};

// A raw packet socket on a kernel interface of the namespace, to send frames from.
class KernelSender {
 public:
  KernelSender(const std::string& ns, const std::string& dev) {
    in_netns(ns, [&] {
      fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
      if (fd_ < 0) return;
      sockaddr_ll a{};
      a.sll_family = AF_PACKET;
      a.sll_ifindex = static_cast<int>(if_nametoindex(dev.c_str()));
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd_);
        fd_ = -1;
      }
    });
  }
  ~KernelSender() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool send(const Frame& f) const { return ::send(fd_, f.data(), f.size(), 0) == static_cast<ssize_t>(f.size()); }

 private:
  int fd_ = -1;
};

// Ethernet + IPv4 + UDP to port `dport`, `len` bytes, the payload numbered by `seq`.
Frame udp_frame(uint16_t dport, uint32_t seq, size_t len = 80) {
  Frame f(len, 0);
  const uint8_t eth[14] = {0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x08, 0x00};
  std::memcpy(f.data(), eth, 14);
  uint8_t* ip = f.data() + 14;
  const uint16_t ip_len = static_cast<uint16_t>(len - 14);
  ip[0] = 0x45;
  ip[2] = static_cast<uint8_t>(ip_len >> 8);
  ip[3] = static_cast<uint8_t>(ip_len);
  ip[8] = 64;
  ip[9] = 17;
  const uint8_t addrs[8] = {10, 9, 0, 1, 10, 9, 0, 2};
  std::memcpy(ip + 12, addrs, 8);
  uint8_t* udp = ip + 20;
  udp[0] = 0x30;
  udp[1] = 0x39;
  udp[2] = static_cast<uint8_t>(dport >> 8);
  udp[3] = static_cast<uint8_t>(dport);
  udp[4] = static_cast<uint8_t>((ip_len - 20) >> 8);
  udp[5] = static_cast<uint8_t>(ip_len - 20);
  for (size_t i = 42; i < len; ++i) f[i] = static_cast<uint8_t>(seq * 31 + i);
  std::memcpy(f.data() + 42, &seq, 4);
  return f;
}

uint16_t udp_dport(const Frame& f) { return f.size() >= 38 ? static_cast<uint16_t>(f[36] << 8 | f[37]) : 0; }

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/pp_afp_" + std::to_string(::getpid()) + "_" + name;
}

std::vector<Frame> read_pcap(const std::string& path) {
  std::vector<Frame> v;
  char e[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline(path.c_str(), e);
  if (!p) return v;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) v.emplace_back(d, d + h->caplen);
  pcap_close(p);
  return v;
}

// The script runner, one line at a time.
struct Runner {
  cli::ScriptRunner r{false, stdout};
  std::string err;
  bool line(const std::string& text) {
    std::vector<std::string> w;
    cli::ScriptCommand c;
    cli::ScriptError e;
    if (!cli::tokenize_line(text, w, e) || !cli::parse_command(w, c, e) || !r.execute(c, e)) {
      err = text + ": " + e.msg;
      return false;
    }
    return true;
  }
  NetDevice* dev(const std::string& n) { return r.table().find(n); }
};

#define SKIP_UNLESS(ns)                                 \
  do {                                                  \
    if (!(ns).ok()) GTEST_SKIP() << (ns).why();         \
  } while (0)

// ---- no privilege needed

TEST(AfpacketOptions, BadValuesAreRefusedNamingTheWord) {
  Runner t;
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket qdisc_bypass maybe"));
  EXPECT_NE(t.err.find("qdisc_bypass: expected on or off"), std::string::npos) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket fanout 65"));
  EXPECT_NE(t.err.find("fanout must be 0..64"), std::string::npos) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket link ../etc"));
  EXPECT_EQ(t.dev("d0"), nullptr);
  // No link: the up fails and says what is missing.
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket")) << t.err;
  EXPECT_FALSE(t.line("ip link set dev d0 up"));
  EXPECT_NE(t.err.find("needs \"link IF\""), std::string::npos) << t.err;
}

// Where scripts may not touch the host's kernel (the fuzzer's limits) they may not reach
// a real interface either.
TEST(AfpacketOptions, HostInterfacesAreRefusedUnderTheFuzzersLimits) {
  Runner t;
  cli::ScriptLimits lim;
  lim.host_devices = false;
  t.r.set_limits(lim);
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket link lo"));
  EXPECT_NE(t.err.find("devices of the host kernel are off in this runner"), std::string::npos) << t.err;
  EXPECT_EQ(t.dev("d0"), nullptr);
}

TEST(AfpacketOptions, MissingInterfaceOrNamespaceFailsTheUp) {
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link ppafp_none0 netns ppafp_none_ns")) << t.err;
  EXPECT_FALSE(t.line("ip link set dev d0 up"));
  if (::geteuid() == 0) {
    EXPECT_NE(t.err.find("netns ppafp_none_ns: /var/run/netns/ppafp_none_ns"), std::string::npos) << t.err;
  }
  ASSERT_TRUE(t.line("ip link add dev d1 type afpacket link ppafp_none0")) << t.err;
  EXPECT_FALSE(t.line("ip link set dev d1 up"));
  if (::geteuid() == 0) {
    EXPECT_NE(t.err.find("link ppafp_none0: no such interface"), std::string::npos) << t.err;
  } else {
    EXPECT_NE(t.err.find("CAP_NET_RAW"), std::string::npos) << t.err;
  }
  EXPECT_FALSE(t.dev("d1")->is_up());
}

// ---- against the kernel

// pktgen's frames out through afpacket: the kernel peer's counters and a libpcap capture
// there see exactly N, frame for frame what pktpath's own capture of d0 saw.
TEST(AfpacketKernel, PktgenArrivesOnTheKernelPeerExactly) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelCapture cap(ns.name(), b);
  ASSERT_TRUE(cap.ok());
  const uint64_t rx0 = ns.stat(b, "rx", "packets"), bytes0 = ns.stat(b, "rx", "bytes");
  const std::string mine = temp_path("tx.pcap");
  constexpr uint64_t kN = 3000;
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name())) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  ASSERT_TRUE(t.line("capture -i d0 -Q out -w " + mine)) << t.err;
  ASSERT_TRUE(t.line("pktgen -i d0 -n " + std::to_string(kN) + " -s 60 -p 1000-1003")) << t.err;
  ASSERT_TRUE(t.line("capture stop")) << t.err;
  const DevStatsSum s = t.dev("d0")->stats_sum();
  EXPECT_EQ(s.tx_packets, kN);
  EXPECT_EQ(s.tx_dropped, 0u);
  const std::vector<Frame> got = cap.take(kN);
  const std::vector<Frame> sent = read_pcap(mine);
  ASSERT_EQ(sent.size(), kN);
  ASSERT_EQ(got.size(), kN);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], sent[i]) << "frame " << i;
  EXPECT_EQ(ns.stat(b, "rx", "packets") - rx0, kN);
  EXPECT_EQ(ns.stat(b, "rx", "bytes") - bytes0, kN * 60);
  ASSERT_TRUE(t.line("ip link del dev d0")) << t.err;
  std::remove(mine.c_str());
}

// Frames the kernel sends out of the peer arrive in pktpath's capture of d0 (two
// sockets in a fanout group), byte for byte, none lost or added.
TEST(AfpacketKernel, KernelFramesArriveInPktpathsCapture) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelSender tx(ns.name(), b);
  ASSERT_TRUE(tx.ok());
  const std::string mine = temp_path("rx.pcap");
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name() + " fanout 2")) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  ASSERT_TRUE(t.line("capture -i d0 -w " + mine)) << t.err;
  constexpr uint32_t kN = 500;
  std::vector<Frame> want;
  for (uint32_t i = 0; i < kN; ++i) {
    want.push_back(udp_frame(static_cast<uint16_t>(2000 + i % 8), i, 60 + i % 200));
    ASSERT_TRUE(tx.send(want.back()));
  }
  // The rings' blocks retire within a millisecond; the runner polls them while it sleeps.
  for (int i = 0; i < 100 && t.dev("d0")->stats_sum().rx_packets < kN; ++i) ASSERT_TRUE(t.line("sleep 0.02"));
  ASSERT_TRUE(t.line("sleep 0.05"));
  ASSERT_TRUE(t.line("capture stop")) << t.err;
  EXPECT_EQ(t.dev("d0")->stats_sum().rx_packets, kN);
  std::vector<Frame> got = read_pcap(mine);
  ASSERT_EQ(got.size(), kN);
  // Two rings: each flow (port) keeps its order, the interleaving between them may differ.
  auto key = [](const Frame& f) { return std::make_pair(udp_dport(f), f); };
  std::sort(got.begin(), got.end(), [&](const Frame& x, const Frame& y) { return key(x) < key(y); });
  std::sort(want.begin(), want.end(), [&](const Frame& x, const Frame& y) { return key(x) < key(y); });
  EXPECT_EQ(got, want);
  ASSERT_TRUE(t.line("ip link del dev d0")) << t.err;
  std::remove(mine.c_str());
}

// More frames than the ring holds while nothing polls it (the runner is busy on this
// thread): the kernel drops the rest (tp_drops), which d0 shows as rx.dropped; delivered
// plus dropped is every frame sent.
TEST(AfpacketKernel, RingFullDropsCountAsRxDropped) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelSender tx(ns.name(), b);
  ASSERT_TRUE(tx.ok());
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name())) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  constexpr uint64_t kN = 60000;  // 4 MiB of ring holds about 32k frames of 60 bytes
  const Frame f = udp_frame(9, 1, 60);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_TRUE(tx.send(f));
  auto total = [&] {
    const DevStatsSum s = t.dev("d0")->stats_sum();
    return s.rx_packets + s.rx_dropped;
  };
  for (int i = 0; i < 100 && total() < kN; ++i) ASSERT_TRUE(t.line("sleep 0.02"));
  const DevStatsSum s = t.dev("d0")->stats_sum();
  EXPECT_EQ(s.rx_packets + s.rx_dropped, kN);
  EXPECT_GT(s.rx_dropped, 0u);
  EXPECT_GT(s.rx_packets, 0u);
}

// A tc egress filter on the afpacket device drops two of four UDP flows: none of them
// reaches the wire, and sent + dropped is everything pktgen made.
TEST(AfpacketKernel, EgressFilterDropsAreMissingOnTheWire) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelCapture cap(ns.name(), b);
  ASSERT_TRUE(cap.ok());
  constexpr uint64_t kN = 2000;
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name())) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  ASSERT_TRUE(t.line("tc qdisc add dev d0 clsact")) << t.err;
  ASSERT_TRUE(t.line("tc filter add dev d0 egress protocol ip flower ip_proto udp dst_port 1000-1001 action drop")) << t.err;
  const uint64_t drops0 = drop_totals()[static_cast<unsigned>(DropReason::TC_EGRESS)];
  ASSERT_TRUE(t.line("pktgen -i d0 -n " + std::to_string(kN) + " -s 60 -p 1000-1003")) << t.err;
  // pktgen counts what the device took toward -n; a dropped attempt is an error and the
  // next packet is made anew (pktgen_xmit): kN sent, and as many drops as errors.
  const uint64_t dropped = drop_totals()[static_cast<unsigned>(DropReason::TC_EGRESS)] - drops0;
  const uint64_t sent = t.dev("d0")->stats_sum().tx_packets;
  EXPECT_EQ(sent, kN);
  EXPECT_GT(dropped, kN / 2);
  EXPECT_LT(dropped, kN * 4);
  const std::vector<Frame> got = cap.take(sent);
  EXPECT_EQ(got.size(), sent);
  for (const Frame& f : got) ASSERT_GE(udp_dport(f), 1002) << "a dropped flow on the wire";
}

// The userspace datapath between two kernel veths: frames sent into A reach pktpath's
// d0, a tc ingress rule redirects UDP port 7 to d1 and drops the rest, and B receives
// exactly the port-7 frames; every frame d0 took is redirected or dropped and counted.
TEST(AfpacketKernel, KernelToPktpathToKernelCarriesWhatTheRulesAllow) {
  KernelNs ns;
  SKIP_UNLESS(ns);
  const std::string pid = std::to_string(::getpid());
  const std::string a0 = "pa" + pid, a1 = "qa" + pid, b0 = "pb" + pid, b1 = "qb" + pid;
  if (!ns.veth(a0, a1) || !ns.veth(b0, b1)) GTEST_SKIP() << ns.why();
  KernelSender tx(ns.name(), a0);
  KernelCapture cap(ns.name(), b0);
  ASSERT_TRUE(tx.ok() && cap.ok());
  const uint64_t b_rx0 = ns.stat(b0, "rx", "packets");
  Runner t;
  const std::string in_ns = " netns " + ns.name();
  ASSERT_TRUE(t.line("ip link add dev d1 type afpacket link " + b1 + in_ns)) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d1 up")) << t.err;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a1 + in_ns)) << t.err;
  ASSERT_TRUE(t.line("tc qdisc add dev d0 clsact")) << t.err;
  ASSERT_TRUE(t.line("tc filter add dev d0 ingress pref 1 protocol ip flower ip_proto udp dst_port 7 "
                     "action mirred egress redirect dev d1")) << t.err;
  ASSERT_TRUE(t.line("tc filter add dev d0 ingress pref 2 matchall action drop")) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  const uint64_t drops0 = drop_totals()[static_cast<unsigned>(DropReason::TC_INGRESS)];
  constexpr uint32_t kN = 600;
  std::vector<Frame> want;
  for (uint32_t i = 0; i < kN; ++i) {
    const Frame f = udp_frame(i % 3 == 0 ? 7 : 8, i);
    if (udp_dport(f) == 7) want.push_back(f);
    ASSERT_TRUE(tx.send(f));
  }
  auto dropped_now = [&] { return drop_totals()[static_cast<unsigned>(DropReason::TC_INGRESS)] - drops0; };
  for (int i = 0; i < 100 && t.dev("d1")->stats_sum().tx_packets + dropped_now() < kN; ++i)
    ASSERT_TRUE(t.line("sleep 0.02"));
  ASSERT_TRUE(t.line("sleep 0.05"));
  // d0's rx counts what its stack delivered: nothing here, tc took every frame.
  const DevStatsSum s0 = t.dev("d0")->stats_sum(), s1 = t.dev("d1")->stats_sum();
  const uint64_t dropped = dropped_now();
  EXPECT_EQ(s0.rx_packets, 0u);
  EXPECT_EQ(s0.rx_dropped, 0u);
  EXPECT_EQ(s1.tx_packets, want.size());
  EXPECT_EQ(s1.tx_packets + dropped, kN);
  const std::vector<Frame> got = cap.take(want.size());
  EXPECT_EQ(got, want);
  EXPECT_EQ(ns.stat(b0, "rx", "packets") - b_rx0, want.size());
}

}  // namespace
}  // namespace pktpath
