// NetDevice: pktpath's struct net_device, with its transmit queues (netdev_queue) and the
// driver ops table (net_device_ops).
//
// Concurrency contract:
//  - Configuration (name, MTU, queue counts, qdisc pointers, up/down) is changed only by
//    the control thread while no datapath thread transmits on the device (the script
//    runner's lines run one after the other; traffic threads are joined in between).
//    The tc/netfilter hook pointers below are the exception: they change under traffic.
//  - TxQueue::state (stopped) is atomic: drivers stop a queue from the xmit path, any
//    thread may wake it (netif_tx_wake_queue schedules the queue's qdisc on the waker's Cpu).
//  - Per-Cpu statistics are single-writer per Cpu slot; any thread may read the sums.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/compiler.h"
#include "core/counter.h"
#include "core/cpu.h"
#include "core/percpu.h"
#include "core/result.h"
#include "core/packet.h"
#include "core/spinlock.h"
#include "netfilter/nf_hooks.h"

namespace pktpath {

namespace tc {
struct Miniq;  // sched/clsact.h: the published filter list of one clsact direction
}

class Qdisc;
class NetDevice;
class Net;  // core/net.h: the namespace the device belongs to
struct TapList;  // core/tap.h: the published taps of a device (dev->ptype_all)

// What start_xmit returns (netdev_tx_t).
enum class NetdevTx : int { OK = 0, BUSY = 0x10 };

// Device flags (IFF_* and priv_flags bits we use).
inline constexpr uint32_t IFF_UP = 1u << 0;
inline constexpr uint32_t IFF_NO_QUEUE = 1u << 1;  // default qdisc is noqueue (priv_flags)
inline constexpr uint32_t NETIF_F_LLTX = 1u << 2;  // driver does its own locking: no tx lock
inline constexpr uint32_t IFF_LOOPBACK = 1u << 3;  // the Net's lo

inline constexpr unsigned kMaxTxQueues = 64;

// One transmit queue (netdev_queue).
struct alignas(kCacheLine) TxQueue {
  static constexpr uint32_t kDrvXoff = 1u << 0;  // __QUEUE_STATE_DRV_XOFF

  NetDevice* dev = nullptr;
  Qdisc* qdisc = nullptr;  // the qdisc packets for this queue go to (txq->qdisc)
  uint16_t index = 0;
  std::atomic<uint32_t> state{0};
  SpinLock xmit_lock;  // HARD_TX_LOCK, for drivers without NETIF_F_LLTX
  // Bytes a bulk dequeue may pull for this queue (stand-in for BQL's dql_avail). 0, as for
  // a device that does not use BQL (dummy), means one packet per dequeue.
  uint32_t bulk_bytes = 0;

  bool stopped() const { return state.load(std::memory_order_acquire) & kDrvXoff; }
};

// Driver ops table (net_device_ops). open/stop/select_queue may be null.
struct DevStatsSum;

struct NetDeviceOps {
  int (*open)(NetDevice& dev) = nullptr;
  void (*stop)(NetDevice& dev) = nullptr;
  // ndo_start_xmit: OK consumes the packet (transmitted or freed by the driver); BUSY
  // leaves it with the caller, which requeues it.
  NetdevTx (*start_xmit)(Cpu& cpu, Packet* p, NetDevice& dev, TxQueue& txq) = nullptr;
  // ndo_select_queue: a queue index (folded into real_num_tx_queues by the caller).
  uint16_t (*select_queue)(NetDevice& dev, Packet* p, Cpu& cpu) = nullptr;
  // ndo_get_stats64: the counters as the device reports them, where they are not just its
  // own per-Cpu sums (a veth's rx is its peer's tx, lo's rx its tx). May be null.
  DevStatsSum (*get_stats64)(const NetDevice& dev) = nullptr;
  // ndo_change_mtu: the driver takes the new MTU (a tap sets its kernel interface's),
  // or refuses it. Called before the device's own MTU changes. May be null.
  Status (*change_mtu)(NetDevice& dev, uint32_t mtu) = nullptr;
};

// The RPS map of a device's receive queue (rx-0's rps_cpus, struct rps_map): the Cpus
// netif_rx spreads flows onto, by flow hash.
struct RpsMap {
  uint64_t mask = 0;        // as written: bit i = the runner's datapath Cpu i
  std::vector<Cpu*> cpus;   // the Cpus of the set bits, in bit order
};

// Driver-private state hangs off the device (netdev_priv).
struct DriverState {
  virtual ~DriverState() = default;
};

// Per-Cpu device counters (pcpu_sw_netstats + tx_dropped), one cache line per Cpu
// (core/percpu.h: only Cpus that count cost memory).
struct alignas(kCacheLine) DevCpuStats {
  Counter tx_packets;
  Counter tx_bytes;
  Counter tx_dropped;
  Counter rx_packets;  // counted by the driver as it takes a frame in, whatever the stack then does
  Counter rx_bytes;
  Counter rx_dropped;
};

struct DevStatsSum {
  uint64_t tx_packets = 0, tx_bytes = 0, tx_dropped = 0;
  uint64_t rx_packets = 0, rx_bytes = 0, rx_dropped = 0;
};

// Owner of a device's hook configuration on the writer side (sched/clsact.cc); the
// device destroys it with itself.
struct DevHooksState {
  virtual ~DevHooksState() = default;
};

// The egress hook point (tc egress and netfilter egress attach here).
// Returns the packet to continue with it, or nullptr when the hook consumed it (and
// accounted for it: freed with a reason, redirected, stolen).
using EgressHookFn = Packet* (*)(Cpu& cpu, Packet* p, NetDevice& dev, void* ctx);

// mirrors dev_queue_xmit_nit: hand a packet the driver is about to get to the device's
// taps (core/tap.cc). Callers test NetDevice::has_taps() first.
void dev_queue_xmit_nit(Cpu& cpu, const Packet& p, NetDevice& dev);

class NetDevice {
 public:
  struct Config {
    std::string name;
    uint16_t num_tx_queues = 1;
    uint32_t tx_queue_len = 1000;
    uint32_t mtu = 1500;
    std::array<uint8_t, 6> mac{};
    bool mac_set = false;
  };

