// Cpu: the per-thread datapath context, pktpath's softnet_data.
//
// One Cpu per datapath thread. It owns a packet cache (the NAPI skb cache / per-cpu slab
// cache), the defer list other Cpus push packets onto when they free a packet this Cpu
// allocated (document 002), drop-reason counters, the tx work list (the output_queue that
// net_tx_action runs), timers and the xmit recursion counter.
//
// Concurrency contract:
//  - Everything except the defer list is touched only by the thread the Cpu is bound to
//    (the "owner thread"); statistics may be read from any thread.
//  - Any thread, through its own Cpu, may free a packet whose alloc_cpu is another Cpu:
//    that pushes onto the owner's defer list under the owner's defer lock.
//  - The owner thread flushes its defer list in run_pending() (or defer_free_flush()),
//    reading the list head without the lock first.
//  - A Cpu must outlive the packets it allocated that other Cpus may still free.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/clock.h"
#include "base/compiler.h"
#include "core/napi.h"
#include "core/counter.h"
#include "core/drop_reason.h"
#include "core/packet.h"
#include "core/packet_pool.h"
#include "core/packet_trace.h"
#include "core/spinlock.h"

namespace pktpath {

class Cpu;

// Deferred work run by Cpu::run_pending(): the analogue of a qdisc on the output_queue
// that net_tx_action runs. An item is on at most one Cpu's list at a time; the caller of
// schedule_work guarantees that (qdiscs do it with their SCHED state bit).
struct CpuWork {
  CpuWork* next_work = nullptr;
  virtual void run(Cpu& cpu) = 0;
  virtual ~CpuWork() = default;
};

// A one-shot timer with an owner (hrtimer, as qdisc_watchdog uses it). Armed on one Cpu
// at a time (Cpu::arm_timer, pinned to that Cpu as HRTIMER_MODE_ABS_PINNED); that Cpu's
// run_pending() calls `fn(timer, cpu)` once its clock passes the expiry.
//
// Contract:
//  - arm and cancel are safe from any thread, whatever Cpu the timer is armed on.
//  - cancel() is synchronous (hrtimer_cancel): when it returns the timer is off every
//    list and its callback is not running, unless cancel() is called from that callback.
//  - The owner cancels in its destructor before freeing what the callback touches;
//    ~CpuTimer cancels too, so a timer is never left on a list after it is gone.
//  - A Cpu destroyed with timers armed on it takes them off its list unfired.
//  - The callback may re-arm its timer; it must not wait for a lock that a canceller
//    holds while it cancels (qdisc_watchdog takes no lock).
class CpuTimer {
 public:
  using Fn = void (*)(CpuTimer& timer, Cpu& cpu);
  CpuTimer(Fn fn, void* owner) : fn_(fn), owner_(owner) {}
  ~CpuTimer() { cancel(); }
  CpuTimer(const CpuTimer&) = delete;
  CpuTimer& operator=(const CpuTimer&) = delete;

  // mirrors hrtimer_cancel: true if the timer was queued.
  bool cancel();
  // mirrors hrtimer_is_queued (a snapshot when read off the owner's lock).
  bool queued() const { return base_.load(std::memory_order_acquire) != nullptr; }
  uint64_t expires_ns() const { return expires_ns_.load(std::memory_order_relaxed); }
  void* owner() const { return owner_; }

