// Qdisc: the queueing discipline base (struct Qdisc + Qdisc_ops in one class).
//
// A discipline is a subclass in its own sch_<kind>.cc that overrides the small ops
// interface (enqueue, dequeue, peek, reset, init/change, dump) and registers itself by
// its tc name with a QdiscRegistrar (register_qdisc); the transmit path (dev_xmit.cc,
// sch_generic.cc) only sees this base.
//
// Locking rules (as in Linux):
//  - A qdisc without TCQ_F_NOLOCK is "locked": enqueue, dequeue, peek, reset and its
//    statistics are called/updated with root_lock() held.
//  - A TCQ_F_NOLOCK qdisc (pfifo_fast) takes enqueue from any number of threads at once
//    without a lock; dequeue/peek are called only by the one thread that won
//    qdisc_run_begin (the seqlock). Its statistics are per Cpu.
//  - Either way exactly one thread dequeues at a time (qdisc_run_begin/end). A NOLOCK
//    sender that loses qdisc_run_begin sets MISSED; the runner sees MISSED in
//    qdisc_run_end and schedules the qdisc again, so no packet is stranded.
//  - reset/init/change/graft run on the control thread with no traffic (see NetDevice).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/compiler.h"
#include "core/counter.h"
#include "core/cpu.h"
#include "core/packet.h"
#include "core/result.h"
#include "core/spinlock.h"
#include "sched/qdisc_options.h"

namespace pktpath {

class NetDevice;
struct TxQueue;
namespace tc {
struct FilterBlock;
}

// Qdisc flags (TCQ_F_*), kernel values where the kernel has the flag.
inline constexpr uint32_t TCQ_F_BUILTIN = 0x1;
inline constexpr uint32_t TCQ_F_CAN_BYPASS = 0x4;
inline constexpr uint32_t TCQ_F_MQROOT = 0x8;
inline constexpr uint32_t TCQ_F_ONETXQUEUE = 0x10;  // all packets go to dev_queue: may bulk
inline constexpr uint32_t TCQ_F_CPUSTATS = 0x20;
inline constexpr uint32_t TCQ_F_NOLOCK = 0x100;
// pktpath: the qdisc has no enqueue (noqueue); the kernel tests q->enqueue == NULL.
inline constexpr uint32_t TCQ_F_NOENQUEUE = 0x10000;

// enqueue return codes (NET_XMIT_*).
inline constexpr int NET_XMIT_SUCCESS = 0;
inline constexpr int NET_XMIT_DROP = 1;
inline constexpr int NET_XMIT_CN = 2;
inline constexpr int NET_XMIT_MASK = 0x0f;  // what leaves the root: the code without the bits below
// The kernel's __NET_XMIT_STOLEN and __NET_XMIT_BYPASS, or'ed into NET_XMIT_SUCCESS by a
// child that did not queue the packet: a parent queues nothing for it, and counts a drop
// unless it was stolen (consumed by an action).
inline constexpr int NET_XMIT_STOLEN_BIT = 0x00010000;
inline constexpr int NET_XMIT_BYPASS_BIT = 0x00020000;
// mirrors net_xmit_drop_count
inline constexpr bool net_xmit_drop_count(int rc) { return (rc & NET_XMIT_STOLEN_BIT) == 0; }

// q->state bits.
inline constexpr uint32_t QDISC_STATE_SCHED = 1u << 0;        // on some Cpu's tx work list
inline constexpr uint32_t QDISC_STATE_DEACTIVATED = 1u << 1;  // link down / being replaced
inline constexpr uint32_t QDISC_STATE_MISSED = 1u << 2;       // a sender lost run_begin
inline constexpr uint32_t QDISC_STATE_DRAINING = 1u << 3;     // holds packets for a stopped txq
inline constexpr uint32_t QDISC_STATE_NON_EMPTY = QDISC_STATE_MISSED | QDISC_STATE_DRAINING;

// Statistics block: gnet_stats_basic + gnet_stats_queue. backlog/qlen take wrapping
// decrements; only the sum over blocks is meaningful for a per-Cpu qdisc.
struct alignas(kCacheLine) QdiscStatsBlock {
  Counter packets, bytes, drops, overlimits, requeues, backlog, qlen;
  Counter bypassed;  // packets sent by the bypass (not a tc field; for tests and A/B)
};

struct QdiscStats {
  uint64_t packets = 0, bytes = 0, drops = 0, overlimits = 0, requeues = 0;
  uint64_t backlog = 0, qlen = 0;
  uint64_t bypassed = 0;
  QdiscStats& operator+=(const QdiscStats& o);
};

// One class of a classful qdisc as its dump_class / dump_class_stats report it.
struct QdiscClassInfo {
  uint32_t classid = 0;
  uint32_t parent = 0;       // 0xffffffff (TC_H_ROOT) for a class at the top
  uint32_t leaf_handle = 0;  // tcm_info: the leaf qdisc's handle; 0 for none or a default
  KindOptions opts;          // the kind's class options
  QdiscStats stats;
  QdiscXstats xstats;
  bool has_stats = true;     // false: the kind keeps no class counters (no cl_ops->dump_stats)
};

class Qdisc : public CpuWork {
 public:
  explicit Qdisc(const char* kind, uint32_t flags);
  ~Qdisc() override;
  Qdisc(const Qdisc&) = delete;
  Qdisc& operator=(const Qdisc&) = delete;

