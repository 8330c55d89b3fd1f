// kernel_af_packet: how fast does the Linux kernel itself take pktgen's 60-byte frame
// through dev_queue_xmit on this machine? The kernel baseline beside pktpath's figures
// (document 000's path), for VMs without the pktgen module. Standalone: libc only.
//
// The frame enters from an AF_PACKET socket, so unlike pktgen-in-kernel every frame pays
// a syscall share, an skb allocation with socket accounting, and (ring mode) a copy of
// the 14-byte link header plus a page reference for the rest. Needs CAP_NET_RAW; see
// scripts/kernel-baseline for the namespace it is meant to run in.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <optional>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "af_packet_args.h"
#include "af_packet_frame.h"

namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Device {
  int ifindex = 0;
  std::array<uint8_t, 6> mac{};
  uint32_t saddr = 0;  // host order; 0 when the device has no IPv4 address
};

struct RunResult {
  uint64_t packets = 0;  // frames the kernel accepted (dev_queue_xmit said NET_XMIT_SUCCESS/CN)
  uint64_t errors = 0;   // frames refused: dropped on the way (ENOBUFS) or bad format
  double seconds = 0;
};

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "kernel_af_packet: %s\n", msg.c_str());
  std::exit(1);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The source fields pktgen takes from the device when none are set (pktgen_setup_inject):
// its hardware address and the first IPv4 address of its in_device.
Device lookup_device(const std::string& name) {
  Device d;
  d.ifindex = static_cast<int>(if_nametoindex(name.c_str()));
  if (d.ifindex == 0) die("interface '" + name + "': " + std::strerror(errno));

  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) die(errno_text("socket(AF_INET)"));
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, name.c_str(), name.size());
  if (ioctl(s, SIOCGIFHWADDR, &ifr) < 0) die(errno_text("SIOCGIFHWADDR"));
  close(s);
  const unsigned short type = ifr.ifr_hwaddr.sa_family;
  if (type != ARPHRD_ETHER && type != ARPHRD_LOOPBACK)
    die("interface '" + name + "' has link type " + std::to_string(type) +
        "; an Ethernet-framed device (Ethernet, loopback) is needed for a raw Ethernet frame");
  std::memcpy(d.mac.data(), ifr.ifr_hwaddr.sa_data, 6);

  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && name == a->ifa_name) {
        d.saddr = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
        break;
      }
    }
    freeifaddrs(list);
  }
  return d;
}

// Protocol 0 registers no receive hook (packet_do_bind skips register_prot_hook), so the
// socket adds no tap to the path; packet_parse_headers then takes skb->protocol from the
// frame's EtherType, as pktgen sets it (ETH_P_IP).
void bind_to(int fd, const Device& d) {
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = 0;
  sll.sll_ifindex = d.ifindex;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sll), sizeof sll) < 0) die(errno_text("bind(AF_PACKET)"));
}

kbase::FrameFields frame_fields(const kbase::AfPacketOptions& o, const Device& d) {
  kbase::FrameFields f;
  f.dst_mac = o.dst_mac;
  f.src_mac = d.mac;
  f.saddr = d.saddr;
  f.daddr = o.dst_ip;
  return f;
}

bool time_is_up(Clock::time_point end) { return g_stop || Clock::now() >= end; }

// The TX ring (TPACKET_V2). Each frame: tpacket2_hdr, then the data at
// tp_hdrlen - sizeof(sockaddr_ll) as tpacket_parse_header expects without PACKET_TX_HAS_OFF.
class TxRing {
 public:
  static constexpr unsigned kFrameSize = 128;  // TPACKET_ALIGNMENT multiple; 32 + 60 fits

