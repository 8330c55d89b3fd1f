#include "core/packet_trace.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <memory>

#include "core/cpu.h"
#include "core/netdevice.h"
#include "sched/qdisc.h"
#include "sched/sch_api.h"

namespace pktpath {

void trace_enqueue_stamp(Cpu& cpu, Packet& p) {
  p.tstamp_ns = cpu.clock().now_ns();
  p.tc_class = 0;
}

bool packet_is_ce(const Packet& p) {
  const uint8_t* d = p.data();
  uint32_t n = p.headlen(), off = 12;
  if (n < 14) return false;
  uint16_t type = uint16_t(d[12] << 8 | d[13]);
  if ((type == 0x8100 || type == 0x88a8) && n >= 18) {
    type = uint16_t(d[16] << 8 | d[17]);
    off = 16;
  }
  off += 2;
  if (type == 0x0800 && n > off + 1) return (d[off + 1] & 3) == 3;
  if (type == 0x86dd && n > off + 1) return ((d[off + 1] >> 4) & 3) == 3;
  return false;
}

TraceTx trace_tx_capture(const Packet& p, const NetDevice& dev) {
  return TraceTx{.dev = &dev, .len = p.len, .enqueue_ns = p.tstamp_ns, .tc_class = p.tc_class, .ce = packet_is_ce(p)};
}

unsigned TraceWriter::bucket_of(uint64_t ns) {
  if (ns < kSub) return static_cast<unsigned>(ns);
  const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(ns));  // >= 7
  return kSub + (msb - 7) * kSub + static_cast<unsigned>((ns >> (msb - 7)) & (kSub - 1));
}

uint64_t TraceWriter::bucket_top(unsigned b) {
  if (b < kSub) return b;
  const unsigned msb = (b - kSub) / kSub + 7, sub = (b - kSub) % kSub;
  const uint64_t lo = (uint64_t{kSub} | sub) << (msb - 7);
  return lo + (uint64_t{1} << (msb - 7)) - 1;
}

TraceWriter::TraceWriter(std::FILE* out, uint64_t bin_ns) : out_(out), bin_ns_(bin_ns ? bin_ns : 1) {}

TraceWriter::~TraceWriter() { flush(); }

void TraceWriter::flush() {
  if (len_ && out_ && std::fwrite(buf_.data(), 1, len_, out_) != len_) failed_ = true;
  len_ = 0;
}

void TraceWriter::put(const char* s, size_t n) {
  if (len_ + n > kBuf) flush();
  if (n > kBuf) {  // longer than the buffer (a summary's bins): straight out
    if (out_ && std::fwrite(s, 1, n, out_) != n) failed_ = true;
    return;
  }
  std::memcpy(buf_.data() + len_, s, n);
  len_ += n;
}

void TraceWriter::put(const char* s) { put(s, std::strlen(s)); }

void TraceWriter::put_u64(uint64_t v) {
  char b[24];
  const auto r = std::to_chars(b, b + sizeof b, v);
  put(b, static_cast<size_t>(r.ptr - b));
}

TraceWriter::ClassStats& TraceWriter::stats_for(const NetDevice* dev, uint16_t tc_class) {
  for (ClassStats& c : classes_)
    if (c.dev == dev && c.classid == tc_class) return c;
  ClassStats& c = classes_.emplace_back();  // once per device and class
  c.dev = dev;
  c.classid = tc_class;
  c.bin_ns = bin_ns_;
  c.dev_name = dev ? dev->name() : "-";
  const Qdisc* q = dev ? dev->qdisc() : nullptr;
  if (q && q->handle() != 0)
    c.cls = tc_handle_str(tc_class ? (q->handle() & 0xffff0000u) | tc_class : q->handle());
  else if (q)
    c.cls = q->kind();
  return c;
}

// Records far apart in time (a virtual clock, a replay with long gaps) would need more
// bins than a summary should hold: double the class's bin width, merging neighbours,
// until `bin` fits. Returns `bin` in the new width.
uint64_t TraceWriter::widen_bins(ClassStats& c, uint64_t bin) {
  while (bin >= kMaxBins) {
    const size_t n = c.bin_bytes.size();
    for (size_t i = 0; i < n; i += 2) c.bin_bytes[i / 2] = c.bin_bytes[i] + (i + 1 < n ? c.bin_bytes[i + 1] : 0);
    c.bin_bytes.resize((n + 1) / 2);
    c.bin_ns *= 2;
    bin /= 2;
  }
  return bin;
}

