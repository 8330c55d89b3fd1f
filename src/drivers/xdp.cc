// xdp: a Linux interface as a pktpath device, through AF_XDP sockets (net/xdp/xsk.c on
// the other side), set up with libxdp.
//
//   ip link add dev D type xdp link IF [netns NAME] [queues N] [mode native|generic] [zerocopy]
//
// One AF_XDP socket per queue (default 1), bound to IF's rx queues 0..N-1, all sharing
// one UMEM: the packet pool's slab itself, registered in unaligned-chunk mode, so that
// the kernel writes received frames straight into pktpath packets (as DPDK's af_xdp PMD
// registers its mempool). libxdp loads its default program on IF, which
// redirects each queue's frames into the socket bound to it (an XSKMAP); without a BPF
// file system, or where its dispatcher cannot run, libxdp attaches that program alone,
// and the device says so on stderr. `mode` picks XDP_FLAGS_DRV_MODE or
// XDP_FLAGS_SKB_MODE (default: native where IF takes it, else generic); the bind asks
// for XDP_COPY, or XDP_ZEROCOPY with `zerocopy` (refused where IF's driver has none).
//
// Receive, without a copy: each socket lends kFill packets of the pool to the kernel
// through its fill ring, each as the address of its buffer (head); the kernel writes a
// frame at head + XDP_PACKET_HEADROOM. One NAPI instance on the Cpu of the thread that
// sets the device up walks the sockets' rx rings up to its budget, finds each
// descriptor's packet by its address, sets its geometry and hands the packet itself to
// netif_receive_skb; then lends as many fresh packets of the polling Cpu through the
// fill ring at once. A bitmap over the pool's slots says which packets are on loan (the
// kernel in copy mode keeps fill-ring frames on its own free list, xp_free, so the
// rings alone do not say): at down, once the sockets are closed, they go back to the
// pool. The pool's buffers must hold a whole chunk (kChunk): the up refuses a pool
// whose buf_size is smaller. Copy mode only was tried (veth): in zero-copy mode the
// kernel refuses a chunk that crosses into a page not DMA-contiguous with it
// (xp_check_unaligned), which most slots of a 4 KiB-page slab do. The interrupt is a thread of the device sleeping in poll() on the sockets, scheduling the
// instance and waiting for its poll to complete it, as afpacket's does.
//
// Transmit: socket i serves tx queue i, with kTxFrames slots of the pool it takes at up
// and holds until down as its tx frames (one socket has one UMEM: they must lie in the
// registered slab too). A frame is copied into a free one and its descriptor produced
// on the tx ring; the doorbell (sendto, which makes the kernel send what the ring holds:
// in copy mode up to the socket's XDP_MAX_TX_SKB_BUDGET a call, raised to the ring's
// size where the kernel has it, else TX_BATCH_SIZE, so it calls again while the kernel
// says EAGAIN) rings once per burst, as work on the sending Cpu coalesced as afpacket's is. The completion ring is read in batches, when the free
// frames run low.
//
// The kernel's drops (XDP_STATISTICS: rx_dropped, rx_ring_full; tx_invalid_descs) count
// as rx.dropped and tx.dropped; rx_fill_ring_empty_descs and tx_ring_empty_descs are
// events, not drops (a fill-ring miss is in rx_dropped already). `netns NAME` opens and
// closes the sockets from a thread in /var/run/netns/NAME (libxdp attaches and detaches
// its program by interface index, in the calling thread's namespace).
#include "core/dev_rx.h"
#include "core/link_kind.h"
#include "drivers/host_socket.h"

#include <cstring>
#include <memory>
#include <string>

#if PKTPATH_HAVE_XDP
// After pktpath's headers (see afpacket.cc: PACKET_HOST and kin are macros there).
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <thread>
#include <utility>
#include <vector>
#endif

