// pcap: a capture file as an interface. `rx FILE` replays a capture (pcap or pcapng,
// Ethernet, read with libpcap) into the receive path when the device is set up; `tx FILE`
// writes every frame the device is given as a record (pcap through libpcap's dumper, or
// pcapng when the name ends in .pcapng). Pacing follows tcpreplay's words.
//
// Receive is one NAPI instance on the Cpu of the thread that sets the device up (the
// control thread in `pktpath run`): its poll reads up to `budget` records into packets of
// that Cpu and hands each to netif_receive_skb. A record not yet due completes the
// instance and arms a timer that schedules it again at the record's time.
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdio_ext.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/pcap_time.h"
#include "core/dev_rx.h"
#include "core/link_kind.h"

namespace pktpath {

namespace {

constexpr uint32_t kTxBuffer = 256 * 1024;  // the tx file's stdio buffer, written out whole
constexpr uint32_t kMaxSnaplen = 262144;    // libpcap's MAXIMUM_SNAPLEN

// tcpreplay's speed options: --topspeed, (its default) the file's own timing, --multiplier
// X, --pps N, --mbps N. Without `pace`, a replay on a virtual clock keeps the file's timing
// (tcpreplay's default: a capture means its timestamps) and one on the real clock goes at
// top speed.
enum class Pace : uint8_t { kTopspeed, kFile, kMultiplier, kPps, kMbps };

// A regular file mapped read-only (tcpreplay's --preload-pcap without the copy); empty
// when the file is not a regular file or cannot be mapped. One up to kResidentMax is
// mapped whole at once (MAP_POPULATE: no fault per page as passes read it) and stays;
// a larger one is read in order and its readers give pages back behind them.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() { unmap(); }
  void map(const std::string& path) {
    unmap();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st{};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      const size_t size = static_cast<size_t>(st.st_size);
      const bool resident = size <= kResidentMax;
      void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | (resident ? MAP_POPULATE : 0), fd, 0);
      if (m != MAP_FAILED) {
        if (!resident) ::madvise(m, size, MADV_SEQUENTIAL);
        data_ = static_cast<const uint8_t*>(m);
        size_ = size;
      }
    }
    ::close(fd);
  }
  void unmap() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool resident() const { return size_ <= kResidentMax; }
  // Gives back the pages of [from, to) (page-aligned from): a later read faults them in
  // again from the page cache.
  void release(size_t from, size_t to) const {
    to &= ~size_t{4095};
    if (to > from) ::madvise(const_cast<uint8_t*>(data_) + from, to - from, MADV_DONTNEED);
  }

  static constexpr size_t kResidentMax = 256u << 20;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct PcapPriv final : DriverState {
  NetDevice* dev = nullptr;
  // Configuration (while down).
  std::string rx_path, tx_path;
  Pace pace = Pace::kTopspeed;
  bool pace_given = false;  // else chosen by the clock at each up
  double rate = 1;      // the multiplier, packets per second or megabits per second
  uint64_t loops = 1;   // 0: until the device goes down

  // Receive: the polling Cpu's thread only, once up.
  Napi napi;
  CpuTimer timer;
  pcap_t* rx = nullptr;
  bool rx_running = false;
  const pcap_pkthdr* held_hdr = nullptr;  // read but not yet due (valid until the next read)
  const u_char* held_data = nullptr;
  uint64_t record = 0;       // index in the file of the next record read
  PacketPool* large = nullptr;  // buffers for frames above the Cpu pool's (MTU > ~1900)
  uint64_t loops_done = 0;
  MappedFile image;  // the replayed file, mapped at up, for every pass
  std::unique_ptr<char[]> rx_buf;  // rx's stdio buffer (kRxBuffer), kept past rx's close
  // Passes over a classic pcap image are read from it directly (rx null): the next
  // record's offset (0: not reading the image), the file's byte order and stamp unit,
  // libpcap's snapshot length, and the header handed out.
  size_t mem_pos = 0;
  size_t mem_released = 0;  // the image's pages below this are given back (madvise)
  bool mem_swapped = false, mem_nsec = false;
  uint32_t mem_snap = 0;
  pcap_pkthdr mem_hdr{};
  uint64_t start_ns = 0;     // the Cpu clock when this pass's pacing began
  uint64_t first_ts = 0;     // this pass's first record's capture time (ns)
  uint64_t last_due = 0;
  uint64_t sent = 0;         // packets paced so far (pps)
  double bits = 0;           // bits paced so far (mbps)

  // Transmit: under the tx queue's xmit lock (the device is not LLTX).
  std::FILE* tx = nullptr;
  pcap_t* tx_dead = nullptr;
  pcap_dumper_t* dumper = nullptr;
  bool pcapng = false;
  bool tx_failed = false;
  uint64_t pending_packets = 0, pending_bytes = 0;  // in the buffer, not yet written
  uint64_t pending_len = 0;                         // their packet bytes
  std::unique_ptr<uint8_t[]> gather;                // a fragmented frame made linear
  std::unique_ptr<char[]> tx_buf;                   // tx's stdio buffer (kTxBuffer)

  // The first failure, reported once through busy().
  std::string error;
  bool error_reported = false;

  PcapPriv() : timer(on_timer, this) {}
  ~PcapPriv() override {
    timer.cancel();
    close_rx();
    close_tx();
  }
  void fail(std::string msg) {
    if (error.empty()) error = dev->name() + ": " + std::move(msg);
  }
  void close_rx() {
    if (rx) pcap_close(rx);
    rx = nullptr;
    held_hdr = nullptr;
    image.unmap();
    mem_pos = 0;
  }
  void close_tx() {
    if (dumper) pcap_dump_close(dumper);  // closes tx too
    else if (tx) std::fclose(tx);
    if (tx_dead) pcap_close(tx_dead);
    dumper = nullptr;
    tx = nullptr;
    tx_dead = nullptr;
  }
  static void on_timer(CpuTimer& t, Cpu&) { napi_schedule(static_cast<PcapPriv*>(t.owner())->napi); }
};

