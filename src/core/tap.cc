// Packet taps (net/core/dev.c ptype_all delivery, net/packet/af_packet.c packet_rcv).
#include "core/tap.h"

#include <pcap/pcap.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "core/bpf_engine.h"
#include "core/bpf_view.h"
#include "core/dev_table.h"
#include "core/net.h"
#include "core/rcu.h"

namespace pktpath {

inline constexpr uint64_t kTapWriteBuffer = 64 * 1024;  // -w: bytes buffered per file

// Writer-side access to Tap's private parts (attach, reload, detach live here only).
struct TapAccess {
  static std::shared_ptr<Tap> make() { return std::shared_ptr<Tap>(new Tap()); }
  static Tap& mut(const std::shared_ptr<Tap>& t) { return *t; }
  // The tap itself: filter loaded on `net`'s engine, file opened; not yet published.
  // Called with the Net's tap mutex held (the engine cannot change meanwhile).
  static std::shared_ptr<Tap> build(Net& net, TapSpec& spec, std::string* err);
};

namespace {

constexpr uint8_t kPacketOutgoing = 4;  // PACKET_OUTGOING (if_packet.h)

constexpr uint32_t kEthHeaderLen = 14;

void tap_netdev_event(void* priv, NetdevEvent ev, NetDevice& dev);

// Per-Net writer side: the lock, the attached taps per device in attach order, and the
// taps on every device (the Net's ptype_all), which each device's list ends with.
struct TapNet final : PernetState {
  std::mutex mu;
  std::map<NetDevice*, std::vector<std::shared_ptr<Tap>>> attached;
  std::vector<std::shared_ptr<Tap>> all;
  std::once_flag subscribe_once;
  NetdevSubscription sub;  // NETDEV_UP: a device that comes up gets the `all` taps
};

const PernetRegistrar tap_pernet{{"taps", [](Net&) -> std::unique_ptr<PernetState> {
                                    return std::make_unique<TapNet>();
                                  }}};

TapNet& tap_net(Net& net) { return net.generic<TapNet>(tap_pernet.id); }

// Publish the device's current tap set, wait for readers, free the old set.
// Called with the Net's tap mutex held.
void publish(TapNet& tn, NetDevice& dev) {
  std::unique_ptr<const TapList> fresh;
  auto it = tn.attached.find(&dev);
  const bool own = it != tn.attached.end() && !it->second.empty();
  if (own || !tn.all.empty()) {
    auto l = std::make_unique<TapList>();
    if (own)
      for (const auto& t : it->second) l->taps.push_back(t.get());
    for (const auto& t : tn.all) l->taps.push_back(t.get());
    fresh = std::move(l);
  }
  rcu_replace(dev.taps_head(), std::move(fresh));
}

void tap_netdev_event(void* priv, NetdevEvent ev, NetDevice& dev) {
  if (ev != NetdevEvent::UP) return;
  auto& tn = *static_cast<TapNet*>(priv);
  RcuWriterScope rcu_scope;
  std::lock_guard g(tn.mu);
  if (!tn.all.empty()) publish(tn, dev);
}

// libpcap's fix_program/fix_offset for a cooked (DLT_LINUX_SLL) filter that the kernel
// runs on a SOCK_DGRAM socket, whose data starts at the network header: packet offsets
// past the 16-byte cooked header move down by 16, the packet type (0) and protocol (14)
// fields become ancillary loads. Any other offset inside the header cannot be done in
// the kernel (libpcap filters in userland then); false for those.
bool cook_filter(bpf::Insns& insns) {
  for (bpf::Insn& in : insns) {
    const uint16_t cls = bpf::bpf_class(in.code), mode = bpf::bpf_mode(in.code);
    if ((cls != BPF_LD && cls != BPF_LDX) || (mode != BPF_ABS && mode != BPF_IND && mode != BPF_MSH)) continue;
    if (bpf::in_ancillary_window(in.k)) continue;
    if (in.k >= kSllHeaderLen)
      in.k -= kSllHeaderLen;
    else if (in.k == 0)
      in.k = bpf::ancillary_k(SKF_AD_PKTTYPE);
    else if (in.k == 14)
      in.k = bpf::ancillary_k(SKF_AD_PROTOCOL);
    else if (static_cast<int32_t>(in.k) > 0)
      return false;
  }
  return true;
}

// The kernel's rules first (a packet socket's filter); a filter the kernel refuses runs
// under libpcap's userland rules instead, as libpcap filters in userland when
// SO_ATTACH_FILTER fails. Program::acceptance() tells which.
std::unique_ptr<const bpf::Program> load_program(const bpf::Insns& insns, const BpfLoadConfig& c,
                                                 std::string* err) {
  auto prog = bpf::Program::load(insns, c.engine, bpf::Acceptance::Kernel, c.jit, err);
  if (!prog) {
    std::string userland_err;
    prog = bpf::Program::load(insns, c.engine, bpf::Acceptance::Userland, c.jit, &userland_err);
    if (!prog) return nullptr;
  }
  return std::make_unique<const bpf::Program>(std::move(*prog));
}

// The tap's part of detaching once it is unpublished and no reader can hold it.
void finish(void*& pcap, void*& dumper) {
  if (dumper) {
    pcap_dump_close(static_cast<pcap_dumper_t*>(dumper));
    dumper = nullptr;
  }
  if (pcap) {
    pcap_close(static_cast<pcap_t*>(pcap));
    pcap = nullptr;
  }
}

}  // namespace

Tap::~Tap() {
  if (dumper_) pcap_dump_close(static_cast<pcap_dumper_t*>(dumper_));
  if (pcap_) pcap_close(static_cast<pcap_t*>(pcap_));
}

TapCounts Tap::counts() const {
  TapCounts c;
  for (unsigned i = 0; i < kMaxCpus; ++i) {
    c.seen += stats_[i].seen.get();
    c.received_by_filter += stats_[i].passed.get();
    c.captured += stats_[i].captured.get();
    c.dropped += stats_[i].dropped.get();
  }
  LockGuard g(write_lock_);
  c.captured -= lost_;
  c.dropped += lost_;
  c.write_errno = write_errno_;
  return c;
}

// Write out the file's buffer; on failure the packets in it are lost and the tap stops
// writing (every later packet counts as dropped).
bool Tap::flush_locked() const {
  auto* d = static_cast<pcap_dumper_t*>(dumper_);
  if (pcap_dump_flush(d) != 0 || ferror(pcap_dump_file(d))) {
    write_errno_ = errno ? errno : EIO;
    lost_ += pending_packets_;
    pending_packets_ = pending_bytes_ = 0;
    return false;
  }
  pending_packets_ = pending_bytes_ = 0;
  return true;
}

// One snapshot into the pcap file. The linear head is written in place; a packet whose
// snapshot reaches into fragments is gathered first (skb_copy_bits, as tpacket_rcv does).
// A cooked tap writes the 16-byte SLL header (packet type, ARPHRD_ETHER, the source
// address, the protocol) and the packet from its network header, gathered in copy_buf_.
bool Tap::write_pcap(const Packet& p, uint32_t snap, bool outgoing) const {
  pcap_pkthdr h;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);  // ktime_get_real_ts64; vDSO, not a syscall
  h.ts.tv_sec = ts.tv_sec;
  h.ts.tv_usec = static_cast<suseconds_t>(ts.tv_nsec / 1000);
  h.caplen = snap;
  h.len = p.len;
  LockGuard g(write_lock_);
  if (PP_UNLIKELY(write_errno_ != 0)) return false;
  const uint8_t* bytes = p.data();
  if (PP_UNLIKELY(spec_.linktype == kTapLinkCooked)) {
    const uint32_t net = std::min(p.len, kEthHeaderLen);
    h.len = p.len - net + kSllHeaderLen;
    h.caplen = snap = std::min(std::min(snap, p.len - net) + kSllHeaderLen, spec_.snaplen);
    uint8_t* c = copy_buf_.get();
    const uint16_t pkttype = outgoing ? 4 : p.pkt_type;  // PACKET_OUTGOING
    c[0] = static_cast<uint8_t>(pkttype >> 8);
    c[1] = static_cast<uint8_t>(pkttype);
    c[2] = 0, c[3] = 1;  // ARPHRD_ETHER
    c[4] = 0, c[5] = 6;  // address length
    std::memset(c + 6, 0, 8);
    if (net == kEthHeaderLen) p.copy_bits(6, c + 6, 6);  // the Ethernet source
    std::memcpy(c + 14, &p.protocol, 2);
    if (snap > kSllHeaderLen && !p.copy_bits(net, c + kSllHeaderLen, snap - kSllHeaderLen)) return false;
    bytes = c;
  } else if (snap > p.headlen()) {
    if (snap > copy_buf_len_ || !p.copy_bits(0, copy_buf_.get(), snap)) return false;
    bytes = copy_buf_.get();
  }
  const uint64_t rec = sizeof(uint32_t) * 4 + snap;  // the file's record header + data
  if (pending_bytes_ != 0 && pending_bytes_ + rec > kTapWriteBuffer && !flush_locked()) return false;
  // pcap_dump's record (sf-pcap.c: 32-bit seconds and microseconds, caplen, len, in this
  // machine's order), written with the stdio lock not taken: write_lock_ orders writers.
  std::FILE* f = pcap_dump_file(static_cast<pcap_dumper_t*>(dumper_));
  const uint32_t hdr[4] = {static_cast<uint32_t>(h.ts.tv_sec), static_cast<uint32_t>(h.ts.tv_usec), h.caplen, h.len};
  fwrite_unlocked(hdr, sizeof hdr, 1, f);
  fwrite_unlocked(bytes, h.caplen, 1, f);
  if (PP_UNLIKELY(ferror_unlocked(f))) {
    write_errno_ = errno ? errno : EIO;
    lost_ += pending_packets_;
    pending_packets_ = pending_bytes_ = 0;
    return false;
  }
  ++pending_packets_;
  pending_bytes_ += rec;
  if (PP_UNLIKELY(spec_.packet_buffered)) flush_locked();  // a failure counts its packet lost
  return true;
}