  // ---- the ops interface (Qdisc_ops).
  // Takes ownership of p. NET_XMIT_SUCCESS, or NET_XMIT_DROP after putting p (or another
  // victim) on to_free; the caller frees to_free with QDISC_DROP.
  virtual int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) = 0;
  virtual Packet* dequeue(Cpu& cpu) = 0;
  virtual Packet* peek(Cpu& cpu) = 0;
  // Drop everything queued (counted on `cpu` under QDISC_DROP) and zero qlen/backlog.
  virtual void reset(Cpu& cpu) = 0;
  // init/change from typed options; an error on bad options (nothing changed).
  virtual Status init(NetDevice& dev, const QdiscOptions& opts);
  virtual Status change(NetDevice& dev, const QdiscOptions& opts) { return init(dev, opts); }
  // The options as the kind's typed struct (ops->dump filling TCA_OPTIONS); empty for a
  // kind without options. The CLI's tc/q_<kind>.cc prints them.
  virtual QdiscOptions dump() const { return {}; }
  virtual QdiscStats stats() const;
  // Kind-specific statistics (ops->dump_stats' gnet_stats_copy_app) as the kind's typed
  // struct, or empty; `now_ns` is the reader's clock (codel reports drop_next against it).
  virtual QdiscXstats xstats(uint64_t now_ns) const {
    (void)now_ns;
    return {};
  }

  // Classful disciplines: children by class minor (1-based), graft replaces one and
  // returns the old child. attach() points the device's tx queues at this qdisc (or, for
  // mq, at its children).
  virtual Qdisc* child(uint32_t minor) const {
    (void)minor;
    return nullptr;
  }
  virtual unsigned num_children() const { return 0; }
  // The i-th child (0-based) for walks over the tree; kinds whose class minors are sparse
  // (htb) override it.
  virtual Qdisc* child_at(unsigned i) const { return child(i + 1); }
  virtual Result<std::unique_ptr<Qdisc>> graft(NetDevice& dev, uint32_t minor, std::unique_ptr<Qdisc> q);
  virtual void attach(NetDevice& dev);

  // ---- classes (Qdisc_class_ops: find, change, delete, dump); classless kinds refuse.
  virtual bool class_find(uint32_t classid) const {
    (void)classid;
    return false;
  }
  // Creates the class or changes it; `warn` gets what the kernel would log.
  // `cpu` is the configuring thread's (its clock starts the buckets, drops count on it).
  virtual Status class_change(NetDevice& dev, Cpu& cpu, uint32_t parentid, uint32_t classid, const KindOptions& opts,
                              std::string& warn);
  // Drops what the class holds (counted on `cpu`) and removes it.
  virtual Status class_delete(NetDevice& dev, Cpu& cpu, uint32_t classid);
  virtual std::vector<QdiscClassInfo> class_dump(uint64_t now_ns) const {
    (void)now_ns;
    return {};
  }
  // The qdisc's own filter list (its tcf_block) for `tc filter ... parent MAJ:`;
  // nullptr for a kind that takes no filters.
  virtual tc::FilterBlock* filter_block() { return nullptr; }
  // A class's own filter list (`tc filter ... parent MAJ:MIN`, the class's tcf_block),
  // nullptr when the class does not exist or its kind keeps none.
  virtual tc::FilterBlock* class_filter_block(uint32_t classid) {
    (void)classid;
    return nullptr;
  }