 private:
  friend class Cpu;
  Fn fn_;
  void* owner_;
  SpinLock lock_;                       // guards base_; taken before a Cpu's timer lock
  std::atomic<Cpu*> base_{nullptr};     // the Cpu whose list holds it
  std::atomic<uint64_t> expires_ns_{0};
  CpuTimer* next_timer_ = nullptr;      // under base_'s timer lock
  std::atomic<const void*> running_{nullptr};  // the thread running fn_, if any
};

inline constexpr unsigned kMaxCpus = 256;
inline constexpr uint16_t kNoCpu = 0xffff;
inline constexpr int kXmitRecursionLimit = 8;  // XMIT_RECURSION_LIMIT

struct CpuStats {
  Counter alloc_fail;        // packets asked for while the pool was exhausted
  Counter defer_queued;      // packets this Cpu pushed onto another Cpu's defer list
  Counter defer_nodefer;     // remote frees that fell back to a direct free (defer_max)
  Counter defer_flushed;     // packets taken off this Cpu's own defer list
  Counter defer_flushes;     // flushes that found work
  Counter backlog_processed; // packets this Cpu took off its input queue
  // /proc/net/softnet_stat's columns (sd->processed, time_squeeze, received_rps; dropped
  // is Cpu::backlog_dropped(), counted under the input queue's lock).
  Counter processed;         // packets through the receive core (__netif_receive_skb_core)
  Counter time_squeeze;      // net_rx_action runs that stopped with work left
  Counter received_rps;      // backlog schedules that came from another Cpu (the IPI)
  std::array<Counter, kDropReasonCount> drops;
};

class alignas(kCacheLine) Cpu {
 public:
  struct Options {
    uint32_t cache_size = 256;   // packets kept in the per-Cpu cache
    uint32_t cache_batch = 64;   // moved to/from the pool at a time
    uint32_t defer_max = 64;     // sysctl_skb_defer_max
    uint32_t max_backlog = 1000; // netdev_max_backlog
    uint32_t netdev_budget = 300;         // packets per net_rx_action
    uint32_t netdev_budget_usecs = 2000;  // time per net_rx_action
    uint32_t dev_rx_weight = 64;          // the backlog's NAPI weight (dev_weight)
    bool defer_free = true;      // false: remote frees go straight back (A/B switch)
    int core = -1;               // pin the bound thread to this core in bind(); -1: don't
    Clock* clock = nullptr;      // where its timers and qdiscs read time; null: monotonic
    PacketTrace* trace = nullptr;  // per-packet outcome records; null: off
  };

  Cpu(PacketPool& pool, Options opts);
  explicit Cpu(PacketPool& pool) : Cpu(pool, Options{}) {}
  ~Cpu();
  Cpu(const Cpu&) = delete;
  Cpu& operator=(const Cpu&) = delete;

  uint16_t id() const { return id_; }
  PacketPool& pool() { return pool_; }
  const Options& options() const { return opts_; }
  void set_defer_free(bool on) { opts_.defer_free = on; }

  // Bind this Cpu to the calling thread (Cpu::current() returns it there) and pin the
  // thread if Options::core was set. Returns false if pinning failed.
  bool bind();
  static Cpu* current() { return tls_current_; }
  static Cpu* by_id(uint16_t id);

  // --- allocation (napi_alloc_skb / kmem_cache_alloc_bulk). nullptr/short count when
  // the pool is exhausted; counted in stats().alloc_fail.
  PP_ALWAYS_INLINE Packet* alloc() {
    if ((PP_UNLIKELY(cache_count_ == 0) && !refill()) ||
        (PP_UNLIKELY(fail_every_ != 0) && fault_alloc())) {
      stats_.alloc_fail.add();
      return nullptr;
    }
    Packet* p = cache_[--cache_count_];
    p->reset_for_alloc(headroom_, id_);
    return p;
  }
  unsigned alloc_bulk(Packet** out, unsigned n);
  // Fault injection (failslab's interval, probability 100): every Nth alloc() or
  // alloc_stamped() on this Cpu fails as if the pool were empty; 0 = off. A new Cpu
  // takes its pool's setting (PacketPool::alloc_fail_every). Owner thread, or while
  // the Cpu runs nothing.
  void set_alloc_fail_every(uint32_t n) {
    fail_every_ = n;
    fail_count_ = 0;
  }
  // alloc() followed by skb_put(len), with the cleared block copied from `head` (the
  // first Packet::kClearedBytes of a prototype packet: metadata every packet of a stream
  // shares) instead of zeroed. For generators; head's len must equal `len`.
  PP_ALWAYS_INLINE Packet* alloc_stamped(const void* head, uint32_t len) {
    if ((PP_UNLIKELY(cache_count_ == 0) && !refill()) ||
        (PP_UNLIKELY(fail_every_ != 0) && fault_alloc())) {
      stats_.alloc_fail.add();
      return nullptr;
    }
    Packet* p = cache_[--cache_count_];
    p->stamp_for_alloc(head, headroom_, len, id_);
    return p;
  }