PcapPriv& priv(const NetDevice& dev) { return *static_cast<PcapPriv*>(dev.priv()); }

// How much of the mapped image a pass reads before giving its pages back.
constexpr size_t kRxReleaseChunk = 64u << 20;

// The stdio buffer a replay reads through: a poll's records come from memory, one read
// per megabyte.
constexpr size_t kRxBuffer = 1 << 20;
// Opens `path` for replay through `buf` (kRxBuffer bytes, outliving the pcap_t; null:
// stdio's own), or reads `image` (the file mapped) when it holds it; null with err when
// libpcap cannot read it or it is not Ethernet.
pcap_t* open_capture(const std::string& path, const MappedFile* image, char* buf, std::string& err) {
  const bool mem = image && !image->empty();
  std::FILE* f = mem ? fmemopen(const_cast<uint8_t*>(image->data()), image->size(), "r") : std::fopen(path.c_str(), "rb");
  if (!f) {
    err = "rx " + path + ": " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (!mem && buf) std::setvbuf(f, buf, _IOFBF, kRxBuffer);  // glibc ignores a size without a buffer
  char ebuf[PCAP_ERRBUF_SIZE] = "";
  pcap_t* p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, ebuf);
  if (!p) {
    std::fclose(f);  // libpcap leaves a FILE it refused to its caller
    err = "rx " + path + ": " + ebuf;
    return nullptr;
  }
  if (const int dlt = pcap_datalink(p); dlt != DLT_EN10MB) {
    const char* name = pcap_datalink_val_to_name(dlt);
    err = "rx " + path + ": link type " + (name ? name : std::to_string(dlt)) +
          " is not Ethernet (EN10MB); only Ethernet captures can be replayed";
    pcap_close(p);
    return nullptr;
  }
  return p;
}


bool parse_rate(std::string_view s, double& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && v > 0;
}