  TxRing(int fd, unsigned want_frames) : fd_(fd) {
    int version = TPACKET_V2;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0)
      die(errno_text("PACKET_VERSION"));
    const long page = sysconf(_SC_PAGESIZE);
    const unsigned per_block = static_cast<unsigned>(page) / kFrameSize;
    tpacket_req req{};
    req.tp_block_size = static_cast<unsigned>(page);
    req.tp_block_nr = (want_frames + per_block - 1) / per_block;
    req.tp_frame_size = kFrameSize;
    req.tp_frame_nr = req.tp_block_nr * per_block;
    if (setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) < 0) die(errno_text("PACKET_TX_RING"));
    frames_ = req.tp_frame_nr;
    bytes_ = static_cast<size_t>(req.tp_block_size) * req.tp_block_nr;
    void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) die(errno_text("mmap(PACKET_TX_RING)"));
    base_ = static_cast<uint8_t*>(m);
    in_kernel_.assign(frames_, 0);
    data_off_ = TPACKET_ALIGN(sizeof(tpacket2_hdr));
  }
  ~TxRing() { munmap(base_, bytes_); }
  TxRing(const TxRing&) = delete;
  TxRing& operator=(const TxRing&) = delete;

  unsigned frames() const { return frames_; }

  // Every slot gets the frame once, with pktgen's per-packet ip_id and seq_num; the
  // slots are then reused unchanged, so the timed loop writes only status words.
  void fill(kbase::FrameFields f) {
    for (unsigned i = 0; i < frames_; ++i) {
      f.ip_id = static_cast<uint16_t>(i);
      f.seq = i;
      kbase::build_pktgen_frame(slot(i) + data_off_, f);
      auto* h = hdr(i);
      h->tp_len = kbase::kFrameLen;
      h->tp_snaplen = kbase::kFrameLen;
      status(i).store(TP_STATUS_AVAILABLE, std::memory_order_release);
    }
  }

  // One pass over the ring: settle the frames the kernel gave back (tpacket_destruct_skb
  // set TP_STATUS_AVAILABLE, or tpacket_snd's out_status set TP_STATUS_WRONG_FORMAT), and
  // with `rearm` hand every free slot back as TP_STATUS_SEND_REQUEST. Frames the kernel
  // still holds (SEND_REQUEST not reached yet, SENDING) are left alone.
  void settle(RunResult& r, bool rearm) {
    for (unsigned i = 0; i < frames_; ++i) {
      auto st = status(i).load(std::memory_order_acquire);
      if (st & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING)) continue;
      if (st & TP_STATUS_WRONG_FORMAT) {
        ++r.errors;
        in_kernel_[i] = 0;
      } else if (in_kernel_[i]) {
        ++r.packets;
        in_kernel_[i] = 0;
      }
      if (rearm) {
        status(i).store(TP_STATUS_SEND_REQUEST, std::memory_order_release);
        in_kernel_[i] = 1;
      } else if (st != TP_STATUS_AVAILABLE) {
        status(i).store(TP_STATUS_AVAILABLE, std::memory_order_release);
      }
    }
  }

  // Frames left marked at the end of a run are taken back unsent, so the next run starts
  // from a ring of free slots.
  void reclaim() {
    for (unsigned i = 0; i < frames_; ++i) {
      if (status(i).load(std::memory_order_acquire) == TP_STATUS_SEND_REQUEST) {
        status(i).store(TP_STATUS_AVAILABLE, std::memory_order_release);
        in_kernel_[i] = 0;
      }
    }
  }

  // tpacket_snd: walks the ring from its head while frames are SEND_REQUEST, builds an
  // skb per frame and calls dev_queue_xmit; blocking, it returns when all are released.
  // Returns false on a refused frame (counted); dies on errors that would repeat forever.
  bool flush(RunResult& r) {
    for (;;) {
      if (send(fd_, nullptr, 0, 0) >= 0) return true;
      if (errno == EINTR) {
        if (g_stop) return true;
        continue;
      }
      if (errno == ENOBUFS) {  // net_xmit_errno(NET_XMIT_DROP): dropped on the way (tc, qdisc)
        ++r.errors;
        return false;
      }
      if (errno == EINVAL || errno == EMSGSIZE) return false;  // the frame's status says WRONG_FORMAT
      die(errno_text("send(PACKET_TX_RING)"));
    }
  }

 private:
  uint8_t* slot(unsigned i) const { return base_ + static_cast<size_t>(i) * kFrameSize; }
  tpacket2_hdr* hdr(unsigned i) const { return reinterpret_cast<tpacket2_hdr*>(slot(i)); }
  std::atomic_ref<uint32_t> status(unsigned i) const { return std::atomic_ref<uint32_t>(hdr(i)->tp_status); }

  int fd_;
  uint8_t* base_ = nullptr;
  size_t bytes_ = 0;
  unsigned frames_ = 0;
  unsigned data_off_ = 0;
  std::vector<uint8_t> in_kernel_;  // slot handed to the kernel and not yet settled
};

