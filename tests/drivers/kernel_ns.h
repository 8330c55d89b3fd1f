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

#define SKIP_UNLESS(ns)                                 \
  do {                                                  \
    if (!(ns).ok()) GTEST_SKIP() << (ns).why();         \
  } while (0)

}  // namespace pktpath::kernel_test