// `pace topspeed|max|file|multiplier X|pps N|mbps N`.
bool parse_pace(PcapPriv& s, std::string_view v, std::string& err) {
  const size_t sp = v.find(' ');
  const std::string_view word = v.substr(0, sp);
  const std::string_view arg = sp == std::string_view::npos ? std::string_view{} : v.substr(sp + 1);
  Pace p;
  if (word == "topspeed" || word == "max") p = Pace::kTopspeed;
  else if (word == "file") p = Pace::kFile;
  else if (word == "multiplier") p = Pace::kMultiplier;
  else if (word == "pps") p = Pace::kPps;
  else if (word == "mbps") p = Pace::kMbps;
  else {
    err = "pace: expected topspeed, max, file, multiplier X, pps N or mbps N, got \"" + std::string(v) + "\"";
    return false;
  }
  const bool takes_arg = p == Pace::kMultiplier || p == Pace::kPps || p == Pace::kMbps;
  double rate = 1;
  if (takes_arg ? !parse_rate(arg, rate) : !arg.empty()) {
    err = takes_arg ? "pace " + std::string(word) + " needs a number above 0" : "pace " + std::string(word) + " takes no value";
    return false;
  }
  // Rates far outside what a replay can mean; a record still scheduled past kMaxDueNs is
  // refused when it is reached (due_ns).
  if (takes_arg && (rate < 1e-6 || rate > 1e12)) {
    err = "pace " + std::string(word) + " " + std::string(arg) + ": out of range (1e-6 to 1e12)";
    return false;
  }
  s.pace = p;
  s.pace_given = true;
  s.rate = rate;
  return true;
}

bool pcap_set_text_option(NetDevice& dev, std::string_view name, std::string_view value, std::string& err) {
  PcapPriv& s = priv(dev);
  if (dev.is_up()) {
    err = "pcap: " + std::string(name) + " cannot change while the device is up";
    return false;
  }
  if (name == "pace") return parse_pace(s, value, err);
  if (name == "rx") {
    pcap_t* p = open_capture(std::string(value), nullptr, nullptr, err);  // checked now, read from the start at each up
    if (!p) return false;
    pcap_close(p);
    s.rx_path = value;
    return true;
  }
  s.tx_path = value;
  return true;
}

void pcap_set_option(NetDevice& dev, std::string_view name, uint64_t value) {
  if (name == "loop") priv(dev).loops = value;
}

// A new pass over the file. A rate (pps, mbps) runs on across passes; the file's own
// timing restarts where the last pass ended.
void begin_pass(PcapPriv& s, uint64_t now) {
  if (s.loops_done == 0) {
    s.start_ns = now;
    s.sent = 0;
    s.bits = 0;
  } else if (s.pace == Pace::kFile || s.pace == Pace::kMultiplier) {
    s.start_ns = s.last_due;
  }
  s.first_ts = UINT64_MAX;
  s.record = 0;
}

// Whether passes can read `s.image` directly: a classic pcap (microsecond or nanosecond
// magic, either byte order) whose header libpcap has read, of a version whose record
// headers libpcap takes as written (sf_pcap_open swaps caplen and len in versions up to
// 2.3 and 543.x: those stay libpcap's). Sets the reader's parameters from libpcap's view.
bool mem_reader_setup(PcapPriv& s) {
  if (s.image.size() < 24 || !s.rx) return false;
  uint32_t magic;
  std::memcpy(&magic, s.image.data(), 4);
  if (magic == 0xa1b2c3d4u || magic == 0xd4c3b2a1u) s.mem_nsec = false;
  else if (magic == 0xa1b23c4du || magic == 0x4d3cb2a1u) s.mem_nsec = true;
  else return false;  // pcapng, or a variant libpcap reads its own way
  s.mem_swapped = magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u;
  uint16_t v[2];
  std::memcpy(v, s.image.data() + 4, 4);
  if (s.mem_swapped)
    for (uint16_t& x : v) x = __builtin_bswap16(x);
  if ((v[0] == 2 && v[1] <= 3) || v[0] == 543) return false;
  s.mem_snap = static_cast<uint32_t>(pcap_snapshot(s.rx));
  return true;
}