// mirrors packet_rcv: run_filter gives the snapshot length (0: not for this socket),
// clipped to the packet; then the packet is queued (here: written or counted), or
// counted as a drop when the consumer cannot take it.
void Tap::deliver(Cpu& cpu, const Packet& p, bool outgoing) const {
  // -Q: a packet of the other direction is not offered (PACKET_IGNORE_OUTGOING for -Q in).
  if (PP_UNLIKELY(!(static_cast<uint8_t>(spec_.direction) & (outgoing ? 2 : 1)))) return;
  TapCpuStats& s = stats_[cpu.id()];
  s.seen.add();
  uint32_t res = p.len;
  if (const bpf::Program* prog = prog_.load(std::memory_order_acquire)) {
    // The view holds only what the program reads (Program::view_needs), as cls_bpf does.
    const uint8_t needs = prog->view_needs();
    bpf::PacketView v;
    if (needs != bpf::kViewNeedsNothing) {
      bpf::view_fill_data(v, p, 14);
      if (PP_UNLIKELY(spec_.linktype == kTapLinkCooked)) {
        // SOCK_DGRAM: the program sees the packet from its network header.
        const uint32_t off = v.net_off;
        v.data += off;
        v.headlen -= off;
        v.len -= off;
        v.wire_len -= off;
        v.net_off = 0;
      }
      if (PP_UNLIKELY(needs & bpf::kViewNeedsMeta)) {
        bpf::DeviceInfo di;
        if (p.dev) di.ifindex = p.dev->ifindex();
        bpf::view_fill_meta(v, p, p.dev ? &di : nullptr, cpu.id());
        // dev_queue_xmit_nit marks its clone PACKET_OUTGOING.
        if (outgoing) v.meta.pkt_type = kPacketOutgoing;
      }
    }
    res = prog->run(v);
    if (res == 0) return;
  }
  s.passed.add();
  uint32_t snap = std::min(res, p.len);
  snap = std::min(snap, spec_.snaplen);  // cooked: of the network part (write_pcap)
  // -c N: tcpdump stops reading after N; here the tap stays attached and counts what
  // passes its filter afterwards as not captured (dropped), so passed = captured + dropped.
  if (spec_.count != 0 && claimed_.fetch_add(1, std::memory_order_relaxed) >= spec_.count) {
    s.dropped.add();
    return;
  }
  if (dumper_ && !write_pcap(p, snap, outgoing)) {
    s.dropped.add();
    return;
  }
  s.captured.add();
}