namespace pktpath {

namespace {

constexpr uint32_t kMaxQueues = 64;
constexpr size_t kIfNameSize = 16;  // IFNAMSIZ, the terminating NUL included

struct XdpConfig {
  std::string link, netns;
  uint32_t queues = 1;
  uint32_t xdp_mode = 0;  // 0 (native, else generic), XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE
  bool zerocopy = false;
};

#if PKTPATH_HAVE_XDP

// XDP_UMEM_MIN_CHUNK_SIZE: in unaligned mode the kernel takes a fill address A when
// [A, A + kChunk) lies in the UMEM (xp_check_unaligned) and writes at most
// kChunk - XDP_PACKET_HEADROOM bytes at A + XDP_PACKET_HEADROOM (__xsk_rcv's frame
// size check), so a packet's buffer, lent at its head, must be kChunk long.
constexpr uint32_t kChunk = 2048;
constexpr uint32_t kXdpHeadroom = 256;  // XDP_PACKET_HEADROOM: where the kernel puts the frame
constexpr uint32_t kRing = 2048;        // every ring's size
constexpr uint32_t kFill = kRing;       // packets each socket lends through its fill ring
constexpr uint32_t kTxFrames = 512;     // pool slots each socket holds as tx frames
constexpr uint32_t kRefillBatch = 256;  // packets lent at most per refill
constexpr uint32_t kTxReclaimBelow = 64;  // read the completion ring when fewer frames are free
constexpr uint32_t kTxBatch = 32;         // TX_BATCH_SIZE: what one sendto sends in copy mode
// XDP_MAX_TX_SKB_BUDGET (Linux 6.17; not in older uapi headers): how many frames one
// sendto sends in copy mode, TX_BATCH_SIZE by default, at most the tx ring's size.
// Older kernels say ENOPROTOOPT and keep TX_BATCH_SIZE.
constexpr int kSockoptMaxTxBudget = 9;

std::string errno_text(int e) { return std::strerror(e); }

struct XdpPriv;

// One AF_XDP socket and its four rings. rx, fill and nlent belong to the polling Cpu;
// tx, completion and the free frames to the holder of tx queue `index`'s lock.
struct Xsk final : host_socket::Doorbell {
  XdpPriv* s = nullptr;
  uint32_t index = 0;
  xsk_socket* xsk = nullptr;
  int fd = -1;
  xsk_ring_prod fill{}, tx{};
  xsk_ring_cons comp{}, rx{};
  uint32_t nlent = 0;  // packets on loan to the kernel through this socket's fill ring
  uint32_t tx_batch = kTxBatch;  // what one sendto sends (XDP_MAX_TX_SKB_BUDGET)
  // Transmit: kTxFrames pool slots, held from up to down.
  std::unique_ptr<Packet*[]> tx_slots;
  uint32_t ntx_slots = 0;
  std::unique_ptr<uint64_t[]> free_frames;  // their UMEM addresses, `nfree` of them free
  uint32_t nfree = 0;
  // The kernel's counters at the last read (XDP_STATISTICS counts from the bind).
  xdp_statistics last{};

  // The kernel sends what the tx ring holds (__xsk_generic_xmit, __xsk_sendmsg): a call
  // sends up to its budget (tx_batch) and says EAGAIN while more is left.
  void send(uint32_t pending) override {
    for (uint32_t i = 0; i <= pending / tx_batch + 1; ++i) {
      if (::sendto(fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0) return;
      if (errno == EAGAIN) continue;
      if (errno != EBUSY && errno != ENOBUFS) fail(errno);
      return;
    }
  }
  // Completed frames back to the free list, all the ring has at once.
  void reclaim() {
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&comp, kTxFrames, &idx);
    for (uint32_t i = 0; i < n; ++i) free_frames[nfree++] = *xsk_ring_cons__comp_addr(&comp, idx + i);
    if (n) xsk_ring_cons__release(&comp, n);
  }
};

struct XdpPriv final : DriverState {
  NetDevice* dev = nullptr;
  XdpConfig cfg;

  // Up: opened by xdp_open, closed by xdp_stop.
  PacketPool* pool = nullptr;  // its slab is the UMEM
  xsk_umem* umem = nullptr;
  std::unique_ptr<Xsk[]> q;
  uint32_t nq = 0;
  uint32_t link_mtu = 1500;
  // A bit per pool slot: set while the packet is on loan to the kernel (on a fill ring,
  // in the kernel's free list or on an rx ring). Written by the polling Cpu, and at up
  // and down while nothing polls.
  std::unique_ptr<uint64_t[]> lent;

  bool is_lent(uint32_t i) const { return (lent[i / 64] >> (i % 64)) & 1; }
  void set_lent(uint32_t i) { lent[i / 64] |= uint64_t(1) << (i % 64); }
  void clear_lent(uint32_t i) { lent[i / 64] &= ~(uint64_t(1) << (i % 64)); }
  uint64_t umem_addr(const Packet* p) const { return static_cast<uint64_t>(p->head - pool->slab()); }

  Napi napi;
  host_socket::RxIrq irq;
  std::atomic<bool> rx_running{false};  // set by the control thread, read by the poll

  std::string error;
  bool error_reported = false;