  // ---- identity.
  const char* kind() const { return kind_; }
  uint32_t flags() const { return flags_; }
  void set_flags(uint32_t f) { flags_ = f; }
  uint32_t handle() const { return handle_; }
  void set_handle(uint32_t h) { handle_ = h; }
  uint32_t parent() const { return parent_; }
  void set_parent(uint32_t p) { parent_ = p; }
  // The qdisc this one is a child of (set by the parent), for qdisc_tree_reduce_backlog;
  // nullptr at the root and under mq (TCQ_F_NOPARENT).
  Qdisc* parent_qdisc() const { return parent_q_; }
  void set_parent_qdisc(Qdisc* q) { parent_q_ = q; }
  NetDevice* dev() const { return dev_; }
  TxQueue* dev_queue() const { return dev_queue_; }
  void set_dev_queue(NetDevice* d, TxQueue* q) {
    dev_ = d;
    dev_queue_ = q;
  }

  // ---- run control (qdisc_run_begin / qdisc_run_end), see the locking rules above.
  // Locked qdiscs: called with root_lock() held.
  PP_ALWAYS_INLINE bool run_begin() {
    if (flags_ & TCQ_F_NOLOCK) {
      if (seq_try_lock()) return true;
      // Someone else runs: tell them to look again. If MISSED was already set they will.
      if (state_.fetch_or(QDISC_STATE_MISSED, std::memory_order_seq_cst) & QDISC_STATE_MISSED)
        return false;
      // Retry so that either we run, or the runner's run_end sees our MISSED.
      return seq_try_lock();
    }
    if (running_) return false;
    running_ = true;
    return true;
  }
  PP_ALWAYS_INLINE void run_end(Cpu& cpu) {
    if (flags_ & TCQ_F_NOLOCK) {
      // Store-load ordering between the unlock and the MISSED test: a full barrier. The
      // exchange is the barrier (a locked instruction on x86) and tsan understands it.
      seqlock_.exchange(false, std::memory_order_seq_cst);
      if (PP_UNLIKELY(state_.load(std::memory_order_seq_cst) & QDISC_STATE_MISSED)) schedule(cpu);
      return;
    }
    running_ = false;
  }
  bool is_running() const { return running_; }

  // __netif_schedule: put the qdisc on `cpu`'s tx work list unless it is on one already.
  void schedule(Cpu& cpu) {
    if (!(state_.fetch_or(QDISC_STATE_SCHED, std::memory_order_acq_rel) & QDISC_STATE_SCHED))
      cpu.schedule_work(this);
  }
  // net_tx_action for this qdisc (CpuWork).
  void run(Cpu& cpu) override;

  std::atomic<uint32_t>& state() { return state_; }
  bool deactivated() const {
    return state_.load(std::memory_order_acquire) & QDISC_STATE_DEACTIVATED;
  }
  // nolock_qdisc_is_empty: nothing is queued unless MISSED or DRAINING is set (or a run
  // is in progress, which run_begin detects).
  bool nolock_is_empty() const {
    return !(state_.load(std::memory_order_acquire) & QDISC_STATE_NON_EMPTY);
  }
  uint64_t qlen_locked() const { return stats_.qlen.get(); }  // root lock held
  uint64_t qlen() const { return stats().qlen; }

  SpinLock& root_lock() { return lock_; }

  // ---- requeued packets (q->gso_skb). Locked: root lock; NOLOCK: lock_ guards the list,
  // requeued_ may be read without it.
  PacketList gso_list;
  std::atomic<uint32_t> requeued{0};