// mirrors pcap_next_packet (sf-pcap.c) on the mapped image: the record's header at
// nanosecond precision, caplen cut to the snapshot as libpcap does, the data in place.
// False at the end of the image, or at a record libpcap would refuse (a header cut
// short, a caplen above MAXIMUM_SNAPLEN, data cut short), mem_pos left at it.
bool mem_next(PcapPriv& s) {
  const size_t n = s.image.size();
  if (s.mem_pos + 16 > n) return false;
  uint32_t f[4];
  std::memcpy(f, s.image.data() + s.mem_pos, 16);
  if (s.mem_swapped)
    for (uint32_t& v : f) v = __builtin_bswap32(v);
  if (PP_UNLIKELY(f[2] > kMaxSnaplen || s.mem_pos + 16 + uint64_t(f[2]) > n)) return false;
  pcap_pkthdr& h = s.mem_hdr;
  h.ts.tv_sec = static_cast<int32_t>(f[0]);  // libpcap's fields are signed 32-bit
  const auto frac = static_cast<suseconds_t>(static_cast<int32_t>(f[1]));
  h.ts.tv_usec = s.mem_nsec ? frac : frac * 1000;
  h.caplen = std::min(f[2], s.mem_snap);
  h.len = f[3];
  s.held_hdr = &h;
  s.held_data = s.image.data() + s.mem_pos + 16;
  s.mem_pos += 16 + f[2];
  // A file too large to stay resident gives back the pages read so far (the held record's
  // excepted), so the resident set stays flat however large the file.
  if (PP_UNLIKELY(s.mem_pos - s.mem_released >= kRxReleaseChunk) && !s.image.resident()) {
    const size_t upto = (s.mem_pos - 16 - f[2]) & ~size_t{4095};
    s.image.release(s.mem_released, upto);
    s.mem_released = std::max(s.mem_released, upto);
  }
  return true;
}

// The next record into held_*; false at the end of the replay or on an error (then
// rx_running is false).
bool read_next(PcapPriv& s) {
  for (;;) {
    if (s.mem_pos != 0) {  // a pass from the image
      if (PP_LIKELY(mem_next(s))) return true;
      s.held_hdr = nullptr;
      if (s.mem_pos != s.image.size()) {  // a bad record: libpcap reads it, and names what is wrong
        std::string err;
        s.rx = open_capture(s.rx_path, s.image.resident() ? &s.image : nullptr, s.rx_buf.get(), err);
        if (!s.rx || std::fseek(pcap_file(s.rx), static_cast<long>(s.mem_pos), SEEK_SET) != 0) {
          s.fail(s.rx ? "rx " + s.rx_path + ": record " + std::to_string(s.record) + ": seek failed" : err);
          s.rx_running = false;
          return false;
        }
        s.mem_pos = 0;
        continue;
      }
      if (++s.loops_done, s.loops != 0 && s.loops_done >= s.loops) {
        s.rx_running = false;
        return false;
      }
      s.mem_pos = 24;
      s.mem_released = 0;
      begin_pass(s, 0);
      continue;
    }
    const int rc = pcap_next_ex(s.rx, const_cast<pcap_pkthdr**>(&s.held_hdr), &s.held_data);
    if (PP_LIKELY(rc == 1)) return true;
    s.held_hdr = nullptr;
    if (rc != PCAP_ERROR_BREAK) {
      s.fail("rx " + s.rx_path + ": record " + std::to_string(s.record) + ": " + pcap_geterr(s.rx));
      s.rx_running = false;
      return false;
    }
    ++s.loops_done;
    if (s.loops != 0 && s.loops_done >= s.loops) {
      s.rx_running = false;
      return false;
    }
    const bool from_image = mem_reader_setup(s);
    pcap_close(s.rx);
    s.rx = nullptr;
    if (from_image) {
      s.mem_pos = 24;
      s.mem_released = 0;
      begin_pass(s, 0);
      continue;
    }
    std::string err;
    s.rx = open_capture(s.rx_path, &s.image, s.rx_buf.get(), err);
    if (!s.rx) {
      s.fail(err);
      s.rx_running = false;
      return false;
    }
    begin_pass(s, 0);
  }
}