  // kmem_cache_alloc_bulk/free_bulk on the Cpu cache: raw slots, not reset, no user
  // count handling. For code that initialises packets itself (as the NAPI cache hands
  // raw skbs to __build_skb_around). Slots from cache_get_bulk go back by cache_put_bulk
  // or after reset_for_alloc by free().
  PP_ALWAYS_INLINE unsigned cache_get_bulk(Packet** out, unsigned n) {
    if (PP_UNLIKELY(cache_count_ < n)) return cache_get_bulk_slow(out, n);
    cache_count_ -= n;
    std::memcpy(out, cache_.get() + cache_count_, n * sizeof(Packet*));
    return n;
  }
  PP_ALWAYS_INLINE void cache_put_bulk(Packet* const* in, unsigned n) {
    if (PP_UNLIKELY(cache_count_ + n > opts_.cache_size)) {
      if (n > opts_.cache_size) return pool_.put_bulk(in, n);
      spill_for(n);
    }
    std::memcpy(cache_.get() + cache_count_, in, n * sizeof(Packet*));
    cache_count_ += n;
  }

  // --- freeing. free() drops one user (consume_skb: not a drop); the last user recycles
  // the packet, onto its allocating Cpu's defer list if that is another Cpu.
  PP_ALWAYS_INLINE void free(Packet* p) {
    if (PP_LIKELY(unref(p))) release(p);
  }
  // kfree_skb_reason: count one drop under `r`, then free.
  void free_reason(Packet* p, DropReason r) {
    stats_.drops[static_cast<unsigned>(r)].add();
    if (PP_UNLIKELY(trace_ != nullptr)) trace_->dropped(*this, *p, r);
    free(p);
  }
  // kfree_skb_list/napi_consume_skb in bulk: packets that are this Cpu's own and
  // unshared go back to the cache in one copy; the rest take the single path.
  void free_bulk(Packet* const* ps, unsigned n);
  void free_list(PacketList& l) {
    while (Packet* p = l.pop_front()) free(p);
  }

  // --- softirq-style work, run by the owner thread at defined points of its loop.
  // mirrors skb_defer_free_flush: cheap lockless check of the head, then take the list.
  PP_ALWAYS_INLINE void defer_free_flush() {
    if (PP_LIKELY(defer_.list.load(std::memory_order_acquire) == nullptr)) return;
    defer_free_flush_slow();
  }
  // net_rx_action (defer flush, NAPI polls by budget), expired timers, then the tx work
  // list (net_tx_action). Work left over or scheduled while it runs waits for the next
  // call, as the kernel re-raises the softirq.
  void run_pending();
  // mirrors net_rx_action: polls the scheduled NAPI instances (this Cpu's backlog among
  // them) until none is left, netdev_budget packets were handled or netdev_budget_usecs
  // passed (then time_squeeze); instances that used their whole weight go to the back.
  void net_rx_action();
  // Checked once per packet by busy loops (as local_bh_enable checks for pending
  // softirqs): the five words or-ed together, one branch. The defer list counts only
  // once a remote freer kicked it (at half of defer_max, as the kernel's IPI): until
  // then it waits for this Cpu's next net_rx_action, so flushes come in batches.
  bool has_pending() const {
    return (pending_bits() | reinterpret_cast<uintptr_t>(timers_.load(std::memory_order_relaxed))) != 0;
  }
  // has_pending less the timers not yet due: what a run_pending now would act on. A
  // caller settling a line stops here; an armed timer is the clock's business.
  bool has_due_work() const;
  void schedule_work(CpuWork* w);  // __netif_schedule: append to this Cpu's list