  NetDevice(const Config& cfg, const NetDeviceOps* ops, uint32_t flags);
  ~NetDevice();
  NetDevice(const NetDevice&) = delete;
  NetDevice& operator=(const NetDevice&) = delete;

  // --- identity and configuration.
  const std::string& name() const { return name_; }
  int ifindex() const { return ifindex_; }
  void set_ifindex(int i) { ifindex_ = i; }
  const std::array<uint8_t, 6>& mac() const { return mac_; }
  void set_mac(const std::array<uint8_t, 6>& m) { mac_ = m; }
  uint32_t mtu() const { return mtu_; }
  void set_mtu(uint32_t m) { mtu_ = m; }
  // mirrors dev_set_mtu: the driver's change_mtu first (its refusal leaves the MTU as it was).
  Status change_mtu(uint32_t m);
  uint32_t tx_queue_len() const { return tx_queue_len_; }
  void set_tx_queue_len(uint32_t n) { tx_queue_len_ = n; }
  // IFF_PROMISC as `ip link set promisc on|off` sets it (shown; pktpath's receive path
  // does not filter by destination address).
  bool promisc() const { return promisc_; }
  void set_promisc(bool on) { promisc_ = on; }
  // netif_carrier_ok / netif_carrier_on|off: a driver whose lower link is gone takes the
  // carrier away (from any thread); senders such as pktgen stop on it.
  bool carrier_ok() const { return !no_carrier_.load(std::memory_order_relaxed); }
  void set_carrier(bool on) { no_carrier_.store(!on, std::memory_order_relaxed); }
  // Relaxed: a NAPI thread may receive on the device while the control thread sets it
  // up (frames arrive once the driver's open returns, before IFF_UP is set after it).
  uint32_t flags() const { return flags_.load(std::memory_order_relaxed); }
  bool is_up() const { return flags() & IFF_UP; }
  bool lltx() const { return flags() & NETIF_F_LLTX; }
  const NetDeviceOps& ops() const { return *ops_; }
  // dev_net: the namespace the device is in (set by its DeviceTable).
  Net& net() const { return *net_; }
  void set_net(Net* n) { net_ = n; }

  // --- transmit queues.
  uint16_t num_tx_queues() const { return num_tx_queues_; }
  uint16_t real_num_tx_queues() const { return real_num_tx_queues_; }
  bool set_real_num_tx_queues(uint16_t n);  // 1..num_tx_queues
  TxQueue& txq(uint16_t i) { return txqs_[i]; }

  // netif_tx_stop_queue / netif_tx_wake_queue. Wake schedules the queue's qdisc on `cpu`
  // so that packets it holds go out (__netif_schedule).
  static void tx_stop_queue(TxQueue& q) {
    q.state.fetch_or(TxQueue::kDrvXoff, std::memory_order_acq_rel);
  }
  static void tx_wake_queue(Cpu& cpu, TxQueue& q);
  void tx_stop_all();
  void tx_wake_all(Cpu& cpu);

  // --- root qdisc (dev->qdisc). Owned by the device; txq(i).qdisc points into it.
  Qdisc* qdisc() const { return qdisc_.get(); }
  // Installs `q` as the root (qdisc_graft at the root): points every tx queue at it, or
  // at its per-queue children for mq. Returns the old root, for the caller to retire.
  std::unique_ptr<Qdisc> graft_root(std::unique_ptr<Qdisc> q);
  // Re-point the tx queues after the root's children changed (mq graft).
  void attach_queues();
  // Whether the root was chosen by attach_default_qdiscs (replaced on the next `up`).
  bool root_is_default() const { return root_is_default_; }
  void set_root_is_default(bool d) { root_is_default_ = d; }

  // --- up/down (dev_open / dev_close); see DeviceTable for the qdisc side.
  void set_flag(uint32_t f, bool on) {
    if (on) flags_.fetch_or(f, std::memory_order_relaxed);
    else flags_.fetch_and(~f, std::memory_order_relaxed);
  }