// {"t_ns":T,"dev":"D","len":L,"verdict":"V"
void TraceWriter::record_head(uint64_t t, const NetDevice* dev, uint32_t len, const char* verdict) {
  if (t0_ == UINT64_MAX) t0_ = t;
  put("{\"t_ns\":");
  put_u64(t);
  put(",\"dev\":\"");
  if (dev) put(dev->name());
  else put("-");
  put("\",\"len\":");
  put_u64(len);
  put(",\"verdict\":\"");
  put(verdict);
  put("\"");
}

// ,"class":"C","qlen":N}
void TraceWriter::record_class(const ClassStats& c, uint64_t qlen) {
  put(",\"class\":\"");
  put(c.cls);
  put("\",\"qlen\":");
  put_u64(qlen);
  put("}\n");
}

// mirrors trace_net_dev_xmit (rc NETDEV_TX_OK), with the sojourn and class.
void TraceWriter::sent(Cpu& cpu, const TraceTx& tx) {
  const uint64_t now = cpu.clock().now_ns();
  const Qdisc* q = tx.dev->qdisc();
  const uint64_t qlen = q ? q->qlen_locked() : 0;
  const uint64_t sojourn = now > tx.enqueue_ns ? now - tx.enqueue_ns : 0;
  LockGuard g(lock_);
  if (PP_UNLIKELY(closed_)) return;
  ClassStats& c = stats_for(tx.dev, tx.tc_class);
  ++sent_;
  ++c.sent;
  c.bytes += tx.len;
  c.ce += tx.ce;
  ++c.hist[bucket_of(sojourn)];
  c.max_sojourn = std::max(c.max_sojourn, sojourn);
  record_head(now, tx.dev, tx.len, "sent");
  uint64_t bin = (now - std::min(now, t0_)) / c.bin_ns;
  if (bin >= c.bin_bytes.size()) {  // amortised: grows with time, not packets
    if (PP_UNLIKELY(bin >= kMaxBins)) bin = widen_bins(c, bin);
    c.bin_bytes.resize(bin + 1);
  }
  c.bin_bytes[bin] += tx.len;
  put(",\"sojourn_ns\":");
  put_u64(sojourn);
  put(tx.ce ? ",\"ecn\":true" : ",\"ecn\":false");
  record_class(c, qlen);
}

// mirrors trace_kfree_skb: the device the packet was at and the reason.
void TraceWriter::dropped(Cpu& cpu, const Packet& p, DropReason r) {
  const uint64_t now = cpu.clock().now_ns();
  const Qdisc* q = p.dev ? p.dev->qdisc() : nullptr;
  const uint64_t qlen = q ? q->qlen_locked() : 0;
  const std::string_view why = drop_reason_name(r);
  LockGuard g(lock_);
  if (PP_UNLIKELY(closed_)) return;
  ClassStats& c = stats_for(p.dev, p.tc_class);
  ++dropped_;
  ++c.dropped;
  ++c.drops[static_cast<unsigned>(r)];
  record_head(now, p.dev, p.len, "dropped");
  put(",\"reason\":\"");
  put(why.data(), why.size());
  put("\"");
  record_class(c, qlen);
}

