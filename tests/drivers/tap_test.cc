// The tap device against the kernel: each test makes its own network namespace (a unique
// name with the pid), with IPv6 off so that the kernel sends nothing of its own (no ND,
// no MLD), and puts the tap's kernel side there. pktgen's frames on D arrive on IF (the
// kernel's counters and a libpcap capture on IF: exactly N, byte for byte what pktpath's
// own capture of D saw); frames sent on IF through an AF_PACKET socket arrive in
// pktpath's receive path and its capture; a tc egress drop rule on D keeps them off IF;
// every packet is sent or counted as dropped. Skipped without root or /dev/net/tun.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/cpu.h"
#include "core/drop_reason.h"
#include "core/net.h"

// After pktpath's headers: it defines PACKET_HOST and friends as macros.
#include <linux/if_packet.h>

namespace pktpath {
namespace {

std::atomic<int> g_seq{0};

std::string sh_out(const std::string& cmd) {
  std::string out;
  if (std::FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    ::pclose(f);
  }
  return out;
}

// Runs fn with this thread in /run/netns/NAME; sockets made there stay there.
bool in_ns(const std::string& ns, const std::function<void()>& fn) {
  const int target = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  const int home = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  bool ok = target >= 0 && home >= 0 && ::setns(target, CLONE_NEWNET) == 0;
  if (ok) {
    fn();
    ok = ::setns(home, CLONE_NEWNET) == 0;
  }
  if (target >= 0) ::close(target);
  if (home >= 0) ::close(home);
  return ok;
}

class TapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (a tap and a network namespace need CAP_NET_ADMIN)";
    if (::access("/dev/net/tun", R_OK | W_OK) != 0) GTEST_SKIP() << "no /dev/net/tun";
    ns_ = "pptap" + std::to_string(::getpid()) + "_" + std::to_string(g_seq++);
    ifname_ = "pt" + std::to_string(::getpid() % 100000) + "_" + std::to_string(g_seq++);
    if (std::system(("ip netns add " + ns_ + " 2>/dev/null").c_str()) != 0) {
      ns_.clear();
      GTEST_SKIP() << "ip netns add failed (no iproute2 or no namespaces)";
    }
    ASSERT_EQ(std::system(("ip netns exec " + ns_ +
                           " sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1")
                              .c_str()),
              0);
  }
  void TearDown() override {
    runner_.reset();  // closes the tap: its kernel side goes
    if (!ns_.empty()) (void)!std::system(("ip netns del " + ns_).c_str());
    for (const std::string& f : files_) std::remove(f.c_str());
  }
  cli::ScriptRunner& runner() {
    if (!runner_) runner_ = std::make_unique<cli::ScriptRunner>(false, stdout);
    return *runner_;
  }
  bool line(const std::string& text, std::string* err = nullptr) {
    std::vector<std::string> w;
    cli::ScriptError e;
    cli::ScriptCommand c;
    const bool ok = cli::tokenize_line(text, w, e) && cli::parse_command(w, c, e) && runner().execute(c, e);
    if (err) *err = e.msg;
    else EXPECT_TRUE(ok) << text << ": " << e.msg;
    return ok;
  }
  void add_tap(const std::string& dev = "tp0", const std::string& extra = "") {
    line("ip link add dev " + dev + " type tap name " + ifname_ + " netns " + ns_ + extra);
    line("ip link set dev " + dev + " up");
  }
  uint64_t kstat(const std::string& name) {
    return std::strtoull(
        sh_out("ip netns exec " + ns_ + " cat /sys/class/net/" + ifname_ + "/statistics/" + name).c_str(), nullptr, 10);
  }
  std::string temp(const std::string& name) {
    files_.push_back(::testing::TempDir() + "/pp_tap_" + std::to_string(::getpid()) + "_" + name);
    return files_.back();
  }
  // An AF_PACKET socket made in the namespace, and the address that sends on IF.
  int packet_socket(sockaddr_ll& to) {
    int sk = -1;
    unsigned ifindex = 0;
    in_ns(ns_, [&] {
      sk = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
      ifindex = if_nametoindex(ifname_.c_str());
    });
    to = {};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(ifindex);
    to.sll_halen = 6;
    if (ifindex == 0 && sk >= 0) {
      ::close(sk);
      sk = -1;
    }
    return sk;
  }
  NetDevice& dev(const std::string& name = "tp0") {
    NetDevice* d = runner().table().find(name);
    EXPECT_NE(d, nullptr);
    return *d;
  }