// A scaled offset on the Cpu clock, or kNever past kMaxDueNs (146 years): a time the
// replay refuses rather than wrap.
constexpr uint64_t kMaxDueNs = 1ull << 62, kNever = UINT64_MAX;
uint64_t offset_due(const PcapPriv& s, double off_ns) {
  return off_ns < double(kMaxDueNs) ? s.start_ns + static_cast<uint64_t>(off_ns) : kNever;
}

// When the held record is due on the Cpu clock; kNever when pacing would put it past
// kMaxDueNs.
uint64_t due_ns(PcapPriv& s) {
  const pcap_pkthdr& h = *s.held_hdr;
  switch (s.pace) {
    case Pace::kTopspeed:
      return 0;
    case Pace::kFile:
    case Pace::kMultiplier: {
      const uint64_t ts = pcap_record_sec(h.ts.tv_sec) * 1000000000ull + uint64_t(h.ts.tv_usec);  // ns precision
      if (s.first_ts == UINT64_MAX) s.first_ts = ts;
      const uint64_t off = ts > s.first_ts ? ts - s.first_ts : 0;  // a record earlier than the first is not held back
      return offset_due(s, static_cast<double>(off) / s.rate);
    }
    case Pace::kPps:
      return offset_due(s, static_cast<double>(s.sent) * 1e9 / s.rate);
    case Pace::kMbps:
      return offset_due(s, s.bits * 1e3 / s.rate);
  }
  return 0;
}

// A packet for an n-byte frame: from the Cpu's pool, or from its large companion when
// the device's MTU is above the pool's buffers (set up at open).
Packet* alloc_frame(PcapPriv& s, Cpu& cpu, uint32_t n) {
  PacketPool& pool = cpu.pool();
  if (PP_LIKELY(n + pool.headroom() <= pool.buf_size() || !s.large)) return cpu.alloc();
  Packet* p;
  if (s.large->get_bulk(&p, 1) != 1) return nullptr;
  p->reset_for_alloc(s.large->headroom(), cpu.id());
  return p;
}

// One record into a packet of `cpu` and up the stack; oversized, runt or unallocatable
// frames count as rx_dropped.
void deliver(PcapPriv& s, Cpu& cpu) {
  NetDevice& dev = *s.dev;
  const uint32_t n = s.held_hdr->caplen;
  DropReason why = DropReason::NOT_SPECIFIED;
  Packet* p = nullptr;
  if (PP_UNLIKELY(n < 14)) why = DropReason::PKT_TOO_SMALL;
  else if (PP_UNLIKELY(n > dev.mtu() + 14)) why = DropReason::PKT_TOO_BIG;
  else if (PP_UNLIKELY(!(p = alloc_frame(s, cpu, n)))) why = DropReason::NOMEM;
  if (PP_LIKELY(p)) {
    if (uint8_t* d = p->put(n); PP_LIKELY(d != nullptr)) {
      std::memcpy(d, s.held_data, n);
      eth_type_trans(*p, dev);
      dev_sw_netstats_rx_add(cpu, dev, p->len);
      netif_receive_skb(cpu, p);
      return;
    }
    why = DropReason::PKT_TOO_BIG;  // larger than any buffer
  }
  dev.stats(cpu).rx_dropped.add();
  // kfree_skb_reason has the skb: a packet carries the drop, so its trace record names
  // the device and the frame's length.
  if (!p && why != DropReason::NOMEM) p = cpu.alloc();
  if (p) {
    p->dev = &dev;
    p->len = n;
    cpu.free_reason(p, why);
  } else {
    cpu.stats().drops[static_cast<unsigned>(why)].add();
  }
}

