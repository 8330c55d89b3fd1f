// afpacket: a Linux interface as a pktpath device, through AF_PACKET sockets
// (net/packet/af_packet.c on the other side).
//
//   ip link add dev D type afpacket link IF [netns NAME] [fanout N] [qdisc_bypass on|off]
//                                  [ring v3|v2] [block_timeout MS]  (a V3 ring's; V2 has none)
//
// Receive: `fanout N` sockets (default 1) bound to IF, joined by PACKET_FANOUT_HASH when
// N > 1, each with a ring and PACKET_IGNORE_OUTGOING (what the kernel sends out of IF,
// our own transmits among it, is not seen again). The ring is TPACKET_V3 (blocks that
// the kernel hands over when full or after `block_timeout` ms) or, with `ring v2`,
// TPACKET_V2 (one slot per frame, handed over at once: no block timeout to wait for).
// One NAPI instance on the Cpu of the thread that sets the device up (the control
// thread in `pktpath run`) walks the rings' ready frames up to its budget and hands each
// frame to netif_receive_skb.
// The interrupt is a thread of the device that sleeps in poll() on the sockets; when a
// block is ready it schedules the instance and waits until the poll completes it
// (napi_complete_done re-arms it, as a driver re-enables its interrupt).
//
// Transmit: one socket per tx queue with a TPACKET_V3 tx ring. A frame is copied into
// the next free slot and marked for sending; the ring's doorbell (one sendto, which
// makes the kernel send every marked slot) rings when the ring is full, or once per
// burst: the last frame of a burst (no xmit_more) schedules the doorbell as work on the
// sending Cpu, so frames sent one by one go out together at that Cpu's next run of its
// pending work. PACKET_QDISC_BYPASS (default on) hands frames straight to IF's driver.
//
// `netns NAME` opens the sockets from a thread that entered /var/run/netns/NAME (what
// `ip netns add NAME` makes); the sockets then work from any thread. MTU follows IF at
// each up; IF down refuses the up. The kernel's own drops (tp_drops: the ring was full)
// count as rx.dropped.
#include "core/dev_rx.h"
#include "core/link_kind.h"
#include "drivers/host_socket.h"

// After pktpath's headers: <linux/if_packet.h> defines PACKET_HOST and its kin as
// macros, which are enumerators in core/packet.h.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace pktpath {

namespace {

constexpr uint32_t kMaxFanout = 64;
constexpr uint32_t kRxBlockSize = 1u << 16;  // 64 KiB blocks
constexpr uint32_t kRxBlocks = 64;           // 4 MiB of ring per receive socket
constexpr uint32_t kRxFrameSize = 2048;      // TPACKET_V2's least slot; sizes tp_frame_nr for V3
constexpr uint32_t kRxBlockTimeoutMs = 1;    // by default a part-filled block retires after this
constexpr uint32_t kMaxBlockTimeoutMs = 1000;
constexpr uint32_t kTxFrames = 512;
// Where a tx frame's bytes start: after the aligned tpacket3_hdr (tpacket_parse_header
// without PACKET_TX_HAS_OFF: tp_hdrlen - sizeof(struct sockaddr_ll)).
constexpr uint32_t kTxDataOff = TPACKET_ALIGN(sizeof(tpacket3_hdr));

std::string errno_text(int e) { return std::strerror(e); }

struct AfpPriv;

// One receive socket and its mapped ring; the position is the polling Cpu's.
struct RxRing {
  int fd = -1;
  uint8_t* map = nullptr;
  // TPACKET_V3
  uint32_t block = 0;              // the block being read or next to become ready
  uint32_t left = 0;               // frames of `block` not yet read (0: not started)
  const tpacket3_hdr* pkt = nullptr;
  tpacket_block_desc* desc(uint32_t i) const {
    return reinterpret_cast<tpacket_block_desc*>(map + static_cast<size_t>(i) * kRxBlockSize);
  }
  // TPACKET_V2: slots of frame_size bytes, contiguous (a block holds a whole number)
  uint32_t frame_size = 0, frames = 0;
  uint32_t head = 0;               // the next slot to read
  tpacket2_hdr* slot(uint32_t i) const {
    return reinterpret_cast<tpacket2_hdr*>(map + static_cast<size_t>(i) * frame_size);
  }
};

// Whether the interface an AF_PACKET socket is bound to was unregistered: the kernel
// sets the socket's ifindex to -1 then (packet_notifier on NETDEV_UNREGISTER).
bool bound_link_gone(int fd) {
  sockaddr_ll a{};
  socklen_t l = sizeof a;
  return fd >= 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l) == 0 && a.sll_ifindex <= 0;
}