  std::string ns_, ifname_;
  std::unique_ptr<cli::ScriptRunner> runner_;
  std::vector<std::string> files_;
};

std::vector<std::vector<uint8_t>> read_pcap(const std::string& path) {
  char ebuf[PCAP_ERRBUF_SIZE];
  std::vector<std::vector<uint8_t>> v;
  pcap_t* p = pcap_open_offline(path.c_str(), ebuf);
  if (!p) return v;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) v.emplace_back(d, d + h->caplen);
  pcap_close(p);
  return v;
}

// A live capture on IF inside the namespace (libpcap's AF_PACKET socket, made there).
pcap_t* open_live(const std::string& ns, const std::string& ifname) {
  pcap_t* p = nullptr;
  in_ns(ns, [&] {
    char ebuf[PCAP_ERRBUF_SIZE];
    p = pcap_create(ifname.c_str(), ebuf);
    if (!p) return;
    pcap_set_snaplen(p, 65535);
    pcap_set_timeout(p, 10);
    pcap_set_buffer_size(p, 8 << 20);
    if (pcap_activate(p) < 0) {
      pcap_close(p);
      p = nullptr;
    }
  });
  return p;
}

// What the live capture holds now (each call waits at most its 10 ms timeout).
std::vector<std::vector<uint8_t>> drain_live(pcap_t* p) {
  std::vector<std::vector<uint8_t>> v;
  pcap_dispatch(
      p, -1,
      [](u_char* user, const pcap_pkthdr* h, const u_char* d) {
        reinterpret_cast<std::vector<std::vector<uint8_t>>*>(user)->emplace_back(d, d + h->caplen);
      },
      reinterpret_cast<u_char*>(&v));
  return v;
}

TEST_F(TapTest, PktgenFramesArriveOnTheKernelSide) {
  add_tap();
  pcap_t* live = open_live(ns_, ifname_);
  ASSERT_NE(live, nullptr);
  const uint64_t rx0 = kstat("rx_packets"), bytes0 = kstat("rx_bytes");
  const std::string ours = temp("tx.pcap");
  line("tcpdump -i tp0 -w " + ours);
  line("pktgen -i tp0 -n 200 -s 100 -m 02:00:00:00:00:09");
  line("capture stop -i tp0");
  const NetDevice& d = dev();
  EXPECT_EQ(d.stats_sum().tx_packets, 200u);
  EXPECT_EQ(d.stats_sum().tx_dropped, 0u);
  EXPECT_EQ(kstat("rx_packets") - rx0, 200u);
  EXPECT_EQ(kstat("rx_bytes") - bytes0, d.stats_sum().tx_bytes);
  const auto sent = read_pcap(ours);
  ASSERT_EQ(sent.size(), 200u);
  std::vector<std::vector<uint8_t>> seen;
  for (int i = 0; i < 200 && seen.size() < 200; ++i) {
    for (auto& f : drain_live(live)) seen.push_back(std::move(f));
  }
  pcap_close(live);
  ASSERT_EQ(seen.size(), 200u);
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], sent[i]) << "frame " << i;
}

// The kernel's tap interface is deleted while pktgen sends through the device: tun
// answers EBADFD, pktgen stops at once saying why, one message names the vanished
// interface, and the device is down.
TEST_F(TapTest, VanishedInterfaceStopsPktgenAndTakesTheDeviceDown) {
  char* text = nullptr;
  size_t text_len = 0;
  std::FILE* out = ::open_memstream(&text, &text_len);
  ASSERT_NE(out, nullptr);
  runner_ = std::make_unique<cli::ScriptRunner>(false, out);
  add_tap();
  std::thread del([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    (void)!std::system(("ip -n " + ns_ + " link del " + ifname_).c_str());
  });
  std::string err;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(line("pktgen -i tp0 --duration 30 -s 60", &err));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  del.join();
  EXPECT_LT(secs, 15.0);
  EXPECT_NE(err.find("tap interface " + ifname_ + " in netns " + ns_ + " vanished"), std::string::npos) << err;
  EXPECT_EQ(err.find("File descriptor in bad state"), std::string::npos) << err;
  EXPECT_FALSE(dev().is_up());
  runner_.reset();
  std::fclose(out);
  const std::string printed(text, text_len);
  std::free(text);
  EXPECT_NE(printed.find("Stopped early: tp0 lost its carrier"), std::string::npos) << printed;
}