int pcap_poll(Napi& n, Cpu& cpu, int budget) {
  PcapPriv& s = *static_cast<PcapPriv*>(n.ctx);
  const uint64_t now = s.pace == Pace::kTopspeed ? 0 : cpu.clock().now_ns();
  int done = 0;
  while (done < budget && s.rx_running) {
    if (!s.held_hdr && !read_next(s)) break;
    const uint64_t due = due_ns(s);
    if (PP_UNLIKELY(due == kNever)) {
      s.fail("rx " + s.rx_path + ": record " + std::to_string(s.record) +
             ": paced, it would be due more than 146 years after the first; use a larger rate or multiplier");
      s.rx_running = false;
      break;
    }
    if (due > now) {
      napi_complete_done(n, done);
      cpu.arm_timer(&s.timer, due);
      return done;
    }
    s.last_due = due;
    if (s.pace == Pace::kPps) ++s.sent;
    else if (s.pace == Pace::kMbps) s.bits += 8.0 * s.held_hdr->len;
    deliver(s, cpu);
    s.held_hdr = nullptr;
    ++s.record;
    ++done;
  }
  if (done < budget) napi_complete_done(n, done);
  return done;
}

// ---- transmit

// The buffered records out to the file; they count as sent only once written.
bool tx_flush(PcapPriv& s, Cpu& cpu) {
  if (!s.tx || s.tx_failed) return !s.tx_failed;
  const bool ok = std::fflush(s.tx) == 0 && !std::ferror(s.tx);
  DevCpuStats& st = s.dev->stats(cpu);
  if (ok) {
    st.tx_packets.add(s.pending_packets);
    st.tx_bytes.add(s.pending_len);
  } else {
    s.tx_failed = true;
    st.tx_dropped.add(s.pending_packets);
    s.fail("tx " + s.tx_path + ": write failed: " + std::strerror(errno ? errno : EIO));
  }
  s.pending_packets = s.pending_bytes = s.pending_len = 0;
  return ok;
}

// pcapng is written in the writer's byte order (the section header's magic tells readers).
void put_u16(uint8_t* b, uint16_t v) { std::memcpy(b, &v, 2); }
void put_u32(uint8_t* b, uint32_t v) { std::memcpy(b, &v, 4); }

// pcapng's section header and one interface description (EN10MB, if_name, ns stamps);
// returns their bytes.
uint32_t write_pcapng_head(PcapPriv& s) {
  const std::string& name = s.dev->name();
  const uint32_t name_pad = (static_cast<uint32_t>(name.size()) + 3) & ~3u;
  uint8_t b[28 + 20 + 4 + 16 + 8 + 4 + 4] = {};
  put_u32(b, 0x0A0D0D0A);
  put_u32(b + 4, 28);
  put_u32(b + 8, 0x1A2B3C4D);
  put_u16(b + 12, 1);  // version 1.0
  std::memset(b + 16, 0xff, 8);  // section length unknown
  put_u32(b + 24, 28);
  uint8_t* i = b + 28;
  const uint32_t idb_len = 20 + 4 + name_pad + 8 + 4;  // header, if_name, if_tsresol, opt_endofopt
  put_u32(i, 1);
  put_u32(i + 4, idb_len);
  put_u16(i + 8, 1);  // LINKTYPE_ETHERNET
  put_u32(i + 12, kMaxSnaplen);
  put_u16(i + 16, 2);  // if_name
  put_u16(i + 18, static_cast<uint16_t>(name.size()));
  std::memcpy(i + 20, name.data(), name.size());  // at most 15 bytes
  uint8_t* o = i + 20 + name_pad;
  put_u16(o, 9);  // if_tsresol: 10^-9 (o + 8: opt_endofopt, zero)
  put_u16(o + 2, 1);
  o[4] = 9;
  put_u32(i + idb_len - 4, idb_len);
  std::fwrite(b, 1, 28 + idb_len, s.tx);
  return 28 + idb_len;
}