void dev_taps_deliver(Cpu& cpu, const Packet& p, const TapList& list, bool outgoing) {
  for (const Tap* t : list.taps) t->deliver(cpu, p, outgoing);
}

void dev_queue_xmit_nit(Cpu& cpu, const Packet& p, NetDevice& dev) {
  if (const TapList* taps = dev.taps()) dev_taps_deliver(cpu, p, *taps, true);
}

std::shared_ptr<Tap> TapAccess::build(Net& net, TapSpec& spec, std::string* err) {
  if (spec.snaplen == 0) spec.snaplen = kTapDefaultSnaplen;
  std::shared_ptr<Tap> t = TapAccess::make();
  Tap& m = TapAccess::mut(t);
  m.stats_ = std::make_unique<TapCpuStats[]>(kMaxCpus);
  const bool cooked = spec.linktype == kTapLinkCooked;
  if (!cooked && spec.linktype != kTapLinkEthernet) {
    if (err) *err = "link type " + std::to_string(spec.linktype) + " is not supported (EN10MB or LINUX_SLL)";
    return nullptr;
  }
  if (spec.has_filter) {
    bpf::Insns insns = spec.insns;
    if (cooked && !cook_filter(insns)) {
      if (err)
        *err = "the filter reads the cooked header beyond its packet type and protocol, which a "
               "tap on every device cannot run";
      return nullptr;
    }
    m.owned_ = load_program(insns, net_bpf_config(net), err);
    if (!m.owned_) return nullptr;
    m.prog_.store(m.owned_.get(), std::memory_order_release);
  }
  // The file last, so that a rejected filter leaves no empty file behind.
  if (!spec.pcap_path.empty()) {
    pcap_t* pc = pcap_open_dead(cooked ? DLT_LINUX_SLL : DLT_EN10MB, static_cast<int>(spec.snaplen));
    if (!pc) {
      if (err) *err = "pcap_open_dead failed";
      return nullptr;
    }
    m.pcap_ = pc;
    // Opened here with its buffer in place before libpcap writes the file header.
    std::FILE* f = nullptr;
    if (spec.pcap_path == "-") {
      // Standard output through a stream of its own, so that closing the file leaves
      // the process's stdout open.
      const int fd = dup(STDOUT_FILENO);
      f = fd >= 0 ? fdopen(fd, "w") : nullptr;
      if (!f && fd >= 0) close(fd);
    } else {
      f = std::fopen(spec.pcap_path.c_str(), "wb");
    }
    if (!f) {
      if (err) *err = "cannot write " + spec.pcap_path + ": " + spec.pcap_path + ": " + std::strerror(errno);
      return nullptr;  // ~Tap closes pc
    }
    // A buffer the tap flushes itself (flush_locked), so a failed write names its packets.
    m.write_buf_ = std::make_unique<char[]>(kTapWriteBuffer);
    std::setvbuf(f, m.write_buf_.get(), _IOFBF, kTapWriteBuffer);
    pcap_dumper_t* d = pcap_dump_fopen(pc, f);
    if (!d) {
      std::fclose(f);
      if (err) *err = std::string("cannot write ") + spec.pcap_path + ": " + pcap_geterr(pc);
      return nullptr;
    }
    m.dumper_ = d;
    m.pending_bytes_ = 24;  // the file header, still in the buffer
    m.copy_buf_len_ = std::min<uint32_t>(spec.snaplen, kTapDefaultSnaplen);
    m.copy_buf_ = std::make_unique<uint8_t[]>(m.copy_buf_len_ + (cooked ? kSllHeaderLen : 0));
  }
  m.spec_ = std::move(spec);
  return t;
}