  ~XdpPriv() override;
  void fail(std::string msg) {
    if (error.empty()) error = dev->name() + ": " + std::move(msg);
  }
};

XdpPriv& priv(const NetDevice& dev) { return *static_cast<XdpPriv*>(dev.priv()); }

// ---- libbpf's and libxdp's messages

// Where the libraries' messages go while a thread opens or closes sockets: that thread's
// sink (the kernel's extack text among them, "Kernel error message: ..."). The print
// callbacks are the libraries' own process-wide settings; the sink is per thread so that
// two devices opening at once keep their messages apart.
thread_local std::string* t_log = nullptr;

int lib_print(const char* level, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (t_log) *t_log += buf;
  else if (std::strcmp(level, "warn") == 0) std::fputs(buf, stderr);
  return 0;
}
int libbpf_print_cb(libbpf_print_level l, const char* fmt, va_list ap) {
  return l == LIBBPF_DEBUG ? 0 : lib_print(l == LIBBPF_WARN ? "warn" : "info", fmt, ap);
}
int libxdp_print_cb(libxdp_print_level l, const char* fmt, va_list ap) {
  return l == LIBXDP_DEBUG ? 0 : lib_print(l == LIBXDP_WARN ? "warn" : "info", fmt, ap);
}

// The kernel's own words in the libraries' log: its extack messages, "; "-joined.
std::string kernel_messages(const std::string& log) {
  std::string out;
  static constexpr std::string_view kTag = "Kernel error message: ";
  for (size_t at = log.find(kTag); at != std::string::npos; at = log.find(kTag, at + 1)) {
    const size_t b = at + kTag.size(), e = log.find('\n', b);
    out += (out.empty() ? "" : "; ") + log.substr(b, e == std::string::npos ? std::string::npos : e - b);
  }
  return out;
}

// ---- opening and closing (in IF's namespace)

// Every packet still on loan, and the tx frames, back to the pool. Only once the
// sockets are closed: xsk_release unbinds (synchronize_net) before it returns, so the
// kernel writes none of them any more.
void return_packets(XdpPriv& s) {
  if (s.lent) {
    Packet* batch[kRefillBatch];
    unsigned n = 0;
    for (uint32_t i = 0; i < s.pool->capacity(); ++i) {
      if (!s.is_lent(i)) continue;
      s.clear_lent(i);
      batch[n++] = s.pool->slot_at(uint64_t(i) * s.pool->slot_size());
      if (n == kRefillBatch) s.pool->put_bulk(batch, std::exchange(n, 0));
    }
    if (n) s.pool->put_bulk(batch, n);
  }
  for (uint32_t i = 0; s.q && i < s.nq; ++i) {
    Xsk& x = s.q[i];
    if (x.ntx_slots) s.pool->put_bulk(x.tx_slots.get(), x.ntx_slots);
    x.ntx_slots = 0;
    x.nlent = 0;
  }
}

// mirrors xsk_socket__delete's order: the sockets, then their shared UMEM; then the
// packets they had back to the pool.
void close_queues(XdpPriv& s) {
  for (uint32_t i = 0; s.q && i < s.nq; ++i)
    if (Xsk& x = s.q[i]; x.xsk) {
      xsk_socket__delete(x.xsk);
      x.xsk = nullptr;
    }
  if (s.umem) xsk_umem__delete(s.umem);
  s.umem = nullptr;
  return_packets(s);
  s.lent.reset();
  s.q.reset();
  s.nq = 0;
}

// Closing in IF's namespace: the last socket's close detaches libxdp's program by index.
void close_all(XdpPriv& s) {
  if (s.q) {
    std::string err, log;
    host_socket::in_netns(s.cfg.netns, err, [&] {
      t_log = &log;
      close_queues(s);
      t_log = nullptr;
      return true;
    });
    // The namespace has gone (and a veth with it): closed here. libxdp detaches only a
    // program whose id is its own, so an interface of this namespace with the same index
    // keeps its program.
    close_queues(s);
  }
}

XdpPriv::~XdpPriv() { close_all(*this); }

std::string lib_error(int rc) {
  char buf[256];
  libxdp_strerror(rc, buf, sizeof buf);
  return buf;
}

// The interface's index, MTU and state (SIOCGIF*), then per queue: the UMEM (fill ring
// filled with the first half of its frames) and the socket, bound with the program
// loaded. The dispatcher's absence is reported once, not an error.
bool open_queues(XdpPriv& s, std::string& err) {
  const XdpConfig& c = s.cfg;
  const std::string where = c.netns.empty() ? "" : " in netns " + c.netns;
  const int probe = ::socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (probe < 0) {
    err = errno == EPERM || errno == EACCES
              ? "opening an AF_XDP socket needs CAP_NET_RAW, and loading its XDP program CAP_BPF and "
                "CAP_NET_ADMIN (run as root)"
              : errno == EAFNOSUPPORT ? "AF_XDP is not available in this kernel (CONFIG_XDP_SOCKETS)"
                                      : "socket(AF_XDP): " + errno_text(errno);
    return false;
  }
  ::close(probe);
  const int ctl = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);  // AF_XDP sockets take no SIOCGIF*
  if (ctl < 0) {
    err = "socket(AF_INET): " + errno_text(errno);
    return false;
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, c.link.data(), c.link.size());
  if (::ioctl(ctl, SIOCGIFINDEX, &ifr) != 0) {
    ::close(ctl);
    err = "link " + c.link + ": no such interface" + where;
    return false;
  }
  const int ifindex = ifr.ifr_ifindex;
  s.link_mtu = ::ioctl(ctl, SIOCGIFMTU, &ifr) == 0 ? static_cast<uint32_t>(ifr.ifr_mtu) : 1500;
  const bool flags_ok = ::ioctl(ctl, SIOCGIFFLAGS, &ifr) == 0;
  ::close(ctl);
  if (flags_ok && !(ifr.ifr_flags & IFF_UP)) {
    err = "link " + c.link + where + " is down (ip link set dev " + c.link + " up)";
    return false;
  }
  if (s.link_mtu + 18 > kChunk - kXdpHeadroom) {
    err = "link " + c.link + ": MTU " + std::to_string(s.link_mtu) + " exceeds what a " +
          std::to_string(kChunk) + "-byte UMEM chunk holds after XDP_PACKET_HEADROOM (MTU " +
          std::to_string(kChunk - kXdpHeadroom - 18) + ")";
    return false;
  }
  if (s.dev->num_tx_queues() > c.queues) {
    err = "numtxqueues " + std::to_string(s.dev->num_tx_queues()) + " exceeds queues " + std::to_string(c.queues) +
          " (one AF_XDP socket serves each tx queue)";
    return false;
  }