  // --- NAPI (core/napi.h). ____napi_schedule: put a scheduled instance on this Cpu's
  // poll list; from another thread it goes to the remote list and wakes the owner.
  void napi_add(Napi& n);
  // A thread that sleeps while this Cpu has nothing pending (CpuThread) installs how to
  // wake it; napi_add from another thread calls it.
  using WakeFn = void (*)(void* ctx);
  // set_waker returns only when no wake() still runs the old waker (wake calls it under
  // waker_mu_), so the caller may then free what the old ctx points at. The waker must
  // not call set_waker.
  void set_waker(WakeFn fn, void* ctx) {
    std::lock_guard<std::mutex> g(waker_mu_);
    waker_ctx_.store(ctx, std::memory_order_relaxed);
    waker_.store(fn, std::memory_order_release);
  }
  void wake() {
    if (!waker_.load(std::memory_order_acquire)) return;  // none: no lock
    std::lock_guard<std::mutex> g(waker_mu_);
    if (WakeFn w = waker_.load(std::memory_order_relaxed)) w(waker_ctx_.load(std::memory_order_relaxed));
  }
  unsigned napi_polling() const;
  // Instances scheduled from other threads, not yet taken by the owner (any thread).
  bool remote_pending() const { return remote_.head.load(std::memory_order_acquire) != nullptr; }  // instances on the local poll list (owner thread; tests)

  // --- the input queue (softnet_data.input_pkt_queue, RPS): the backlog NAPI instance.
  // Any thread may hand this Cpu a received packet; the owner thread processes it in
  // net_rx_action through the rx handler (process_backlog).
  // mirrors enqueue_to_backlog: false (packet not taken, counted in backlog_dropped)
  // when more than max_backlog wait.
  bool backlog_enqueue(Packet* p);
  // The same for a batch another Cpu staged (one lock): each packet admitted as
  // backlog_enqueue would; those that find the queue full go to `over`.
  void backlog_enqueue_list(PacketList& l, PacketList& over);

  // --- RPS hand-offs in batches: the kernel's rps_ipi_list, where a softirq that hands
  // packets to other Cpus' backlogs signals each of them once, at its end. Inside a
  // section (bh_disable .. bh_enable, as local_bh_disable) a packet for another Cpu's
  // backlog waits on this Cpu's stage for that Cpu; a stage goes over in one lock at the
  // section's end, at the end of run_pending (net_rps_send_ipi), at kRpsBatch packets,
  // or when the section's owner calls rps_flush (a busy loop, between its rounds).
  // Owner thread only.
  static constexpr uint32_t kRpsBatch = 64;
  // mirrors enqueue_to_backlog for another Cpu inside a section: false (not taken) when
  // the target's queue with what waits here for it is over its max_backlog.
  bool rps_enqueue(Cpu& target, Packet* p);
  void rps_flush() {
    if (PP_UNLIKELY(rps_staged_ != 0)) rps_flush_all();
  }
  bool in_bh() const { return bh_depth_ != 0; }
  void bh_disable() { ++bh_depth_; }
  void bh_enable() {
    if (--bh_depth_ == 0) rps_flush();
  }
  // What process_backlog does with each packet; default: netif_receive_skb when the
  // packet has a device, else consume.
  using RxHandler = void (*)(Cpu& cpu, Packet* p);
  void set_rx_handler(RxHandler h) { rx_handler_ = h; }
  // Owner thread: everything not yet processed. Any thread: backlog_queued() (the shared
  // part only).
  uint32_t backlog_len() const { return backlog_.qlen.load(std::memory_order_relaxed) + process_queue_.count; }
  uint32_t backlog_queued() const { return backlog_.qlen.load(std::memory_order_acquire); }
  uint64_t backlog_dropped() const { return backlog_.dropped.load(std::memory_order_relaxed); }
  // Free every packet waiting on the input queue unprocessed (DEV_READY, rx_dropped on
  // its device), for when their devices are about to go. Owner thread, or while no
  // thread runs this Cpu.
  void backlog_purge();
  // mirrors flush_backlog: the same for the packets of one device that is being
  // unregistered. Same threads.
  void flush_backlog(const NetDevice& dev);
  uint32_t max_backlog() const { return opts_.max_backlog; }
  // hrtimer_start(..., HRTIMER_MODE_ABS_PINNED): (re)arm `t` on this Cpu, moving it off
  // whatever Cpu held it. Any thread.
  void arm_timer(CpuTimer* t, uint64_t expires_ns);
  // hrtimer_cancel, any thread, whatever Cpu `t` is armed on (CpuTimer::cancel).
  static bool cancel_timer(CpuTimer* t) { return t->cancel(); }
  unsigned timers_armed() const;  // timers on this Cpu's list (tests)
  // The earliest armed expiry, UINT64_MAX when none (what a virtual clock advances to).
  uint64_t next_timer_ns() const;
  Clock& clock() { return *clock_; }
  void set_clock(Clock* c) { clock_ = c ? c : &MonotonicClock::instance(); }
  // Per-packet outcome records (core/packet_trace.h); null (the default): off, and the
  // hooks cost one test of this pointer. Owner thread, or while the Cpu runs nothing.
  PacketTrace* trace() const { return trace_; }
  void set_trace(PacketTrace* t) { trace_ = t; }