std::shared_ptr<Tap> tap_attach(NetDevice& dev, TapSpec spec, std::string* err) {
  RcuWriterScope rcu_scope;
  TapNet& tn = tap_net(dev.net());
  std::lock_guard g(tn.mu);
  std::shared_ptr<Tap> t = TapAccess::build(dev.net(), spec, err);
  if (!t) return nullptr;
  TapAccess::mut(t).dev_ = &dev;
  tn.attached[&dev].push_back(t);
  publish(tn, dev);
  return t;
}

std::shared_ptr<Tap> tap_attach_all(Net& net, TapSpec spec, std::string* err) {
  TapNet& tn = tap_net(net);
  // Subscribed once per Net, outside tn.mu (the event handler takes the chain's mutex,
  // then tn.mu).
  std::call_once(tn.subscribe_once, [&] { tn.sub.subscribe(net.devices().notifier(), tap_netdev_event, &tn); });
  RcuWriterScope rcu_scope;
  std::lock_guard g(tn.mu);
  std::shared_ptr<Tap> t = TapAccess::build(net, spec, err);
  if (!t) return nullptr;
  TapAccess::mut(t).all_net_ = &net;
  tn.all.push_back(t);
  for (NetDevice* d : net.devices().list()) publish(tn, *d);
  return t;
}