TEST_F(TapTest, KernelFramesArriveInPktpathsReceivePath) {
  add_tap();
  const std::string ours = temp("rx.pcap");
  line("tcpdump -i tp0 -w " + ours);
  // Frames sent on IF through a packet socket (tun_net_xmit puts them on the tap's ring).
  sockaddr_ll to{};
  const int sk = packet_socket(to);
  ASSERT_GE(sk, 0);
  constexpr int kN = 300;
  std::vector<std::vector<uint8_t>> want;
  uint64_t bytes = 0;
  for (int i = 0; i < kN; ++i) {
    std::vector<uint8_t> f(60 + (i * 13) % 1000);
    for (size_t k = 0; k < f.size(); ++k) f[k] = static_cast<uint8_t>(k * 3 + i);
    const uint8_t hdr[14] = {0x02, 0, 0, 0, 0, 0x09, 0x02, 0, 0, 0, 0, 0x11, 0x88, 0xb5};  // local experimental type
    std::memcpy(f.data(), hdr, 14);
    ASSERT_EQ(::sendto(sk, f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(f.size()));
    bytes += f.size();
    want.push_back(std::move(f));
  }
  ::close(sk);
  // Receive runs while the script runs: a sleep line gives the control Cpu time.
  for (int i = 0; i < 50 && dev().stats_sum().rx_packets + dev().stats_sum().rx_dropped < kN; ++i) line("sleep 0.01");
  line("capture stop -i tp0");
  EXPECT_EQ(dev().stats_sum().rx_packets, static_cast<uint64_t>(kN));
  EXPECT_EQ(dev().stats_sum().rx_bytes, bytes);
  EXPECT_EQ(kstat("tx_packets"), static_cast<uint64_t>(kN));
  EXPECT_EQ(kstat("tx_dropped"), 0u);
  const auto got = read_pcap(ours);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "frame " << i;
  // Set down: receive stops, the kernel side goes.
  line("ip link set dev tp0 down");
  EXPECT_EQ(sh_out("ip netns exec " + ns_ + " ip -o link show " + ifname_ + " 2>/dev/null"), "");
}

// `ip link set dev D mtu N` reaches the kernel interface while it is open (dev_set_mtu on
// the other side), and a down tap takes D's MTU when it opens again.
TEST_F(TapTest, MtuChangeReachesTheKernelInterface) {
  add_tap();
  const auto kernel_mtu = [&] {
    return sh_out("ip netns exec " + ns_ + " cat /sys/class/net/" + ifname_ + "/mtu");
  };
  EXPECT_EQ(kernel_mtu(), "1500\n");
  line("ip link set dev tp0 mtu 1400");
  EXPECT_EQ(dev().mtu(), 1400u);
  EXPECT_EQ(kernel_mtu(), "1400\n");
  std::string err;
  EXPECT_FALSE(line("ip link set dev tp0 mtu 65535", &err)) << err;  // over the tap's max_mtu (65521)
  EXPECT_NE(err.find("mtu 65535 on"), std::string::npos) << err;
  EXPECT_EQ(dev().mtu(), 1400u);  // refused: unchanged on both sides
  EXPECT_EQ(kernel_mtu(), "1400\n");
  line("ip link set dev tp0 down");
  line("ip link set dev tp0 mtu 1300");
  line("ip link set dev tp0 up");
  EXPECT_EQ(kernel_mtu(), "1300\n");
}

// A burst larger than the tap's ring (IF's txqueuelen) sent while the control Cpu does
// not poll: what the kernel could not queue for pktpath shows as the kernel's tx_dropped
// and as D's rx_dropped (FULL_RING); every frame the socket sent is read or counted.
TEST_F(TapTest, KernelRingFullDropsAreCountedOnD) {
  add_tap();
  ASSERT_EQ(std::system(("ip netns exec " + ns_ + " ip link set dev " + ifname_ + " txqueuelen 64").c_str()), 0);
  sockaddr_ll to{};
  const int sk = packet_socket(to);
  ASSERT_GE(sk, 0);
  uint8_t f[60] = {0x02, 0, 0, 0, 0, 0x09, 0x02, 0, 0, 0, 0, 0x11, 0x88, 0xb5};
  uint64_t sent = 0;
  for (int i = 0; i < 1000; ++i)
    if (::sendto(sk, f, sizeof f, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == static_cast<ssize_t>(sizeof f)) ++sent;
  ::close(sk);
  const auto before = drop_totals();
  for (int i = 0; i < 50 && dev().stats_sum().rx_packets + dev().stats_sum().rx_dropped < sent; ++i) line("sleep 0.01");
  const DevStatsSum st = dev().stats_sum();
  EXPECT_GT(sent, 0u);
  EXPECT_GT(st.rx_dropped, 0u);  // 1000 frames onto a ring of 64 that nobody polls
  EXPECT_EQ(st.rx_packets + st.rx_dropped, sent);
  EXPECT_EQ(st.rx_dropped, kstat("tx_dropped"));
  EXPECT_EQ(st.rx_packets, kstat("tx_packets"));
  EXPECT_EQ(drop_totals()[static_cast<unsigned>(DropReason::FULL_RING)] -
                before[static_cast<unsigned>(DropReason::FULL_RING)],
            st.rx_dropped);
  RecordProperty("kernel_ring_drops", std::to_string(st.rx_dropped));
}

TEST_F(TapTest, TcEgressDropOnDIsSeenOnTheKernelSide) {
  add_tap();
  line("tc qdisc add dev tp0 clsact");
  line("tc filter add dev tp0 egress matchall action drop");
  const uint64_t rx0 = kstat("rx_packets");
  const auto before = drop_totals();
  line("send dev tp0 count 100 size 80");
  uint64_t dropped = 0;
  const auto after = drop_totals();
  for (size_t i = 0; i < after.size(); ++i) dropped += after[i] - before[i];
  EXPECT_EQ(dropped, 100u);
  EXPECT_EQ(dev().stats_sum().tx_packets, 0u);
  EXPECT_EQ(kstat("rx_packets") - rx0, 0u);
  // Without the rule they arrive, and sent + dropped is every packet.
  line("tc filter del dev tp0 egress");
  line("send dev tp0 count 100 size 80");
  EXPECT_EQ(dev().stats_sum().tx_packets, 100u);
  EXPECT_EQ(kstat("rx_packets") - rx0, 100u);
}

TEST_F(TapTest, MultiQueueOpensEveryQueueAndTransmits) {
  line("ip link add dev tp0 numtxqueues 4 type tap name " + ifname_ + " multi_queue 4 netns " + ns_);
  line("ip link set dev tp0 up");
  const uint64_t rx0 = kstat("rx_packets");
  line("pktgen -i tp0 -n 200 -s 100 -t 2 -m 02:00:00:00:00:09");  // 200 per thread, as pktgen's count
  EXPECT_EQ(dev().stats_sum().tx_packets, 400u);
  EXPECT_EQ(kstat("rx_packets") - rx0, 400u);
  // The kernel side shows the queues.
  EXPECT_NE(sh_out("ip netns exec " + ns_ + " ls /sys/class/net/" + ifname_ + "/queues").find("tx-3"), std::string::npos);
}

TEST_F(TapTest, BadOptionsAndMissingNamespaceAreClearErrors) {
  std::string err;
  EXPECT_FALSE(line("ip link add dev tp0 type tap multi_queue 17", &err));
  EXPECT_NE(err.find("multi_queue must be 0..16"), std::string::npos) << err;
  EXPECT_FALSE(line("ip link add dev tp0 type tap name averyveryverylongname", &err));
  EXPECT_NE(err.find("longer than 15"), std::string::npos) << err;
  EXPECT_EQ(runner().table().find("tp0"), nullptr);
  {
    cli::ScriptLimits lim;
    lim.host_devices = false;  // as the script fuzzer runs
    runner().set_limits(lim);
    EXPECT_FALSE(line("ip link add dev tp0 type tap", &err));
    EXPECT_NE(err.find("devices of the host kernel are off"), std::string::npos) << err;
    runner().set_limits(cli::ScriptLimits{});
  }
  line("ip link add dev tp0 type tap netns " + ns_ + "_missing");
  EXPECT_FALSE(line("ip link set dev tp0 up", &err));
  EXPECT_NE(err.find("ip netns add " + ns_ + "_missing"), std::string::npos) << err;
  EXPECT_FALSE(dev().is_up());
}

}  // namespace
}  // namespace pktpath