// One transmit socket and its ring; head is advanced under the tx queue's xmit lock.
// Its doorbell (host_socket::Doorbell) is one sendto: the kernel sends every marked
// slot (tpacket_snd) before it returns.
struct TxRing final : host_socket::Doorbell {
  int fd = -1;
  uint8_t* map = nullptr;
  uint32_t frame_size = 0;
  uint32_t head = 0;
  tpacket3_hdr* frame(uint32_t i) const {
    return reinterpret_cast<tpacket3_hdr*>(map + static_cast<size_t>(i) * frame_size);
  }
  NetDevice* dev = nullptr;
  void send(uint32_t) override {
    if (PP_UNLIKELY(::sendto(fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0) < 0) && errno != EAGAIN) {
      fail(errno);
      // The link was deleted under the device: no carrier, so senders stop at once.
      if (bound_link_gone(fd)) dev->set_carrier(false);
    }
  }
};

struct AfpPriv final : DriverState {
  NetDevice* dev = nullptr;
  // Configuration (while down).
  std::string link, netns;
  uint32_t fanout = 1;
  bool qdisc_bypass = true;
  int rx_version = TPACKET_V3;
  uint32_t block_timeout_ms = kRxBlockTimeoutMs;

  // Up: opened by afp_open, closed by afp_stop.
  std::vector<RxRing> rx;
  std::unique_ptr<TxRing[]> tx;
  uint16_t ntx = 0;
  uint32_t link_mtu = 1500;
  size_t rx_map_len = 0, tx_map_len = 0;

  // Receive: the instance and its interrupt thread.
  Napi napi;
  host_socket::RxIrq irq;
  std::atomic<bool> rx_running{false};  // set by the control thread, read by the poll

  // The first failure, reported once through busy().
  std::string error;
  bool error_reported = false;

  ~AfpPriv() override { close_all(); }
  void fail(std::string msg) {
    if (error.empty()) error = dev->name() + ": " + std::move(msg);
  }
  void close_all() {
    for (RxRing& r : rx) {
      if (r.map) ::munmap(r.map, rx_map_len);
      if (r.fd >= 0) ::close(r.fd);
    }
    rx.clear();
    for (uint16_t i = 0; tx && i < ntx; ++i) {
      if (tx[i].map) ::munmap(tx[i].map, tx_map_len);
      if (tx[i].fd >= 0) ::close(tx[i].fd);
    }
    tx.reset();
    ntx = 0;
  }
};

AfpPriv& priv(const NetDevice& dev) { return *static_cast<AfpPriv*>(dev.priv()); }

// ---- opening the sockets (in IF's namespace)

// A packet socket, or -1 with err; EPERM/EACCES say what capability is missing.
int packet_socket(std::string& err) {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno == EPERM || errno == EACCES
              ? "opening an AF_PACKET socket needs CAP_NET_RAW (run as root, or grant the binary "
                "cap_net_raw: setcap cap_net_raw+ep)"
              : "socket(AF_PACKET): " + errno_text(errno);
  }
  return fd;
}

bool sockopt(int fd, int name, int val, const char* what, std::string& err) {
  if (::setsockopt(fd, SOL_PACKET, name, &val, sizeof val) == 0) return true;
  err = std::string(what) + ": " + errno_text(errno);
  return false;
}

bool bind_to(int fd, int ifindex, uint16_t proto, std::string& err) {
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_protocol = htons(proto);
  a.sll_ifindex = ifindex;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return true;
  err = "bind to the interface: " + errno_text(errno);
  return false;
}