  // dev_xmit_recursion: nesting depth of dev_queue_xmit on this Cpu.
  int xmit_recursion = 0;

  const CpuStats& stats() const { return stats_; }
  CpuStats& stats() { return stats_; }
  uint32_t cached() const { return cache_count_; }
  uint32_t defer_count() const { return defer_.count.load(std::memory_order_relaxed); }
  // Return every cached packet to the pool (so pool accounting is exact in tests).
  void drain_cache();

 private:
  PP_ALWAYS_INLINE static bool unref(Packet* p) {
    // skb_unref: the common single-user case needs no atomic read-modify-write.
    if (PP_LIKELY(p->users.load(std::memory_order_relaxed) == 1)) return true;
    return p->users.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  PP_ALWAYS_INLINE void release(Packet* p) {
    if (PP_UNLIKELY(p->alloc_cpu != id_)) {
      attempt_defer_free(p);
      return;
    }
    recycle(p);
  }
  PP_ALWAYS_INLINE void recycle(Packet* p) {
    if (PP_UNLIKELY(p->pool != &pool_)) {
      p->pool->put_bulk(&p, 1);
      return;
    }
    if (PP_UNLIKELY(cache_count_ == opts_.cache_size)) spill();
    cache_[cache_count_++] = p;
  }
  bool refill();
  bool fault_alloc();
  void spill();
  unsigned cache_get_bulk_slow(Packet** out, unsigned n);
  void spill_for(unsigned n);   // until n (<= cache_size) more fit
  void attempt_defer_free(Packet* p);
  void defer_free_flush_slow();
  void run_timers();
  void unlink_timer(CpuTimer* t);  // under timer_lock_
  void detach_timers();           // ~Cpu
  static int process_backlog(Napi& n, Cpu& cpu, int quota);
  void splice_remote_polls();

  // What alloc() and free() touch per packet lies in the Cpu's first cache line, and
  // headroom_ shares no 8-byte word with cache_count_ (both asserted in Cpu::Cpu): alloc
  // stores the count, then reads the headroom, and GCC reads it as the upper half of an
  // 8-byte load over both, which the store just before cannot forward to (a
  // store-forwarding stall: single alloc+free took 3x as long).
  PacketPool& pool_;
  std::unique_ptr<Packet*[]> cache_;
  uint32_t cache_count_ = 0;
  uint16_t id_ = kNoCpu;
  uint32_t headroom_;
  uint32_t fail_every_ = 0;  // set_alloc_fail_every
  uint32_t fail_count_ = 0;
  Options opts_;
  CpuWork* work_head_ = nullptr;
  CpuWork* work_tail_ = nullptr;
  // Armed timers sorted by expiry, under timer_lock_ (read unlocked only as a hint).
  std::atomic<CpuTimer*> timers_{nullptr};
  // The first timer's expiry (UINT64_MAX: none), written under timer_lock_ whenever the
  // list's head changes, read without it: a pass with nothing due takes no lock.
  std::atomic<uint64_t> head_expiry_{UINT64_MAX};
  void publish_head();  // under timer_lock_
  // The pending words but the timer list, or-ed: nonzero when work waits now.
  uintptr_t pending_bits() const {
    return reinterpret_cast<uintptr_t>(work_head_) | reinterpret_cast<uintptr_t>(poll_.head) |
           defer_.ipi_scheduled.load(std::memory_order_relaxed) |
           reinterpret_cast<uintptr_t>(remote_.head.load(std::memory_order_relaxed));
  }
  SpinLock timer_lock_;
  Clock* clock_;
  PacketTrace* trace_ = nullptr;
  RxHandler rx_handler_ = nullptr;
  std::atomic<WakeFn> waker_{nullptr};
  std::atomic<void*> waker_ctx_{nullptr};
  std::mutex waker_mu_;  // held while a wake() runs the waker, and to change it
  PacketList process_queue_;  // owner only: spliced from the backlog, not yet processed
  struct PollList {
    Napi* head = nullptr;
    Napi* tail = nullptr;
    void push(Napi* n) {
      n->poll_next = nullptr;
      if (tail) tail->poll_next = n; else head = n;
      tail = n;
    }
    Napi* pop() {
      Napi* n = head;
      if (n) {
        head = n->poll_next;
        if (!head) tail = nullptr;
        n->poll_next = nullptr;
      }
      return n;
    }
    void splice(PollList& o) {  // append o, leave it empty
      if (!o.head) return;
      if (tail) tail->poll_next = o.head; else head = o.head;
      tail = o.tail;
      o.head = o.tail = nullptr;
    }
  };
  PollList poll_;  // owner only: sd->poll_list
  // Owner only: the RPS stage, one entry per target Cpu ever staged to (it grows once per
  // target, never per packet); packets on it; the section depth.
  struct RpsStage {
    Cpu* target;
    PacketList list;
  };
  std::vector<RpsStage> rps_stage_;
  uint32_t rps_staged_ = 0;
  uint32_t bh_depth_ = 0;
  void rps_flush_all();
  void rps_flush_one(RpsStage& s);
  Napi backlog_napi_;
  CpuStats stats_;

  // Written by other Cpus: its own cache line.
  struct alignas(kCacheLine) DeferList {
    SpinLock lock;
    std::atomic<Packet*> list{nullptr};
    std::atomic<uint32_t> count{0};
    std::atomic<uint32_t> ipi_scheduled{0};  // sd->defer_ipi_scheduled: a kick is pending
  } defer_;

  // Written by other Cpus (RPS producers): its own cache line.
  struct alignas(kCacheLine) Backlog {
    SpinLock lock;
    PacketList list;
    std::atomic<uint32_t> qlen{0};
    std::atomic<uint64_t> dropped{0};  // sd->dropped (also refusals at a sender's stage)
  } backlog_;

  // NAPI instances scheduled from other threads (what the IPI would put on poll_list).
  struct alignas(kCacheLine) RemotePolls {
    SpinLock lock;
    std::atomic<Napi*> head{nullptr};
    Napi* tail = nullptr;
  } remote_;

  static thread_local Cpu* tls_current_;
  friend class CpuTimer;
};

// Drop totals over every Cpu that exists or has existed.
std::array<uint64_t, kDropReasonCount> drop_totals();
uint64_t drop_total();

// Pin the calling thread to one core. false if the core does not exist or is not allowed.
bool pin_current_thread(int core);

}  // namespace pktpath