  std::string log;
  t_log = &log;
  struct ResetLog {
    ~ResetLog() { t_log = nullptr; }
  } reset_log;
  libbpf_set_print(libbpf_print_cb);
  libxdp_set_print(libxdp_print_cb);
  auto with_kernel = [&](std::string msg) {
    const std::string k = kernel_messages(log);
    return k.empty() ? msg : msg + " (kernel: " + k + ")";
  };

  PacketPool& pool = *s.pool;
  s.nq = c.queues;
  s.q = std::make_unique<Xsk[]>(s.nq);
  s.lent = std::make_unique<uint64_t[]>((pool.capacity() + 63) / 64);  // zeroed
  // The pool's whole slab, once, in unaligned-chunk mode (a chunk starts at any packet's
  // head); the first socket takes its fill and completion rings. One registration
  // shared by every socket (XDP_SHARED_UMEM, xsk_socket__create_shared: a socket on
  // another queue gets its own fill and completion ring, xp_create_and_assign_umem),
  // rather than one per socket: each registration pins the whole slab again
  // (xdp_umem_pin_pages, charged to RLIMIT_MEMLOCK without CAP_IPC_LOCK), and sharing
  // across queues works in copy mode with any driver, veth included.
  const xsk_umem_config ucfg{.fill_size = kRing, .comp_size = kRing, .frame_size = kChunk,
                             .frame_headroom = 0, .flags = XDP_UMEM_UNALIGNED_CHUNK_FLAG};
  if (const int rc = xsk_umem__create(&s.umem, pool.slab(), pool.slab_bytes(), &s.q[0].fill, &s.q[0].comp, &ucfg);
      rc != 0) {
    s.umem = nullptr;
    err = with_kernel("link " + c.link + ": xsk_umem__create of the packet pool (" +
                      std::to_string(pool.slab_bytes() >> 20) + " MiB): " + lib_error(rc));
    if (rc == -ENOMEM || rc == -EPERM) err += " (the kernel pins it: RLIMIT_MEMLOCK, or run as root)";
    return false;
  }
  for (uint32_t i = 0; i < s.nq; ++i) {
    Xsk& x = s.q[i];
    x.s = &s;
    x.index = i;
    xsk_socket_config scfg{};
    scfg.rx_size = kRing;
    scfg.tx_size = kRing;
    scfg.libxdp_flags = 0;  // load the default program (xsk_setup_xdp_prog)
    scfg.xdp_flags = c.xdp_mode;
    scfg.bind_flags = c.zerocopy ? XDP_ZEROCOPY : XDP_COPY;
    // A socket closed just before on the same queue lets go of it later (the kernel's
    // xp_release_deferred runs from a workqueue): EBUSY meanwhile, tried again for 1 s.
    int rc = 0;
    for (int tries = 0; (rc = xsk_socket__create_shared(&x.xsk, c.link.c_str(), i, s.umem, &x.rx, &x.tx, &x.fill,
                                                        &x.comp, &scfg)) == -EBUSY &&
                        tries < 50;
         ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (rc != 0) {
      x.xsk = nullptr;
      std::string m2 = "link " + c.link + " queue " + std::to_string(i) + ": xsk_socket__create: " + lib_error(rc);
      if (c.zerocopy && (rc == -EOPNOTSUPP || rc == -EINVAL))
        m2 += " (zerocopy refused: the driver of " + c.link + " has no AF_XDP zero-copy; leave out zerocopy)";
      else if (rc == -EPERM)
        m2 += " (loading and attaching the XDP program needs CAP_BPF and CAP_NET_ADMIN)";
      else if (rc == -EINVAL && i > 0)
        m2 += " (" + c.link + " has fewer than " + std::to_string(c.queues) + " rx queues?)";
      err = with_kernel(std::move(m2));
      return false;
    }
    x.fd = xsk_socket__fd(x.xsk);
    // One sendto sends up to a whole ring where the kernel lets it (copy mode).
    if (uint32_t budget = kRing; ::setsockopt(x.fd, SOL_XDP, kSockoptMaxTxBudget, &budget, sizeof budget) == 0)
      x.tx_batch = budget;
    // The tx frames and the first loan, raw slots straight from the pool (this may be
    // another thread than any Cpu's); the polling Cpu lends the refills.
    x.tx_slots = std::make_unique<Packet*[]>(kTxFrames);
    x.ntx_slots = pool.get_bulk(x.tx_slots.get(), kTxFrames);
    Packet* loan[kFill];
    const unsigned k = x.ntx_slots == kTxFrames ? pool.get_bulk(loan, kFill) : 0;
    uint32_t idx = 0;
    if (k < kFill || xsk_ring_prod__reserve(&x.fill, k, &idx) != k) {
      if (k) pool.put_bulk(loan, k);
      err = "link " + c.link + ": the packet pool (" + std::to_string(pool.capacity()) + " packets) has too few free for " +
            std::to_string(kFill + kTxFrames) + " per queue (the fill ring's loan and the tx frames)";
      return false;
    }
    for (unsigned f = 0; f < k; ++f) {
      *xsk_ring_prod__fill_addr(&x.fill, idx + f) = s.umem_addr(loan[f]);
      s.set_lent(pool.index_of(loan[f]));
    }
    xsk_ring_prod__submit(&x.fill, k);
    x.nlent = k;
    x.free_frames = std::make_unique<uint64_t[]>(kTxFrames);
    for (uint32_t f = 0; f < kTxFrames; ++f) x.free_frames[f] = s.umem_addr(x.tx_slots[f]);
    x.nfree = kTxFrames;
  }
  // libxdp attaches through its dispatcher where it can, else its program alone (no BPF
  // file system, or the kernel failed the dispatcher's check): then no other XDP
  // program can share IF. Not an error: one line says so.
  if (xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex); mp && !libxdp_get_error(mp)) {
    if (xdp_multiprog__is_legacy(mp))
      std::fprintf(stderr, "%s: xdp: libxdp attached its program to %s without the dispatcher (no BPF file system at "
                           "/sys/fs/bpf, or the dispatcher check failed): no other XDP program can share it\n",
                   s.dev->name().c_str(), c.link.c_str());
    xdp_multiprog__close(mp);
  }
  return true;
}

// ---- receive

// One rx descriptor's packet up the stack, no copy: the frame is at `off` from its head
// (XDP_PACKET_HEADROOM), `n` bytes. Runt or oversized frames count as rx_dropped, the
// packet freed under its reason.
void deliver(XdpPriv& s, Cpu& cpu, Packet* p, uint32_t off, uint32_t n) {
  NetDevice& dev = *s.dev;
  p->reset_for_alloc(off, cpu.id());  // as Cpu::alloc, with the kernel's headroom
  DropReason why = DropReason::NOT_SPECIFIED;
  if (PP_UNLIKELY(n < 14)) why = DropReason::PKT_TOO_SMALL;
  else if (PP_UNLIKELY(n > dev.mtu() + 18 || n > p->end_off - off)) why = DropReason::PKT_TOO_BIG;
  if (PP_LIKELY(why == DropReason::NOT_SPECIFIED)) {
    p->put_fresh(n);
    eth_type_trans(*p, dev);
    dev_sw_netstats_rx_add(cpu, dev, n);
    netif_receive_skb(cpu, p);
    return;
  }
  dev.stats(cpu).rx_dropped.add();
  cpu.free_reason(p, why);
}

// Lends fresh packets of `cpu` through x's fill ring, up to kFill on loan, in one batch.
// Each packet is lent by the address of its head: the kernel writes the frame at
// head + XDP_PACKET_HEADROOM (xp_init_xskb_addr, xp_alloc). A short pool leaves the
// ring lower (Cpu::stats().alloc_fail; the kernel counts its misses as rx_dropped)
// until a later poll, which the interrupt makes after RxIrq::kRetryMs.
void refill(XdpPriv& s, Xsk& x, Cpu& cpu) {
  const uint32_t want = std::min(kFill - x.nlent, kRefillBatch);
  if (want == 0) return;
  Packet* ps[kRefillBatch];
  const unsigned k = cpu.cache_get_bulk(ps, want);
  uint32_t idx = 0;
  // The fill ring holds no more than what is on loan: it has room for kFill - nlent.
  if (k == 0 || xsk_ring_prod__reserve(&x.fill, k, &idx) != k) {
    if (k) cpu.cache_put_bulk(ps, k);
    return;
  }
  for (unsigned i = 0; i < k; ++i) {
    *xsk_ring_prod__fill_addr(&x.fill, idx + i) = s.umem_addr(ps[i]);
    s.set_lent(s.pool->index_of(ps[i]));
  }
  xsk_ring_prod__submit(&x.fill, k);
  x.nlent += k;
}

// Up to `budget - done` descriptors of one socket, their packets replaced on the fill
// ring in one batch; true when the ring ran dry first.
bool poll_queue(XdpPriv& s, Xsk& x, Cpu& cpu, int budget, int& done) {
  uint32_t idx = 0;
  const uint32_t want = static_cast<uint32_t>(budget - done);
  const uint32_t n = xsk_ring_cons__peek(&x.rx, want, &idx);
  if (n == 0) {
    if (PP_UNLIKELY(x.nlent < kFill)) refill(s, x, cpu);  // the interrupt's retry
    return true;
  }
  PacketPool& pool = *s.pool;
  for (uint32_t i = 0; i < n; ++i) {
    const xdp_desc* d = xsk_ring_cons__rx_desc(&x.rx, idx + i);
    // The address is the head we lent, the frame's offset from it in the top bits
    // (xp_get_handle in unaligned mode).
    const uint64_t head = xsk_umem__extract_addr(d->addr);
    const uint64_t off = xsk_umem__add_offset_to_addr(d->addr) - head;
    Packet* p = pool.slot_at(head);
    // Only a packet on loan comes back; anything else is not ours to touch.
    if (PP_UNLIKELY(!p || s.umem_addr(p) != head || !s.is_lent(pool.index_of(p)))) {
      s.dev->stats(cpu).rx_dropped.add();
      continue;
    }
    s.clear_lent(pool.index_of(p));
    --x.nlent;
    deliver(s, cpu, p, static_cast<uint32_t>(off), d->len);
  }
  xsk_ring_cons__release(&x.rx, n);
  refill(s, x, cpu);
  done += static_cast<int>(n);
  return n < want;
}

int xdp_poll(Napi& n, Cpu& cpu, int budget) {
  XdpPriv& s = *static_cast<XdpPriv*>(n.ctx);
  int done = 0;
  bool dry = true;
  if (s.rx_running)
    for (uint32_t i = 0; i < s.nq && done < budget; ++i) dry = poll_queue(s, s.q[i], cpu, budget, done) && dry;
  if (dry && done < budget) {
    // A loan the pool could not top up: the frames it still lets in wake the next refill,
    // but none would come once nothing is lent, so the interrupt retries it.
    bool starved = false;
    for (uint32_t i = 0; i < s.nq; ++i) starved = starved || s.q[i].nlent < kFill;
    napi_complete_done(n, done);
    s.irq.complete(starved && s.rx_running);
  }
  return done;
}

// The kernel's drops since the last read into rx_dropped and tx_dropped.
void read_kernel_drops(XdpPriv& s, Cpu& cpu) {
  for (uint32_t i = 0; i < s.nq; ++i) {
    Xsk& x = s.q[i];
    xdp_statistics st{};
    socklen_t len = sizeof st;
    if (::getsockopt(x.fd, SOL_XDP, XDP_STATISTICS, &st, &len) != 0) continue;
    DevCpuStats& d = s.dev->stats(cpu);
    const uint64_t rx = (st.rx_dropped - x.last.rx_dropped) + (st.rx_ring_full - x.last.rx_ring_full);
    const uint64_t tx = st.tx_invalid_descs - x.last.tx_invalid_descs;
    if (rx) d.rx_dropped.add(rx);
    if (tx) d.tx_dropped.add(tx);
    x.last = st;
  }
}

// ---- transmit

NetdevTx xdp_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue& txq) {
  XdpPriv& s = priv(dev);
  const uint32_t qi = static_cast<uint32_t>(&txq - &dev.txq(0));
  DropReason why = DropReason::NOT_SPECIFIED;
  if (PP_UNLIKELY(qi >= s.nq)) why = DropReason::DEV_READY;
  else if (PP_UNLIKELY(p->len < 14)) why = DropReason::PKT_TOO_SMALL;
  else if (PP_UNLIKELY(p->len > s.link_mtu + 18)) why = DropReason::PKT_TOO_BIG;
  if (PP_UNLIKELY(why != DropReason::NOT_SPECIFIED)) {
    dev.stats(cpu).tx_dropped.add();
    cpu.free_reason(p, why);
    return NetdevTx::OK;
  }
  Xsk& x = s.q[qi];
  if (PP_UNLIKELY(x.nfree < kTxReclaimBelow)) {
    x.reclaim();
    if (x.nfree == 0) {
      x.ring();  // all frames in flight: let the kernel send, then look again
      x.reclaim();
      if (x.nfree == 0) return NetdevTx::BUSY;
    }
  }
  uint32_t idx = 0;
  if (PP_UNLIKELY(xsk_ring_prod__reserve(&x.tx, 1, &idx) != 1)) return NetdevTx::BUSY;
  const uint64_t addr = x.free_frames[--x.nfree];
  const uint32_t len = p->len;
  uint8_t* d = static_cast<uint8_t*>(xsk_umem__get_data(s.pool->slab(), addr));
  if (PP_LIKELY(len <= p->headlen())) std::memcpy(d, p->data(), len);
  else p->copy_bits(0, d, len);
  xdp_desc* desc = xsk_ring_prod__tx_desc(&x.tx, idx);
  desc->addr = addr;
  desc->len = len;
  desc->options = 0;
  xsk_ring_prod__submit(&x.tx, 1);
  x.mark();
  DevCpuStats& st = dev.stats(cpu);
  st.tx_packets.add();
  st.tx_bytes.add(len);
  const bool more = p->xmit_more;
  cpu.free(p);
  x.after_frame(cpu, more);  // the burst's last frame: the doorbell at this Cpu's next pending work
  return NetdevTx::OK;
}