TapCounts tap_detach(const std::shared_ptr<Tap>& tap) {
  if (!tap) return {};
  {
    RcuWriterScope rcu_scope;
    Tap& m = TapAccess::mut(tap);
    // m.dev_ changes only under its Net's tap mutex; the caller does not race a detach of
    // the same tap with the device's removal (control thread).
    if (NetDevice* dev = m.dev_) {
      TapNet& tn = tap_net(dev->net());
      std::lock_guard g(tn.mu);
      auto& v = tn.attached[dev];
      v.erase(std::remove(v.begin(), v.end(), tap), v.end());
      if (v.empty()) tn.attached.erase(dev);
      publish(tn, *dev);  // waits: no reader holds the tap any more
      m.dev_ = nullptr;
    } else if (Net* net = m.all_net_) {
      TapNet& tn = tap_net(*net);
      std::lock_guard g(tn.mu);
      tn.all.erase(std::remove(tn.all.begin(), tn.all.end(), tap), tn.all.end());
      for (NetDevice* d : net->devices().list()) publish(tn, *d);
      m.all_net_ = nullptr;
    }
    if (m.dumper_) {
      LockGuard wg(m.write_lock_);
      if (m.write_errno_ == 0) m.flush_locked();
    }
    finish(m.pcap_, m.dumper_);
  }
  return tap->counts();
}

std::vector<std::shared_ptr<Tap>> tap_list(NetDevice& dev) {
  TapNet& tn = tap_net(dev.net());
  std::lock_guard g(tn.mu);
  auto it = tn.attached.find(&dev);
  return it == tn.attached.end() ? std::vector<std::shared_ptr<Tap>>{} : it->second;
}

void tap_device_gone(NetDevice& dev) {
  TapNet& tn = tap_net(dev.net());
  std::lock_guard g(tn.mu);
  auto it = tn.attached.find(&dev);
  if (it != tn.attached.end()) {
    for (const auto& t : it->second) TapAccess::mut(t).dev_ = nullptr;
    tn.attached.erase(it);
  }
  // No reader runs on a device being destroyed (NetDevice contract): free at once.
  rcu_publish(dev.taps_head(), std::unique_ptr<const TapList>());
}

bool tap_set_bpf_engine(Net& net, const BpfLoadConfig& cfg, std::string* err) {
  RcuWriterScope rcu_scope;
  TapNet& tn = tap_net(net);
  std::lock_guard g(tn.mu);
  std::vector<std::unique_ptr<const bpf::Program>> old;
  bool ok = true;
  auto reload = [&](const std::shared_ptr<Tap>& t) {
    Tap& m = TapAccess::mut(t);
    if (!m.owned_) return;
    bpf::Insns insns = m.spec_.insns;
    if (m.spec_.linktype == kTapLinkCooked) cook_filter(insns);  // succeeded at attach
    auto fresh = load_program(insns, cfg, err);
    if (!fresh) {
      ok = false;
      return;
    }
    m.prog_.store(fresh.get(), std::memory_order_release);
    old.push_back(std::move(m.owned_));
    m.owned_ = std::move(fresh);
  };
  for (auto& [dev, taps] : tn.attached)
    for (const auto& t : taps) reload(t);
  for (const auto& t : tn.all) reload(t);
  if (!old.empty()) rcu_synchronize();
  return ok;
}

namespace {
const BpfEngineUser tap_engine_user{tap_set_bpf_engine};
}  // namespace

}  // namespace pktpath