// A ring of `req` (tpacket_req3 for TPACKET_V3; for TPACKET_V2 its leading
// tpacket_req, `req_len` bytes) on fd (rx or tx), mapped; null with err.
uint8_t* map_ring(int fd, int which, const tpacket_req3& req, size_t& len, std::string& err,
                  socklen_t req_len = sizeof(tpacket_req3)) {
  if (::setsockopt(fd, SOL_PACKET, which, &req, req_len) != 0) {
    err = std::string(which == PACKET_RX_RING ? "PACKET_RX_RING" : "PACKET_TX_RING") + ": " + errno_text(errno);
    return nullptr;
  }
  len = static_cast<size_t>(req.tp_block_size) * req.tp_block_nr;
  void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (m == MAP_FAILED) {
    err = "mmap of the packet ring: " + errno_text(errno);
    return nullptr;
  }
  return static_cast<uint8_t*>(m);
}

// mirrors what packet_set_ring/fanout_add expect: the interface's index, MTU and state
// read (SIOCGIF*), then the receive sockets (ring, ignore outgoing, bind, fanout) and
// the transmit sockets (ring, qdisc bypass, bind with protocol 0: nothing received).
bool open_sockets(AfpPriv& s, std::string& err) {
  const int probe = packet_socket(err);
  if (probe < 0) return false;
  ifreq ifr{};
  if (s.link.size() >= IFNAMSIZ) {
    ::close(probe);
    err = "link " + s.link + ": interface names are at most " + std::to_string(IFNAMSIZ - 1) + " bytes";
    return false;
  }
  std::memcpy(ifr.ifr_name, s.link.data(), s.link.size());
  const std::string where = s.netns.empty() ? "" : " in netns " + s.netns;
  if (::ioctl(probe, SIOCGIFINDEX, &ifr) != 0) {
    ::close(probe);
    err = "link " + s.link + ": no such interface" + where;
    return false;
  }
  const int ifindex = ifr.ifr_ifindex;
  const bool mtu_ok = ::ioctl(probe, SIOCGIFMTU, &ifr) == 0;
  s.link_mtu = mtu_ok ? static_cast<uint32_t>(ifr.ifr_mtu) : 1500;
  const bool flags_ok = ::ioctl(probe, SIOCGIFFLAGS, &ifr) == 0;
  ::close(probe);
  if (flags_ok && !(ifr.ifr_flags & IFF_UP)) {
    err = "link " + s.link + where + " is down (ip link set dev " + s.link + " up)";
    return false;
  }

  // TPACKET_V3: blocks of variable-sized frames. TPACKET_V2: the same 4 MiB as slots
  // that hold the header, the sockaddr_ll and a frame of the MTU (tpacket_rcv's macoff).
  const bool v2 = s.rx_version == TPACKET_V2;
  uint32_t rx_frame = kRxFrameSize;
  while (v2 && rx_frame < TPACKET_ALIGN(TPACKET2_HDRLEN) + 16 + s.link_mtu + 18) rx_frame <<= 1;
  tpacket_req3 rreq{};
  rreq.tp_block_size = std::max(kRxBlockSize, rx_frame);
  rreq.tp_block_nr = kRxBlocks * kRxBlockSize / rreq.tp_block_size;
  rreq.tp_frame_size = rx_frame;
  rreq.tp_frame_nr = rreq.tp_block_size / rx_frame * rreq.tp_block_nr;
  rreq.tp_retire_blk_tov = s.block_timeout_ms;
  s.rx.resize(s.fanout);
  int group = -1;
  for (RxRing& r : s.rx) {
    if ((r.fd = packet_socket(err)) < 0) return false;
    if (!sockopt(r.fd, PACKET_VERSION, s.rx_version, "PACKET_VERSION", err)) return false;
    if (!(r.map = map_ring(r.fd, PACKET_RX_RING, rreq, s.rx_map_len, err, v2 ? sizeof(tpacket_req) : sizeof rreq)))
      return false;
    r.frame_size = rx_frame;
    r.frames = rreq.tp_frame_nr;
    if (!sockopt(r.fd, PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING", err)) return false;
    if (!bind_to(r.fd, ifindex, ETH_P_ALL, err)) return false;
    if (s.fanout < 2) continue;
    // The first socket makes a group with an id of the kernel's choosing; the rest join it.
    const int val = group < 0 ? (PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_UNIQUEID) << 16
                              : group | (PACKET_FANOUT_HASH << 16);
    if (!sockopt(r.fd, PACKET_FANOUT, val, "PACKET_FANOUT", err)) return false;
    if (group < 0) {
      int got = 0;
      socklen_t len = sizeof got;
      if (::getsockopt(r.fd, SOL_PACKET, PACKET_FANOUT, &got, &len) != 0) {
        err = "PACKET_FANOUT: " + errno_text(errno);
        return false;
      }
      group = got & 0xffff;
    }
  }

  // A slot holds the header and a frame of the MTU with an Ethernet and a VLAN header.
  uint32_t frame = 2048;
  while (frame < kTxDataOff + s.link_mtu + 18) frame <<= 1;
  tpacket_req3 treq{};
  treq.tp_block_size = std::max<uint32_t>(frame, 1u << 16);
  treq.tp_frame_size = frame;
  treq.tp_frame_nr = kTxFrames;
  treq.tp_block_nr = kTxFrames / (treq.tp_block_size / frame);
  s.ntx = s.dev->num_tx_queues();
  s.tx = std::make_unique<TxRing[]>(s.ntx);
  for (uint16_t i = 0; i < s.ntx; ++i) {
    TxRing& t = s.tx[i];
    t.dev = s.dev;
    t.frame_size = frame;
    if ((t.fd = packet_socket(err)) < 0) return false;
    if (!sockopt(t.fd, PACKET_VERSION, TPACKET_V3, "PACKET_VERSION", err)) return false;
    if (!sockopt(t.fd, PACKET_QDISC_BYPASS, s.qdisc_bypass ? 1 : 0, "PACKET_QDISC_BYPASS", err)) return false;
    if (!(t.map = map_ring(t.fd, PACKET_TX_RING, treq, s.tx_map_len, err))) return false;
    if (!bind_to(t.fd, ifindex, 0, err)) return false;
  }
  return true;
}

// ---- receive

// One frame of a ring into a packet of `cpu` and up the stack (the VLAN tag the kernel
// took out, tp_vlan_tci, put back in); runt, oversized or unallocatable frames count as
// rx_dropped.
// The VLAN fields where each ring version keeps them.
uint16_t vlan_tci(const tpacket3_hdr* h) { return h->hv1.tp_vlan_tci; }
uint16_t vlan_tpid(const tpacket3_hdr* h) { return h->hv1.tp_vlan_tpid; }
uint16_t vlan_tci(const tpacket2_hdr* h) { return h->tp_vlan_tci; }
uint16_t vlan_tpid(const tpacket2_hdr* h) { return h->tp_vlan_tpid; }

template <class Hdr>
void deliver(AfpPriv& s, Cpu& cpu, const Hdr* h) {
  NetDevice& dev = *s.dev;
  const uint8_t* data = reinterpret_cast<const uint8_t*>(h) + h->tp_mac;
  const uint32_t n = h->tp_snaplen;
  const bool vlan = (h->tp_status & TP_STATUS_VLAN_VALID) && n >= 12;
  const uint32_t len = n + (vlan ? 4 : 0);
  DropReason why = DropReason::NOT_SPECIFIED;
  Packet* p = nullptr;
  if (PP_UNLIKELY(n < 14)) why = DropReason::PKT_TOO_SMALL;
  else if (PP_UNLIKELY(len > dev.mtu() + 18 || n < h->tp_len)) why = DropReason::PKT_TOO_BIG;  // or cut to its slot
  else if (PP_UNLIKELY(!(p = cpu.alloc()))) why = DropReason::NOMEM;
  if (PP_LIKELY(p)) {
    if (uint8_t* d = p->put(len); PP_LIKELY(d != nullptr)) {
      if (PP_LIKELY(!vlan)) {
        std::memcpy(d, data, n);
      } else {
        const uint16_t tpid = vlan_tpid(h) ? vlan_tpid(h) : ETHERTYPE_VLAN;
        const uint16_t tci = vlan_tci(h);
        const uint8_t tag[4] = {uint8_t(tpid >> 8), uint8_t(tpid), uint8_t(tci >> 8), uint8_t(tci)};
        std::memcpy(d, data, 12);
        std::memcpy(d + 12, tag, 4);
        std::memcpy(d + 16, data + 12, n - 12);
      }
      eth_type_trans(*p, dev);
      dev_sw_netstats_rx_add(cpu, dev, p->len);
      netif_receive_skb(cpu, p);
      return;
    }
    why = DropReason::PKT_TOO_BIG;  // larger than the pool's buffers
  }
  dev.stats(cpu).rx_dropped.add();
  if (p) cpu.free_reason(p, why);
  else cpu.stats().drops[static_cast<unsigned>(why)].add();
}

// Up to `budget` frames of one ring; true when it ran dry first.
bool poll_ring(AfpPriv& s, RxRing& r, Cpu& cpu, int budget, int& done) {
  while (done < budget) {
    if (r.left == 0) {
      tpacket_block_desc* b = r.desc(r.block);
      if (r.pkt) {  // the block is read: back to the kernel
        __atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        r.pkt = nullptr;
        r.block = (r.block + 1) % kRxBlocks;
        continue;
      }
      if (!(__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) return true;
      r.left = b->hdr.bh1.num_pkts;
      r.pkt = reinterpret_cast<const tpacket3_hdr*>(reinterpret_cast<uint8_t*>(b) + b->hdr.bh1.offset_to_first_pkt);
      if (r.left == 0) continue;
    }
    deliver(s, cpu, r.pkt);
    ++done;
    if (--r.left) r.pkt = reinterpret_cast<const tpacket3_hdr*>(reinterpret_cast<const uint8_t*>(r.pkt) + r.pkt->tp_next_offset);
  }
  return false;
}

// TPACKET_V2: up to `budget` frames of one ring, each slot back to the kernel once read;
// true when it ran dry first.
bool poll_ring_v2(AfpPriv& s, RxRing& r, Cpu& cpu, int budget, int& done) {
  while (done < budget) {
    tpacket2_hdr* h = r.slot(r.head);
    if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) return true;
    deliver(s, cpu, h);
    __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    r.head = r.head + 1 == r.frames ? 0 : r.head + 1;
    ++done;
  }
  return false;
}

// The NAPI poll: the rings in turn, up to the budget. All dry: complete, and re-arm the
// interrupt thread.
int afp_poll(Napi& n, Cpu& cpu, int budget) {
  AfpPriv& s = *static_cast<AfpPriv*>(n.ctx);
  int done = 0;
  bool dry = true;
  if (s.rx_running) {
    if (s.rx_version == TPACKET_V2)
      for (RxRing& r : s.rx) dry = poll_ring_v2(s, r, cpu, budget, done) && dry;
    else
      for (RxRing& r : s.rx) dry = poll_ring(s, r, cpu, budget, done) && dry;
  }
  if (dry && done < budget) {
    napi_complete_done(n, done);
    s.irq.complete();
  }
  return done;
}

// The kernel's drops since the last read (PACKET_STATISTICS resets them) into rx_dropped;
// TPACKET_V2 sockets fill the leading tpacket_stats of the v3 struct.
void read_kernel_drops(AfpPriv& s, Cpu& cpu) {
  for (RxRing& r : s.rx) {
    tpacket_stats_v3 st{};
    socklen_t len = sizeof st;
    if (::getsockopt(r.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0 && st.tp_drops)
      s.dev->stats(cpu).rx_dropped.add(st.tp_drops);
  }
}

// ---- transmit

NetdevTx afp_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue& txq) {
  AfpPriv& s = priv(dev);
  const uint16_t qi = static_cast<uint16_t>(&txq - &dev.txq(0));
  DropReason why = DropReason::NOT_SPECIFIED;
  if (PP_UNLIKELY(qi >= s.ntx)) why = DropReason::DEV_READY;
  else if (PP_UNLIKELY(p->len < 14)) why = DropReason::PKT_TOO_SMALL;
  else if (PP_UNLIKELY(p->len > s.link_mtu + 18 || p->len > s.tx[qi].frame_size - kTxDataOff)) why = DropReason::PKT_TOO_BIG;
  if (PP_UNLIKELY(why != DropReason::NOT_SPECIFIED)) {
    dev.stats(cpu).tx_dropped.add();
    cpu.free_reason(p, why);
    return NetdevTx::OK;
  }
  TxRing& r = s.tx[qi];
  tpacket3_hdr* h = r.frame(r.head);
  if (PP_UNLIKELY(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE)) {
    r.ring();  // full: send what is marked now
    if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) return NetdevTx::BUSY;
  }
  uint8_t* d = reinterpret_cast<uint8_t*>(h) + kTxDataOff;
  const uint32_t len = p->len;
  if (PP_LIKELY(len <= p->headlen())) std::memcpy(d, p->data(), len);
  else p->copy_bits(0, d, len);
  h->tp_len = len;
  h->tp_snaplen = len;
  h->tp_next_offset = 0;
  __atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
  r.head = r.head + 1 == kTxFrames ? 0 : r.head + 1;
  r.mark();
  DevCpuStats& st = dev.stats(cpu);
  st.tx_packets.add();
  st.tx_bytes.add(len);
  const bool more = p->xmit_more;
  cpu.free(p);
  r.after_frame(cpu, more);  // the burst's last frame: the doorbell at this Cpu's next pending work
  return NetdevTx::OK;
}

// ---- up, down, the runner's check

int afp_open(NetDevice& dev) {
  AfpPriv& s = priv(dev);
  s.error.clear();
  s.error_reported = false;
  Cpu* cpu = Cpu::current();
  std::string err;
  if (s.link.empty()) err = "needs \"link IF\" (the kernel interface to use)";
  else if (!cpu) err = "needs a Cpu bound to the thread that sets it up";
  if (!err.empty() || !host_socket::in_netns(s.netns, err, [&] { return open_sockets(s, err); })) {
    s.fail(err);
    s.close_all();
    return -1;
  }
  dev.set_mtu(s.link_mtu);
  dev.set_carrier(true);
  s.napi.cpu = dev.napi_cpu(cpu);
  s.rx_running = true;
  std::vector<int> fds;
  for (const RxRing& r : s.rx) fds.push_back(r.fd);
  if (!s.irq.start(s.napi, std::move(fds), err)) {
    s.rx_running = false;
    s.fail(err);
    s.close_all();
    return -1;
  }
  return 0;
}

// mirrors ndo_stop with napi_disable: the interrupt thread ends, a scheduled poll runs
// out on the polling Cpu, frames left in the rings count as rx_dropped (closing the
// socket drops them), the sockets close.
void afp_stop(NetDevice& dev) {
  AfpPriv& s = priv(dev);
  s.irq.stop();
  s.rx_running = false;
  napi_wait_idle(s.napi);
  if (Cpu* cpu = Cpu::current()) {
    read_kernel_drops(s, *cpu);
    uint64_t left = 0;
    for (RxRing& r : s.rx)
      if (s.rx_version == TPACKET_V2) {
        for (uint32_t i = 0; i < r.frames; ++i) {
          const tpacket2_hdr* h = r.slot((r.head + i) % r.frames);
          if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
          ++left;
        }
      } else {
        for (uint32_t i = 0; i < kRxBlocks; ++i) {
          const tpacket_block_desc* b = r.desc((r.block + i) % kRxBlocks);
          if (!(__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
          left += i == 0 && r.pkt ? r.left : b->hdr.bh1.num_pkts;
        }
      }
    dev.stats(*cpu).rx_dropped.add(left);
  }
  // A doorbell still on some Cpu's work list must run before its ring goes; what is
  // marked but not yet sent goes out before the sockets close.
  host_socket::wait_doorbells(s.tx.get(), s.ntx);
  for (uint16_t i = 0; i < s.ntx; ++i) s.tx[i].ring();
  s.close_all();
}

// The lower interface's link state onto the device's carrier, read between lines (the
// kernel's linkwatch does it on NETDEV_CHANGE): IF set down or without carrier in the
// kernel is no carrier here (`ip link show` NO-CARRIER, pktgen stops); back up, carrier.
void follow_link_state(AfpPriv& s, NetDevice& dev, int probe) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, s.link.data(), std::min(s.link.size(), sizeof ifr.ifr_name - 1));
  if (::ioctl(probe, SIOCGIFFLAGS, &ifr) != 0) return;  // gone: the vanished-link path says so
  const bool running = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
  if (running != dev.carrier_ok()) dev.set_carrier(running);
}

bool afp_busy(NetDevice& dev, Cpu& cpu, std::string& err) {
  AfpPriv& s = priv(dev);
  if (!s.rx.empty()) read_kernel_drops(s, cpu);
  int tx_error = 0;
  for (uint16_t i = 0; i < s.ntx; ++i)
    if (const int e = s.tx[i].take_error()) tx_error = e;
  // mirrors NETDEV_UNREGISTER of the lower interface: a vanished link is the one message,
  // the device loses its carrier and the runner takes it down.
  const int probe = s.ntx ? s.tx[0].fd : s.rx.empty() ? -1 : s.rx[0].fd;
  if ((tx_error || s.irq.saw_error()) && bound_link_gone(probe)) {
    dev.set_carrier(false);
    s.fail("link " + s.link + (s.netns.empty() ? "" : " in netns " + s.netns) +
           " vanished (deleted in the kernel): no carrier, the device goes down");
  } else if (tx_error) {
    s.fail("link " + s.link + ": send: " + errno_text(tx_error));
  } else if (probe >= 0) {
    follow_link_state(s, dev, probe);
  }
  if (!s.error.empty() && !s.error_reported) {
    err = s.error;
    s.error_reported = true;
  }
  return false;  // receive runs on its own: nothing to wait for
}

bool afp_set_text_option(NetDevice& dev, std::string_view name, std::string_view value, std::string& err) {
  AfpPriv& s = priv(dev);
  if (dev.is_up()) {
    err = "afpacket: " + std::string(name) + " cannot change while the device is up";
    return false;
  }
  if (value.find(' ') != std::string_view::npos) {
    err = std::string(name) + ": one word expected, got \"" + std::string(value) + "\"";
    return false;
  }
  if (name == "qdisc_bypass") {
    if (value != "on" && value != "off") {
      err = "qdisc_bypass: expected on or off, got \"" + std::string(value) + "\"";
      return false;
    }
    s.qdisc_bypass = value == "on";
    return true;
  }
  if (name == "ring") {
    if (value != "v3" && value != "v2") {
      err = "ring: expected v3 or v2, got \"" + std::string(value) + "\"";
      return false;
    }
    s.rx_version = value == "v2" ? TPACKET_V2 : TPACKET_V3;
    return true;
  }
  if ((name == "link" && value.size() >= IFNAMSIZ) || value.find('/') != std::string_view::npos) {
    err = std::string(name) + ": \"" + std::string(value) + "\" is not an interface or namespace name";
    return false;
  }
  (name == "link" ? s.link : s.netns) = value;
  return true;
}

void afp_set_option(NetDevice& dev, std::string_view name, uint64_t value) {
  if (name == "fanout") priv(dev).fanout = value ? static_cast<uint32_t>(value) : 1;
  if (name == "block_timeout") priv(dev).block_timeout_ms = static_cast<uint32_t>(value);
}

void afp_setup(NetDevice& dev) {
  auto s = std::make_unique<AfpPriv>();
  s->dev = &dev;
  s->napi.poll = afp_poll;
  s->napi.ctx = s.get();
  dev.set_priv(std::move(s));
}

const NetDeviceOps afp_ops = {
    .open = afp_open,
    .stop = afp_stop,
    .start_xmit = afp_xmit,
    .select_queue = nullptr,
};

const LinkKind::Option afp_options[] = {
    {"link", 0, LinkKind::kText},
    {"netns", 0, LinkKind::kText},
    {"fanout", kMaxFanout},
    {"qdisc_bypass", 0, LinkKind::kText},
    {"ring", 0, LinkKind::kText},
    {"block_timeout", kMaxBlockTimeoutMs, LinkKind::kNumber, 1},
    {nullptr, 0},
};

// No queue of its own (the tx ring is the queue), not LLTX: the tx queue's lock orders
// the writers of its ring.
const LinkKindRegistrar kAfpacket{{.kind = "afpacket",
                                   .ops = &afp_ops,
                                   .flags = IFF_NO_QUEUE,
                                   .setup = afp_setup,
                                   .options = afp_options,
                                   .set_option = afp_set_option,
                                   .dellink = nullptr,
                                   .set_text_option = afp_set_text_option,
                                   .busy = afp_busy,
                                   .touches_host = true,
                              .threaded_napi = true}};

}  // namespace
}  // namespace pktpath