// A summary's counters from "sent" on: ,"sent":..,"dropped":..,"bytes":..,"ecn_marked":..,
// "drop_rate":..,"drop_reasons":{"REASON":..},"sojourn_ns":{"p50":..,"p90":..,"p99":..,
// "max":..},"t0_ns":..,"bin_ns":..,"throughput_bps":[..]}}
void TraceWriter::summary_body(const ClassStats& c, uint64_t t0) {
  put(",\"sent\":");
  put_u64(c.sent);
  put(",\"dropped\":");
  put_u64(c.dropped);
  put(",\"bytes\":");
  put_u64(c.bytes);
  put(",\"ecn_marked\":");
  put_u64(c.ce);
  char b[64];
  const uint64_t made = c.sent + c.dropped;
  const int n = std::snprintf(b, sizeof b, ",\"drop_rate\":%.6f", made ? double(c.dropped) / double(made) : 0.0);
  put(b, static_cast<size_t>(n));
  put(",\"drop_reasons\":{");
  bool first = true;
  for (unsigned k = 0; k < kDropReasonCount; ++k) {
    if (!c.drops[k]) continue;
    put(first ? "\"" : ",\"");
    first = false;
    const std::string_view why = drop_reason_name(static_cast<DropReason>(k));
    put(why.data(), why.size());
    put("\":");
    put_u64(c.drops[k]);
  }
  put("},\"sojourn_ns\":{");
  const double qs[] = {0.5, 0.9, 0.99};
  const char* names[] = {"\"p50\":", ",\"p90\":", ",\"p99\":"};
  for (int i = 0; i < 3; ++i) {
    put(names[i]);
    // The smallest bucket holding the q-quantile, reported as its largest value
    // (within 1/128 of the truth), capped by the true maximum.
    const uint64_t rank = c.sent ? static_cast<uint64_t>(qs[i] * double(c.sent - 1)) + 1 : 0;
    uint64_t seen = 0, v = 0;
    for (unsigned k = 0; k < kBuckets && rank; ++k) {
      seen += c.hist[k];
      if (seen >= rank) {
        v = std::min(bucket_top(k), c.max_sojourn);
        break;
      }
    }
    put_u64(v);
  }
  put(",\"max\":");
  put_u64(c.max_sojourn);
  put("},\"t0_ns\":");
  put_u64(t0);
  put(",\"bin_ns\":");
  put_u64(c.bin_ns);
  put(",\"throughput_bps\":[");
  for (size_t i = 0; i < c.bin_bytes.size(); ++i) {
    if (i) put(",");
    put_u64(static_cast<uint64_t>(static_cast<unsigned __int128>(c.bin_bytes[i]) * 8'000'000'000u / c.bin_ns));
  }
  put("]}}\n");
}

// A device's totals over its classes: counts, reasons and histograms added, the bins at
// the widest of the classes' widths (each a power-of-two multiple of the others).
void TraceWriter::add_to_device(ClassStats& d, const ClassStats& c) {
  d.sent += c.sent;
  d.dropped += c.dropped;
  d.bytes += c.bytes;
  d.ce += c.ce;
  d.max_sojourn = std::max(d.max_sojourn, c.max_sojourn);
  for (unsigned k = 0; k < kDropReasonCount; ++k) d.drops[k] += c.drops[k];
  for (unsigned k = 0; k < kBuckets; ++k) d.hist[k] += c.hist[k];
  while (d.bin_ns < c.bin_ns) widen_bins(d, kMaxBins);  // one doubling each
  for (size_t i = 0; i < c.bin_bytes.size(); ++i) {
    const size_t at = static_cast<size_t>(uint64_t(i) * c.bin_ns / d.bin_ns);
    if (at >= d.bin_bytes.size()) d.bin_bytes.resize(at + 1);
    d.bin_bytes[at] += c.bin_bytes[i];
  }
}

bool TraceWriter::finish(uint64_t now_ns, uint64_t queued) {
  LockGuard g(lock_);
  if (closed_) return !failed_;
  closed_ = true;
  const uint64_t t0 = t0_ == UINT64_MAX ? now_ns : t0_;
  for (const ClassStats& c : classes_) {
    put("{\"summary\":{\"dev\":\"");
    put(c.dev_name);
    put("\",\"class\":\"");
    put(c.cls);
    put("\"");
    summary_body(c, t0);
  }
  // {"device":{"dev":..,<the same counters over the device's classes>}}, devices in the
  // order their first class appeared.
  std::vector<const NetDevice*> devs;
  for (const ClassStats& c : classes_)
    if (std::find(devs.begin(), devs.end(), c.dev) == devs.end()) devs.push_back(c.dev);
  for (const NetDevice* dev : devs) {
    auto total = std::make_unique<ClassStats>();
    total->bin_ns = bin_ns_;
    for (const ClassStats& c : classes_)
      if (c.dev == dev) {
        total->dev_name = c.dev_name;
        add_to_device(*total, c);
      }
    put("{\"device\":{\"dev\":\"");
    put(total->dev_name);
    put("\"");
    summary_body(*total, t0);
  }
  put("{\"end\":{\"t_ns\":");
  put_u64(now_ns);
  put(",\"sent\":");
  put_u64(sent_);
  put(",\"dropped\":");
  put_u64(dropped_);
  put(",\"queued\":");
  put_u64(queued);
  put("}}\n");
  flush();
  if (out_ && std::fflush(out_) != 0) failed_ = true;
  return !failed_;
}

}  // namespace pktpath