bool open_tx(PcapPriv& s) {
  s.pcapng = s.tx_path.size() > 7 && s.tx_path.compare(s.tx_path.size() - 7, 7, ".pcapng") == 0;
  s.tx = std::fopen(s.tx_path.c_str(), "wb");
  if (!s.tx) {
    s.fail("tx " + s.tx_path + ": " + std::strerror(errno));
    return false;
  }
  if (!s.tx_buf) s.tx_buf = std::make_unique<char[]>(kTxBuffer);
  std::setvbuf(s.tx, s.tx_buf.get(), _IOFBF, kTxBuffer);  // glibc ignores a size without a buffer
  __fsetlocking(s.tx, FSETLOCKING_BYCALLER);  // the tx queue's lock orders its writers: no stdio lock per call
  s.tx_failed = false;
  s.pending_packets = s.pending_len = 0;
  if (!s.gather) s.gather = std::make_unique<uint8_t[]>(kMaxSnaplen);
  if (s.pcapng) {
    s.pending_bytes = write_pcapng_head(s);
    return true;
  }
  s.tx_dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kMaxSnaplen, PCAP_TSTAMP_PRECISION_NANO);
  s.dumper = s.tx_dead ? pcap_dump_fopen(s.tx_dead, s.tx) : nullptr;
  if (!s.dumper) {
    s.fail("tx " + s.tx_path + ": cannot start the pcap file");
    s.close_tx();
    return false;
  }
  s.pending_bytes = 24;  // the file header libpcap put in the buffer
  return true;
}

NetdevTx pcap_xmit(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue&) {
  PcapPriv& s = priv(dev);
  const uint32_t n = std::min(p->len, kMaxSnaplen);
  const uint64_t rec = (s.pcapng ? 32 + ((n + 3) & ~3u) : 16 + n);
  if (PP_LIKELY(s.tx && !s.tx_failed) && s.pending_bytes + rec > kTxBuffer) tx_flush(s, cpu);
  const uint8_t* bytes = p->data();
  if (PP_UNLIKELY(!s.tx || s.tx_failed || (n > p->headlen() && !p->copy_bits(0, s.gather.get(), n)))) {
    dev.stats(cpu).tx_dropped.add();
    cpu.free_reason(p, DropReason::NOT_SPECIFIED);
    return NetdevTx::OK;
  }
  if (n > p->headlen()) bytes = s.gather.get();
  const uint64_t ts = cpu.clock().now_ns();
  if (s.pcapng) {
    uint8_t h[28];
    put_u32(h, 6);
    put_u32(h + 4, static_cast<uint32_t>(rec));
    put_u32(h + 8, 0);
    put_u32(h + 12, static_cast<uint32_t>(ts >> 32));
    put_u32(h + 16, static_cast<uint32_t>(ts));
    put_u32(h + 20, n);
    put_u32(h + 24, p->len);
    static constexpr uint8_t kPad[4] = {};
    const uint32_t tail = static_cast<uint32_t>(rec);
    fwrite_unlocked(h, 1, sizeof h, s.tx);
    fwrite_unlocked(bytes, 1, n, s.tx);
    fwrite_unlocked(kPad, 1, ((n + 3) & ~3u) - n, s.tx);
    fwrite_unlocked(&tail, 1, 4, s.tx);
  } else {
    // pcap_dump's record (32-bit seconds and, in this nanosecond file, nanoseconds;
    // caplen, len; this machine's order), the stdio lock not taken: the tx queue's lock
    // orders the writers.
    const uint32_t h[4] = {static_cast<uint32_t>(ts / 1000000000ull), static_cast<uint32_t>(ts % 1000000000ull), n,
                           p->len};
    fwrite_unlocked(h, sizeof h, 1, s.tx);
    fwrite_unlocked(bytes, n, 1, s.tx);
  }
  ++s.pending_packets;
  s.pending_bytes += rec;
  s.pending_len += p->len;
  cpu.free(p);
  if (PP_UNLIKELY(ferror_unlocked(s.tx))) tx_flush(s, cpu);  // stdio wrote on its own and failed
  return NetdevTx::OK;
}

// ---- up, down, the runner's check