  // ---- statistics helpers (qdisc_qstats_* / qdisc_bstats_*).
  QdiscStatsBlock& st(const Cpu& cpu) {
    return PP_LIKELY(pcpu_ == nullptr) ? stats_ : pcpu_[cpu.id()];
  }
  PP_ALWAYS_INLINE void stats_enqueued(const Cpu& cpu, const Packet* p) {
    QdiscStatsBlock& s = st(cpu);
    s.qlen.add(1);
    s.backlog.add(p->len);
  }
  PP_ALWAYS_INLINE void stats_dequeued(const Cpu& cpu, const Packet* p) {
    QdiscStatsBlock& s = st(cpu);
    s.qlen.add(~uint64_t{0});
    s.backlog.add(-uint64_t{p->len});
    s.packets.add(1);
    s.bytes.add(p->len);
  }
  PP_ALWAYS_INLINE void stats_sent_direct(const Cpu& cpu, const Packet* p) {
    QdiscStatsBlock& s = st(cpu);
    s.packets.add(1);
    s.bytes.add(p->len);
    s.bypassed.add(1);
  }
  void stats_dropped(const Cpu& cpu, uint64_t n = 1) { st(cpu).drops.add(n); }
  // mirrors qdisc_tree_reduce_backlog: `n` packets of `len` bytes that this qdisc counted
  // as queued left it without being dequeued; every ancestor forgets them and counts the
  // drops (negative values add back). Root lock held.
  void tree_reduce_backlog(const Cpu& cpu, int32_t n, int32_t len);
  // The shared block: a locked qdisc's only one (root lock held).
  QdiscStatsBlock& base_stats() { return stats_; }
  QdiscStats own_stats() const;
  // Drop every requeued packet (part of qdisc_reset).
  void reset_requeued(Cpu& cpu);
  // Zero qlen/backlog (after a reset dropped what they counted).
  void zero_backlog();

 protected:
  // Use per-Cpu statistics (TCQ_F_CPUSTATS); call from the constructor.
  void enable_cpu_stats();

 private:
  // Hot, read by every sender: flags and state on the first line.
  uint32_t flags_;
  std::atomic<uint32_t> state_{0};
  bool running_ = false;  // __QDISC_STATE2_RUNNING, under the root lock
  uint32_t handle_ = 0;
  uint32_t parent_ = 0;
  Qdisc* parent_q_ = nullptr;
  NetDevice* dev_ = nullptr;
  TxQueue* dev_queue_ = nullptr;
  const char* kind_;
  PP_ALWAYS_INLINE bool seq_try_lock() {
    return !seqlock_.load(std::memory_order_relaxed) &&
           !seqlock_.exchange(true, std::memory_order_seq_cst);
  }
  alignas(kCacheLine) std::atomic<bool> seqlock_{false};  // NOLOCK: held by the one dequeuer
  alignas(kCacheLine) SpinLock lock_;  // root lock (locked) / gso_list lock (NOLOCK)
  QdiscStatsBlock stats_;
  std::unique_ptr<QdiscStatsBlock[]> pcpu_;
};

// A discipline kind (struct Qdisc_ops): its tc name and constructor. `ingress_hook`
// kinds (clsact, ingress) are not tree qdiscs: they hold the device's tc filter lists
// (sch_ingress.cc).
struct QdiscOps {
  const char* id;
  std::unique_ptr<Qdisc> (*create)();
  bool classful = false;
  bool ingress_hook = false;
};
// mirrors register_qdisc: called by QdiscRegistrar objects during static initialisation
// (the library is linked whole-archive so that no registering file is dropped). A
// duplicate id aborts.
void register_qdisc(const QdiscOps& ops);
struct QdiscRegistrar {
  explicit QdiscRegistrar(const QdiscOps& ops) { register_qdisc(ops); }
};
// mirrors qdisc_lookup_ops; nullptr for an unknown kind.
const QdiscOps* qdisc_lookup_ops(std::string_view id);
// Every registered kind, in registration order.
std::vector<const QdiscOps*> qdisc_ops_list();

// mirrors qdisc_create: look up the kind, construct it for `dev` with `handle` (before
// init: children's parent ids derive from it) and init it with `opts`.
Result<std::unique_ptr<Qdisc>> qdisc_create(NetDevice& dev, std::string_view kind, const QdiscOptions& opts,
                                            uint32_t handle = 0);

}  // namespace pktpath
