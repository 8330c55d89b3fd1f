// Packet taps: the ptype_all delivery of the kernel as seen by a packet socket (tcpdump).
//
// A tap is attached to one device, or to every device of a Net (tcpdump -i any: a socket
// bound to no device, on the Net's ptype_all; tap_attach_all). It sees every packet received on the device (from
// netif_receive_skb, before tc ingress, as __netif_receive_skb_core delivers to
// dev->ptype_all) and every packet the device transmits (just before the driver gets it,
// as xmit_one calls dev_queue_xmit_nit). It runs its optional classic BPF filter
// (af_packet's run_filter), and hands what passes to its consumer: a pcap file written
// with libpcap, or only a count. A tap never takes, changes or frees the packet: the
// packet goes on exactly as without it.
//
// Read side: the datapath loads NetDevice::taps() (a TapList, immutable once published)
// and uses it and its taps until the thread's next RCU quiescent state (core/rcu.h:
// the same liburcu QSBR domain as tc and netfilter). No lock and no allocation per packet,
// except the tap's file lock when it writes a pcap file (the kernel takes the socket's
// receive-queue lock at the same point).
// Write side: tap_attach / tap_detach / tap_set_bpf_engine take the device's Net's tap
// mutex (taps are per Net), publish a new
// TapList and wait for a grace period before freeing what they replaced.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/insn.h"
#include "bpf/program.h"
#include "core/bpf_engine.h"
#include "core/counter.h"
#include "core/cpu.h"
#include "core/netdevice.h"
#include "core/packet.h"
#include "core/spinlock.h"

namespace pktpath {

inline constexpr uint32_t kTapDefaultSnaplen = 262144;  // tcpdump's default (-s 0 too)
inline constexpr int kTapLinkEthernet = 1;   // DLT_EN10MB
inline constexpr int kTapLinkCooked = 113;   // DLT_LINUX_SLL: tcpdump -i any
inline constexpr uint32_t kSllHeaderLen = 16;

// -Q: the packets a tap is offered (pcap_setdirection); a bit per direction.
enum class TapDirection : uint8_t { In = 1, Out = 2, InOut = 3 };

// What `capture -i DEV [-c N] [-s SNAPLEN] [-w FILE] [filter]` asks for.
struct TapSpec {
  uint32_t snaplen = kTapDefaultSnaplen;
  uint64_t count = 0;     // -c: stop capturing after this many; 0 = no limit
  bool has_filter = false;
  bpf::Insns insns;       // the compiled filter when has_filter (for `linktype`)
  std::string filter;     // its source, for reports
  std::string pcap_path;  // -w: empty = count only; "-" = standard output
  TapDirection direction = TapDirection::InOut;
  // kTapLinkEthernet, or kTapLinkCooked: the file holds Linux cooked (SLL) records and
  // the filter, compiled for DLT_LINUX_SLL, runs on the network header as the kernel
  // runs it on a SOCK_DGRAM socket (libpcap's fix_program).
  int linktype = kTapLinkEthernet;
  bool packet_buffered = false;  // -U: the file is flushed after every packet
};

// tcpdump's closing counts (plus what the tap saw at all).
struct TapCounts {
  uint64_t seen = 0;                // packets the tap was offered (filter runs)
  uint64_t received_by_filter = 0;  // passed the filter (tp_packets + tp_drops)
  uint64_t captured = 0;            // handed to the consumer (written, or counted)
  uint64_t dropped = 0;             // passed the filter but not captured (tp_drops)
  // -w: the first write error (errno; 0: none). Packets whose bytes were lost with it
  // count as dropped, not captured.
  int write_errno = 0;
};

struct alignas(kCacheLine) TapCpuStats {
  Counter seen, passed, captured, dropped;
};

class Tap {
 public:
  ~Tap();
  Tap(const Tap&) = delete;
  Tap& operator=(const Tap&) = delete;

  const TapSpec& spec() const { return spec_; }
  // The device it is attached to; nullptr once detached, the device is gone, or for a
  // tap on every device.
  NetDevice* device() const { return dev_; }
  TapCounts counts() const;
  // The engine the filter runs on (nullopt without a filter).
  const bpf::Program* program() const { return prog_.load(std::memory_order_acquire); }