int pcap_open(NetDevice& dev) {
  PcapPriv& s = priv(dev);
  s.error.clear();
  s.error_reported = false;
  if (!s.tx_path.empty() && !open_tx(s)) return -1;
  if (s.rx_path.empty()) return 0;
  Cpu* cpu = Cpu::current();
  std::string err;
  if (!s.rx_buf) s.rx_buf = std::make_unique<char[]>(kRxBuffer);
  // The file is mapped once per up; libpcap reads its header and, unless it is a classic
  // pcap (then every pass reads the image in place), its records.
  s.image.map(s.rx_path);
  if (!cpu || !(s.rx = open_capture(s.rx_path, &s.image, s.rx_buf.get(), err))) {
    s.fail(cpu ? err : "rx needs a Cpu bound to the thread that sets it up");
    s.image.unmap();
    s.close_tx();
    return -1;
  }
  if (mem_reader_setup(s)) {
    pcap_close(s.rx);
    s.rx = nullptr;
    s.mem_pos = 24;
    s.mem_released = 0;
  } else if (!s.image.resident()) {
    // libpcap reads it (pcapng, an old version): a large file streams through the stdio
    // buffer instead of becoming resident through the mapping.
    pcap_close(s.rx);
    s.image.unmap();
    if (!(s.rx = open_capture(s.rx_path, nullptr, s.rx_buf.get(), err))) {
      s.fail(err);
      s.close_tx();
      return -1;
    }
  }
  if (!s.pace_given) s.pace = dynamic_cast<const VirtualClock*>(&cpu->clock()) ? Pace::kFile : Pace::kTopspeed;
  s.loops_done = 0;
  s.last_due = 0;
  // Frames up to the MTU replay: above the pool's buffers they take large ones.
  PacketPool& pool = cpu->pool();
  s.large = dev.mtu() + 18 + pool.headroom() > pool.buf_size() ? &pool.large() : nullptr;
  begin_pass(s, s.pace == Pace::kTopspeed ? 0 : cpu->clock().now_ns());
  s.rx_running = true;
  s.napi.cpu = cpu;
  napi_schedule(s.napi);
  return 0;
}

// mirrors ndo_stop with napi_disable: the replay stops, a scheduled poll runs out (it
// finds rx_running false and completes) on the polling Cpu, the tx file is written out.
void pcap_stop(NetDevice& dev) {
  PcapPriv& s = priv(dev);
  s.rx_running = false;
  s.timer.cancel();
  napi_wait_idle(s.napi);
  s.close_rx();
  if (s.tx) {
    if (Cpu* cpu = Cpu::current()) {
      LockGuard g(dev.txq(0).xmit_lock);
      tx_flush(s, *cpu);
    }
    s.close_tx();
  }
}

bool pcap_busy(NetDevice& dev, Cpu& cpu, std::string& err) {
  PcapPriv& s = priv(dev);
  if (s.tx) {
    LockGuard g(dev.txq(0).xmit_lock);
    tx_flush(s, cpu);
  }
  if (!s.error.empty() && !s.error_reported) {
    err = s.error;
    s.error_reported = true;
  }
  return s.rx_running;
}

bool pcap_background(const NetDevice& dev) {
  const auto* s = static_cast<const PcapPriv*>(dev.priv());
  return s && s->loops == 0;
}

void pcap_setup(NetDevice& dev) {
  auto s = std::make_unique<PcapPriv>();
  s->dev = &dev;
  s->napi.poll = pcap_poll;
  s->napi.ctx = s.get();
  dev.set_priv(std::move(s));
}

const NetDeviceOps pcap_ops = {
    .open = pcap_open,
    .stop = pcap_stop,
    .start_xmit = pcap_xmit,
    .select_queue = nullptr,
};

const LinkKind::Option pcap_options[] = {
    {"rx", 0, LinkKind::kInputPath},
    {"tx", 0, LinkKind::kOutputPath},
    {"pace", 0, LinkKind::kText},
    {"loop", UINT32_MAX},
    {nullptr, 0},
};

// No queue (frames go straight to the file), not LLTX: the tx queue's lock orders the
// writers of the file.
const LinkKindRegistrar kPcap{{.kind = "pcap",
                               .ops = &pcap_ops,
                               .flags = IFF_NO_QUEUE,
                               .setup = pcap_setup,
                               .options = pcap_options,
                               .set_option = pcap_set_option,
                               .dellink = nullptr,
                               .set_text_option = pcap_set_text_option,
                               .busy = pcap_busy,
                               .background = pcap_background}};

}  // namespace
}  // namespace pktpath