// ---- up, down, the runner's check

int xdp_open(NetDevice& dev) {
  XdpPriv& s = priv(dev);
  s.error.clear();
  s.error_reported = false;
  Cpu* cpu = Cpu::current();
  std::string err;
  if (s.cfg.link.empty()) err = "needs \"link IF\" (the kernel interface to use)";
  else if (!cpu) err = "needs a Cpu bound to the thread that sets it up";
  else if (cpu->pool().buf_size() < kChunk)
    err = "receives into the packet pool's buffers, which must hold a " + std::to_string(kChunk) +
          "-byte UMEM chunk (XDP_PACKET_HEADROOM " + std::to_string(kXdpHeadroom) + " + the frame); this pool's are " +
          std::to_string(cpu->pool().buf_size());
  if (cpu) s.pool = &cpu->pool();
  if (!err.empty() || !host_socket::in_netns(s.cfg.netns, err, [&] { return open_queues(s, err); })) {
    s.fail(err);
    close_all(s);
    return -1;
  }
  dev.set_mtu(s.link_mtu);
  s.napi.cpu = dev.napi_cpu(cpu);
  s.rx_running = true;
  std::vector<int> fds;
  for (uint32_t i = 0; i < s.nq; ++i) fds.push_back(s.q[i].fd);
  if (!s.irq.start(s.napi, std::move(fds), err)) {
    s.rx_running = false;
    s.fail(err);
    close_all(s);
    return -1;
  }
  return 0;
}