  // One packet on this tap (packet_rcv for a single socket). Used by dev_taps_deliver.
  void deliver(Cpu& cpu, const Packet& p, bool outgoing) const;

 private:
  // The writer side (tap.cc), under its mutex.
  friend struct TapAccess;
  friend std::shared_ptr<Tap> tap_attach(NetDevice& dev, TapSpec spec, std::string* err);
  friend std::shared_ptr<Tap> tap_attach_all(Net& net, TapSpec spec, std::string* err);
  friend TapCounts tap_detach(const std::shared_ptr<Tap>& tap);
  friend void tap_device_gone(NetDevice& dev);
  friend bool tap_set_bpf_engine(Net& net, const BpfLoadConfig& cfg, std::string* err);
  Tap() = default;
  bool write_pcap(const Packet& p, uint32_t snap, bool outgoing) const;
  bool flush_locked() const;  // write_lock_ held

  TapSpec spec_;
  NetDevice* dev_ = nullptr;
  Net* all_net_ = nullptr;  // tap_attach_all: on every device of this Net until detached
  std::atomic<const bpf::Program*> prog_{nullptr};
  std::unique_ptr<const bpf::Program> owned_;  // what prog_ points to (writer side)
  std::unique_ptr<TapCpuStats[]> stats_;
  mutable std::atomic<uint64_t> claimed_{0};  // -c: captures handed out so far
  // -w: libpcap's dumper (buffered stdio, like tcpdump), one writer at a time.
  mutable SpinLock write_lock_;
  void* pcap_ = nullptr;    // pcap_t* of pcap_open_dead
  void* dumper_ = nullptr;  // pcap_dumper_t*
  std::unique_ptr<char[]> write_buf_;  // dumper_'s stdio buffer (glibc ignores a size without one)
  std::unique_ptr<uint8_t[]> copy_buf_;  // snapshot of a packet with fragments, or cooked
  uint32_t copy_buf_len_ = 0;
  // Write accounting under write_lock_: the tap flushes the file's buffer itself before
  // it would overflow, so it knows which packets a failed write lost.
  mutable uint64_t pending_bytes_ = 0;    // in the stdio buffer, not yet written
  mutable uint64_t pending_packets_ = 0;  // packets among them
  mutable uint64_t lost_ = 0;             // counted captured, but their write failed
  mutable int write_errno_ = 0;
};

// The published set of taps of one device (dev->ptype_all).
struct TapList {
  std::vector<const Tap*> taps;
};

// Out of line: the datapath only tests NetDevice::taps() for null inline.
// mirrors deliver_skb over dev->ptype_all (receive) / dev_queue_xmit_nit (transmit).
void dev_taps_deliver(Cpu& cpu, const Packet& p, const TapList& list, bool outgoing);

// Attach a tap: compiles nothing (spec.insns is already compiled), loads the filter on
// the device's Net's engine (net_bpf_config), opens the pcap file. nullptr with *err on failure (nothing attached).
std::shared_ptr<Tap> tap_attach(NetDevice& dev, TapSpec spec, std::string* err);
// A tap on every device of `net`, present and future (a device gets it when it comes up):
// tcpdump -i any. Same spec; spec.linktype is normally kTapLinkCooked.
std::shared_ptr<Tap> tap_attach_all(Net& net, TapSpec spec, std::string* err);
// Detach (idempotent): unpublish, wait for the readers, flush and close the file.
// Returns the final counts.
TapCounts tap_detach(const std::shared_ptr<Tap>& tap);
// Taps attached to a device, in attach order.
std::vector<std::shared_ptr<Tap>> tap_list(NetDevice& dev);
// The device is being destroyed (no reader can run on it): unpublish its taps.
void tap_device_gone(NetDevice& dev);
// Reload the filter of every tap attached in `net` (registered with core/bpf_engine.h's
// switch).
bool tap_set_bpf_engine(Net& net, const BpfLoadConfig& cfg, std::string* err);

}  // namespace pktpath