  // --- egress hook: one predictable branch in dev_queue_xmit when nothing is attached.
  // Atomic because hooks may be attached while senders run; the relaxed load
  // is a plain load on x86. set_egress_hook publishes ctx before fn.
  EgressHookFn egress_hook() const { return egress_hook_.load(std::memory_order_acquire); }
  void* egress_ctx() const { return egress_ctx_.load(std::memory_order_relaxed); }
  void set_egress_hook(EgressHookFn fn, void* ctx) {
    egress_ctx_.store(ctx, std::memory_order_relaxed);
    egress_hook_.store(fn, std::memory_order_release);
  }

  // --- tc clsact and netfilter hook heads (dev->miniq_egress/miniq_ingress,
  // nf_hooks_egress/nf_hooks_ingress), RCU-published; see sched/clsact.h.
  std::atomic<const tc::Miniq*>& tc_egress() { return tc_egress_; }
  std::atomic<const tc::Miniq*>& tc_ingress() { return tc_ingress_; }
  nf::NfDeviceHooks& nf_hooks() { return nf_hooks_; }
  DevHooksState* hooks_state() const { return hooks_state_.get(); }

  // --- packet taps (capture; core/tap.h), RCU-published like the tc heads. has_taps()
  // is the one predictable branch the transmit path pays while nothing is attached.
  const TapList* taps() const { return taps_.load(std::memory_order_acquire); }
  bool has_taps() const { return taps_.load(std::memory_order_relaxed) != nullptr; }
  std::atomic<const TapList*>& taps_head() { return taps_; }
  void set_hooks_state(std::unique_ptr<DevHooksState> s) { hooks_state_ = std::move(s); }

  // --- receive steering (RPS). Changed only while no traffic runs on the device.
  const RpsMap* rps_map() const { return rps_map_.get(); }
  void set_rps_map(std::unique_ptr<RpsMap> m) { rps_map_ = std::move(m); }

  // --- threaded NAPI (/sys/class/net/D/threaded, dev_set_threaded): where set, the
  // receiving driver's NAPI instances are polled by this datapath Cpu, a thread of its
  // own, instead of the Cpu of the thread that set the device up. Read at up. The
  // thread is given once and kept while threading is off (napi_kthread_create runs only
  // for an instance without a thread), so turning it on again reuses it.
  Cpu* napi_thread() const { return threaded_ ? napi_thread_ : nullptr; }
  Cpu* napi_kept_thread() const { return napi_thread_; }
  void set_napi_thread(Cpu* c) { napi_thread_ = c; }
  void set_threaded(bool on) { threaded_ = on && napi_thread_ != nullptr; }
  // The Cpu that polls an instance the device opens from a thread driving `current`.
  Cpu* napi_cpu(Cpu* current) const { return threaded_ ? napi_thread_ : current; }

  // --- statistics.
  DevCpuStats& stats(const Cpu& cpu) { return pcpu_.at(cpu.id()); }
  DevStatsSum stats_sum() const;
  // mirrors dev_get_stats: the driver's get_stats64 where it has one, else stats_sum().
  DevStatsSum get_stats64() const;

  // --- driver state.
  DriverState* priv() const { return priv_.get(); }
  void set_priv(std::unique_ptr<DriverState> p) { priv_ = std::move(p); }

 private:
  // Hot fields first: dev_queue_xmit reads these.
  std::atomic<EgressHookFn> egress_hook_{nullptr};
  std::atomic<void*> egress_ctx_{nullptr};
  const NetDeviceOps* ops_;
  TxQueue* txqs_;
  uint16_t num_tx_queues_;
  uint16_t real_num_tx_queues_;
  std::atomic<uint32_t> flags_;  // written by the control thread only
  std::atomic<const TapList*> taps_{nullptr};  // beside flags_: read with it on both paths
  uint32_t mtu_;
  uint32_t tx_queue_len_;
  bool promisc_ = false;
  std::atomic<bool> no_carrier_{false};
  int ifindex_ = 0;
  Net* net_ = nullptr;
  std::array<uint8_t, 6> mac_{};
  bool root_is_default_ = true;
  std::string name_;
  std::unique_ptr<TxQueue[]> txq_storage_;
  PerCpu<DevCpuStats, kMaxCpus> pcpu_;  // made per block of Cpus on first count
  std::unique_ptr<Qdisc> qdisc_;
  std::unique_ptr<DriverState> priv_;
  std::unique_ptr<RpsMap> rps_map_;
  Cpu* napi_thread_ = nullptr;
  bool threaded_ = false;
  std::atomic<const tc::Miniq*> tc_egress_{nullptr};
  std::atomic<const tc::Miniq*> tc_ingress_{nullptr};
  nf::NfDeviceHooks nf_hooks_{this};
  // Last member: destroyed first, while the heads above still exist.
  std::unique_ptr<DevHooksState> hooks_state_;
};

}  // namespace pktpath