// mirrors ndo_stop with napi_disable (afp_stop's order): the interrupt thread ends, a
// scheduled poll runs out, frames left on the rx rings count as rx_dropped, doorbells
// due run, what is produced goes out, the sockets close.
void xdp_stop(NetDevice& dev) {
  XdpPriv& s = priv(dev);
  s.irq.stop();
  s.rx_running = false;
  napi_wait_idle(s.napi);
  if (Cpu* cpu = Cpu::current()) {
    read_kernel_drops(s, *cpu);
    uint64_t left = 0;
    for (uint32_t i = 0; i < s.nq; ++i) {
      uint32_t idx = 0;
      left += xsk_ring_cons__peek(&s.q[i].rx, kRing, &idx);
    }
    dev.stats(*cpu).rx_dropped.add(left);
  }
  host_socket::wait_doorbells(s.q.get(), s.nq);
  for (uint32_t i = 0; i < s.nq; ++i) s.q[i].ring();
  close_all(s);
}

bool xdp_busy(NetDevice& dev, Cpu& cpu, std::string& err) {
  XdpPriv& s = priv(dev);
  if (s.nq) read_kernel_drops(s, cpu);
  for (uint32_t i = 0; i < s.nq; ++i)
    if (const int e = s.q[i].take_error()) s.fail("link " + s.cfg.link + ": send: " + errno_text(e));
  if (!s.error.empty() && !s.error_reported) {
    err = s.error;
    s.error_reported = true;
  }
  return false;
}

