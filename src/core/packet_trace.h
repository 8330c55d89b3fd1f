// Per-packet outcome records: what became of each packet at each device it left or died
// at (the kernel's net:net_dev_xmit and skb:kfree_skb tracepoints, in one stream).
//
// A Cpu with a tracer installed (Cpu::set_trace) stamps a packet when its device's qdisc
// takes it (dev_queue_xmit), reports it when the driver took it (dev_hard_start_xmit and
// the noqueue path) and when it is freed as a drop (kfree_skb_reason). With no tracer
// each hook is one test of a null pointer.
//
// TraceWriter writes the records as JSON Lines through a fixed buffer (no allocation per
// packet) and, at the end, a summary per device and class, one per device over its
// classes, and an end record.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/drop_reason.h"
#include "core/packet.h"
#include "core/spinlock.h"

namespace pktpath {

class Cpu;
class NetDevice;

// What a sent record needs, read before the driver takes (and frees) the packet.
struct TraceTx {
  const NetDevice* dev = nullptr;
  uint32_t len = 0;
  uint64_t enqueue_ns = 0;
  uint16_t tc_class = 0;
  bool ce = false;  // its IP header says Congestion Experienced (ECN-marked)
};

class PacketTrace {
 public:
  virtual ~PacketTrace() = default;
  virtual void sent(Cpu& cpu, const TraceTx& tx) = 0;
  virtual void dropped(Cpu& cpu, const Packet& p, DropReason r) = 0;
};

// The enqueue stamp: the time on `cpu`'s clock, no class yet.
void trace_enqueue_stamp(Cpu& cpu, Packet& p);
TraceTx trace_tx_capture(const Packet& p, const NetDevice& dev);
// INET_ECN_is_ce on the packet's IPv4 or IPv6 header (Ethernet, one VLAN tag at most).
bool packet_is_ce(const Packet& p);

class TraceWriter final : public PacketTrace {
 public:
  // bin_ns: the width of the summary's throughput bins.
  explicit TraceWriter(std::FILE* out, uint64_t bin_ns = 10'000'000);
  ~TraceWriter() override;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void sent(Cpu& cpu, const TraceTx& tx) override;
  void dropped(Cpu& cpu, const Packet& p, DropReason r) override;
  // The summaries and the end record (`queued`: packets the qdiscs still hold at
  // `now_ns`), then everything written out; later reports are ignored. False if a
  // write failed.
  bool finish(uint64_t now_ns, uint64_t queued);
  uint64_t records() const { return sent_ + dropped_; }

  // A sojourn histogram's buckets: exact below 128 ns, then 128 per power of two, so a
  // bucket's largest value is within 1/128 (0.8 %) of any value in it.
  static constexpr unsigned kSub = 128;
  static constexpr unsigned kBuckets = kSub + (64 - 7) * kSub;
  static unsigned bucket_of(uint64_t ns);
  static uint64_t bucket_top(unsigned b);  // the largest value in bucket b

 private:
  struct ClassStats {
    const NetDevice* dev = nullptr;
    std::string dev_name, cls;
    uint32_t classid = 0;
    uint64_t sent = 0, dropped = 0, bytes = 0, ce = 0, max_sojourn = 0;
    std::array<uint64_t, kDropReasonCount> drops{};  // by reason
    std::array<uint64_t, kBuckets> hist{};
    uint64_t bin_ns = 0;              // the bins' width: bin_ns_, doubled while too many
    std::vector<uint64_t> bin_bytes;  // bytes sent per bin from t0_
  };
  static constexpr uint64_t kMaxBins = 1 << 16;
  static uint64_t widen_bins(ClassStats& c, uint64_t bin);
  static void add_to_device(ClassStats& d, const ClassStats& c);
  void summary_body(const ClassStats& c, uint64_t t0);
  ClassStats& stats_for(const NetDevice* dev, uint16_t tc_class);
  void record_head(uint64_t t, const NetDevice* dev, uint32_t len, const char* verdict);
  void record_class(const ClassStats& c, uint64_t qlen);
  void put(const char* s, size_t n);
  void put(const char* s);
  void put(const std::string& s) { put(s.data(), s.size()); }
  void put_u64(uint64_t v);
  void flush();

  std::FILE* out_;
  uint64_t bin_ns_;
  uint64_t t0_ = UINT64_MAX;  // the first record's time
  uint64_t sent_ = 0, dropped_ = 0;
  bool failed_ = false;
  bool closed_ = false;
  SpinLock lock_;  // Cpus of several threads may report
  std::vector<ClassStats> classes_;
  size_t len_ = 0;
  static constexpr size_t kBuf = 1 << 16;
  std::array<char, kBuf> buf_;
};

}  // namespace pktpath
