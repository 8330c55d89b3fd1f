// What the tests of drivers on real kernel interfaces (afpacket, xdp) share: a kernel
// network namespace with veth pairs (IPv6 off, so the kernel sends no ND/MLD of its
// own), removed at the end; a libpcap capture and a raw sender on its interfaces; UDP
// frames; pcap files read back; the script runner a line at a time.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
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
#include "core/net.h"

// After pktpath's headers (PACKET_HOST is an enumerator there, a macro here).
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>

namespace pktpath::kernel_test {

using Frame = std::vector<uint8_t>;

inline bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

inline std::string run_out(const std::string& cmd) {
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
inline bool in_netns(const std::string& ns, const std::function<void()>& f) {
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
  explicit KernelNs(const std::string& prefix = "ppafp") : name_(prefix + std::to_string(::getpid())) {
    if (::geteuid() != 0) {
      why_ = "needs root (kernel namespaces, veth, AF_PACKET/AF_XDP)";
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
  // A veth pair a <-> b in the namespace, both up, with `queues` rx and tx queues each.
  bool veth(const std::string& a, const std::string& b, unsigned queues = 1) {
    const std::string q =
        queues == 1 ? "" : " numrxqueues " + std::to_string(queues) + " numtxqueues " + std::to_string(queues);
    if (!sh("ip -n " + name_ + " link add " + a + q + " type veth peer name " + b + q)) {
      why_ = queues == 1 ? "cannot make a veth pair (no veth module?)" : "cannot make a veth pair with " +
                                                                           std::to_string(queues) + " queues";
      return false;
    }
    return sh("ip -n " + name_ + " link set " + a + " up") && sh("ip -n " + name_ + " link set " + b + " up");
  }
  // The test's first pair, pa<pid> <-> pb<pid>; false (why() says) without root or veth.
  bool pair(std::string& a, std::string& b, unsigned queues = 1) {
    a = "pa" + std::to_string(::getpid());
    b = "pb" + std::to_string(::getpid());
    return ok_ && veth(a, b, queues);
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
inline Frame udp_frame(uint16_t dport, uint32_t seq, size_t len = 80) {
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

inline uint16_t udp_dport(const Frame& f) { return f.size() >= 38 ? static_cast<uint16_t>(f[36] << 8 | f[37]) : 0; }

inline std::string temp_path(const std::string& name, const std::string& prefix = "pp_afp_") {
  return ::testing::TempDir() + "/" + prefix + std::to_string(::getpid()) + "_" + name;
}

inline std::vector<Frame> read_pcap(const std::string& path) {
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
inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct Runner {
  explicit Runner(std::FILE* out = stdout) : r{false, out} {}
  cli::ScriptRunner r;
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
  // dev's counters once rx.packets + rx.dropped reach `want`, or after 2 s of `sleep`
  // lines (the runner polls receive while it sleeps).
  DevStatsSum rx_accounted(const std::string& n, uint64_t want) {
    for (int i = 0; i < 100; ++i) {
      const DevStatsSum s = dev(n)->stats_sum();
      if (s.rx_packets + s.rx_dropped >= want || !line("sleep 0.02")) break;
    }
    return dev(n)->stats_sum();
  }
};

// The userspace datapath between two kernel veths, for a link kind: frames sent into A
// reach pktpath's d0, a tc ingress rule redirects UDP port 7 to d1 and drops the rest, and
// B receives exactly the port-7 frames; every frame d0 took is redirected or dropped and
// counted. `up` puts a device up, or returns false with `skip` set when the kind cannot
// run here (else the failure is t.err). With `threaded`, both devices poll on NAPI threads
// of their own and the script is not run while the frames pass (no `sleep` lines): only
// those threads can carry them.
using UpFn = bool (*)(Runner& t, const std::string& dev, std::string& skip);
inline void check_datapath_between_veths(KernelNs& ns, const std::string& kind, UpFn up, bool threaded = false) {
  const std::string pid = std::to_string(::getpid());
  const std::string a0 = "pa" + pid, a1 = "qa" + pid, b0 = "pb" + pid, b1 = "qb" + pid;
  if (!ns.veth(a0, a1) || !ns.veth(b0, b1)) GTEST_SKIP() << ns.why();
  KernelSender tx(ns.name(), a0);
  KernelCapture cap(ns.name(), b0);
  ASSERT_TRUE(tx.ok() && cap.ok());
  const uint64_t b_rx0 = ns.stat(b0, "rx", "packets");
  Runner t;
  std::string skip;
  const std::string in_ns = " netns " + ns.name();
  ASSERT_TRUE(t.line("ip link add dev d1 type " + kind + " link " + b1 + in_ns)) << t.err;
  if (threaded) {
    ASSERT_TRUE(t.line("ip link set dev d1 threaded 1")) << t.err;
  }
  if (!up(t, "d1", skip)) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    FAIL() << t.err;
  }
  ASSERT_TRUE(t.line("ip link add dev d0 type " + kind + " link " + a1 + in_ns)) << t.err;
  ASSERT_TRUE(t.line("tc qdisc add dev d0 clsact")) << t.err;
  ASSERT_TRUE(t.line("tc filter add dev d0 ingress pref 1 protocol ip flower ip_proto udp dst_port 7 "
                     "action mirred egress redirect dev d1")) << t.err;
  ASSERT_TRUE(t.line("tc filter add dev d0 ingress pref 2 matchall action drop")) << t.err;
  if (threaded) {
    ASSERT_TRUE(t.line("ip link set dev d0 threaded 1")) << t.err;
  }
  if (!up(t, "d0", skip)) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    FAIL() << t.err;
  }
  if (threaded) {
    EXPECT_FALSE(t.line("ip link set dev d0 threaded 0"));
    EXPECT_NE(t.err.find("threaded: set it while d0 is down"), std::string::npos) << t.err;
  }
  const uint64_t drops0 = drop_totals()[static_cast<unsigned>(DropReason::TC_INGRESS)];
  constexpr uint32_t kN = 600;
  std::vector<Frame> want;
  for (uint32_t i = 0; i < kN; ++i) {
    const Frame f = udp_frame(i % 3 == 0 ? 7 : 8, i);
    if (udp_dport(f) == 7) want.push_back(f);
    ASSERT_TRUE(tx.send(f));
  }
  auto dropped_now = [&] { return drop_totals()[static_cast<unsigned>(DropReason::TC_INGRESS)] - drops0; };
  auto pause = [&](const char* secs) {
    if (threaded) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(secs)));
    } else {
      ASSERT_TRUE(t.line(std::string("sleep ") + secs));
    }
  };
  for (int i = 0; i < 100 && t.dev("d1")->stats_sum().tx_packets + dropped_now() < kN; ++i) pause("0.02");
  pause("0.05");
  // d0's rx counts every frame its driver took in (tc then redirected or dropped each).
  const DevStatsSum s0 = t.dev("d0")->stats_sum(), s1 = t.dev("d1")->stats_sum();
  const uint64_t dropped = dropped_now();
  EXPECT_EQ(s0.rx_packets, kN);
  EXPECT_EQ(s0.rx_dropped, 0u);
  EXPECT_EQ(s1.tx_packets, want.size());
  EXPECT_EQ(s1.tx_packets + dropped, kN);
  const std::vector<Frame> got = cap.take(want.size());
  EXPECT_EQ(got, want);
  EXPECT_EQ(ns.stat(b0, "rx", "packets") - b_rx0, want.size());
}

#define SKIP_UNLESS(ns)                                 \
  do {                                                  \
    if (!(ns).ok()) GTEST_SKIP() << (ns).why();         \
  } while (0)

}  // namespace pktpath::kernel_test