XdpConfig& config(NetDevice& dev) { return priv(dev).cfg; }

void xdp_setup(NetDevice& dev) {
  auto s = std::make_unique<XdpPriv>();
  s->dev = &dev;
  s->napi.poll = xdp_poll;
  s->napi.ctx = s.get();
  dev.set_priv(std::move(s));
}

const NetDeviceOps xdp_ops = {
    .open = xdp_open,
    .stop = xdp_stop,
    .start_xmit = xdp_xmit,
    .select_queue = nullptr,
};

#else  // built without libxdp/libbpf: the kind exists, its up says why it cannot work

struct XdpPriv final : DriverState {
  NetDevice* dev = nullptr;
  XdpConfig cfg;
};
XdpConfig& config(NetDevice& dev) { return static_cast<XdpPriv*>(dev.priv())->cfg; }

void xdp_setup(NetDevice& dev) {
  auto s = std::make_unique<XdpPriv>();
  s->dev = &dev;
  dev.set_priv(std::move(s));
}

int xdp_open(NetDevice&) { return -1; }
void xdp_stop(NetDevice&) {}
NetdevTx xdp_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue&) {
  dev.stats(cpu).tx_dropped.add();
  cpu.free_reason(p, DropReason::DEV_READY);
  return NetdevTx::OK;
}
bool xdp_busy(NetDevice& dev, Cpu&, std::string& err) {
  err = dev.name() + ": xdp: unavailable: pktpath was built without libxdp/libbpf (install libxdp-dev "
                     "libbpf-dev and configure again)";
  return false;
}