RunResult run_ring(TxRing& ring, double duration_s) {
  RunResult r;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
  while (!time_is_up(end)) {
    ring.settle(r, /*rearm=*/true);
    ring.flush(r);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  ring.settle(r, /*rearm=*/false);
  ring.reclaim();
  return r;
}

// packet_snd: one syscall per frame, the 60 bytes copied into a linear skb.
RunResult run_sendto(int fd, const uint8_t* frame, double duration_s) {
  RunResult r;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
  for (unsigned n = 0;; ++n) {
    if ((n & 255) == 0 && time_is_up(end)) break;  // the clock every 256 frames, as pktgen
    if (sendto(fd, frame, kbase::kFrameLen, 0, nullptr, 0) == static_cast<ssize_t>(kbase::kFrameLen)) {
      ++r.packets;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == ENOBUFS) {
      ++r.errors;
      continue;
    }
    die(errno_text("sendto(AF_PACKET)"));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// /proc/net/pktgen/DEV's result, as pktgen's show_results prints it; Mb/sec counts the
// 60 bytes the frame has on the wire without FCS, as pktgen does.
void print_result(const RunResult& r) {
  const double pps = r.seconds > 0 ? static_cast<double>(r.packets) / r.seconds : 0;
  const double bps = pps * 8 * kbase::kFrameLen;
  const auto usec = static_cast<unsigned long long>(r.seconds * 1e6);
  std::printf("Result: OK: %llu(c%llu+d0) usec, %llu (%zubyte,0frags)\n", usec, usec,
              static_cast<unsigned long long>(r.packets), kbase::kFrameLen);
  std::printf("  %.0fpps %.0fMb/sec (%.0fbps) errors: %llu\n", pps, bps / 1e6, bps,
              static_cast<unsigned long long>(r.errors));
}

}  // namespace

int main(int argc, char** argv) {
  kbase::AfPacketOptions opt;
  kbase::ParseResult pr = kbase::parse_af_packet_args(argc, argv, opt);
  if (!pr.ok) {
    std::fprintf(stderr, "kernel_af_packet: %s\n%s", pr.error.c_str(), kbase::kAfPacketUsage);
    return 2;
  }
  if (opt.help) {
    std::fputs(kbase::kAfPacketUsage, stdout);
    return 0;
  }

  struct sigaction sa{};
  sa.sa_handler = on_signal;  // no SA_RESTART: a blocked send returns EINTR and the run ends
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const Device dev = lookup_device(opt.ifname);
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) die(errno_text("socket(AF_PACKET, SOCK_RAW) (needs CAP_NET_RAW)"));

  // TxRing sets PACKET_VERSION before PACKET_TX_RING: packet_setsockopt refuses a version
  // change once a ring exists. Binding afterwards is fine either way.
  std::optional<TxRing> ring;
  if (opt.mode == kbase::TxMode::Ring) ring.emplace(fd, opt.frames);
  bind_to(fd, dev);

  uint8_t frame[kbase::kFrameLen];
  kbase::build_pktgen_frame(frame, frame_fields(opt, dev));
  if (ring) ring->fill(frame_fields(opt, dev));

  std::printf("Device: %s (AF_PACKET SOCK_RAW, %s, dev_queue_xmit; %.2f s x %u)\n", opt.ifname.c_str(),
              ring ? ("PACKET_TX_RING TPACKET_V2, " + std::to_string(ring->frames()) + " frames").c_str()
                   : "one sendto per frame",
              opt.duration_s, opt.repeat);
  std::fflush(stdout);

  std::vector<double> pps, mbps;
  uint64_t total = 0, errors = 0;
  for (unsigned i = 0; i < opt.repeat && !g_stop; ++i) {
    RunResult r = ring ? run_ring(*ring, opt.duration_s) : run_sendto(fd, frame, opt.duration_s);
    if (opt.repeat > 1) std::printf("Run %u/%u\n", i + 1, opt.repeat);
    print_result(r);
    std::fflush(stdout);
    const double p = r.seconds > 0 ? static_cast<double>(r.packets) / r.seconds : 0;
    pps.push_back(p);
    mbps.push_back(p * 8 * kbase::kFrameLen / 1e6);
    total += r.packets;
    errors += r.errors;
  }
  ring.reset();
  close(fd);

  if (pps.size() > 1) {
    std::printf("%zu runs: ", pps.size());
    for (size_t i = 0; i < mbps.size(); ++i) std::printf("%s%.0f", i ? " " : "", mbps[i]);
    std::printf(" Mb/sec; pps min %.0f median %.0f max %.0f\n", *std::min_element(pps.begin(), pps.end()),
                median(pps), *std::max_element(pps.begin(), pps.end()));
  }
  std::printf("Total: %llu packets, errors: %llu\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(errors));
  return g_stop ? 130 : 0;
}