const NetDeviceOps xdp_ops = {
    .open = xdp_open,
    .stop = xdp_stop,
    .start_xmit = xdp_xmit,
    .select_queue = nullptr,
};

#endif

bool xdp_set_text_option(NetDevice& dev, std::string_view name, std::string_view value, std::string& err) {
  XdpConfig& c = config(dev);
  if (dev.is_up()) {
    err = "xdp: " + std::string(name) + " cannot change while the device is up";
    return false;
  }
  if (value.find(' ') != std::string_view::npos) {
    err = std::string(name) + ": one word expected, got \"" + std::string(value) + "\"";
    return false;
  }
  if (name == "mode") {
#if PKTPATH_HAVE_XDP
    if (value == "native") c.xdp_mode = XDP_FLAGS_DRV_MODE;
    else if (value == "generic") c.xdp_mode = XDP_FLAGS_SKB_MODE;
#else
    if (value == "native" || value == "generic") c.xdp_mode = 1;
#endif
    else {
      err = "mode: expected native or generic, got \"" + std::string(value) + "\"";
      return false;
    }
    return true;
  }
  if ((name == "link" && value.size() >= kIfNameSize) || value.find('/') != std::string_view::npos) {
    err = std::string(name) + ": \"" + std::string(value) + "\" is not an interface or namespace name";
    return false;
  }
  (name == "link" ? c.link : c.netns) = value;
  return true;
}

void xdp_set_option(NetDevice& dev, std::string_view name, uint64_t value) {
  XdpConfig& c = config(dev);
  if (name == "queues") c.queues = static_cast<uint32_t>(value);
  else if (name == "zerocopy") c.zerocopy = value != 0;
}

const LinkKind::Option xdp_options[] = {
    {"link", 0, LinkKind::kText},
    {"netns", 0, LinkKind::kText},
    {"queues", kMaxQueues, LinkKind::kNumber, 1},
    {"mode", 0, LinkKind::kText},
    {"zerocopy", 1, LinkKind::kFlag},
    {nullptr, 0},
};

// No queue of its own (the tx ring is the queue), not LLTX: the tx queue's lock orders
// the writers of its socket's tx ring and completion ring.
const LinkKindRegistrar kXdp{{.kind = "xdp",
                              .ops = &xdp_ops,
                              .flags = IFF_NO_QUEUE,
                              .setup = xdp_setup,
                              .options = xdp_options,
                              .set_option = xdp_set_option,
                              .dellink = nullptr,
                              .set_text_option = xdp_set_text_option,
                              .busy = xdp_busy,
                              .touches_host = true,
                              .threaded_napi = true}};

}  // namespace
}  // namespace pktpath
