#include "core/cpu.h"

#include <cstddef>

#include "core/dev_rx.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace pktpath {

thread_local Cpu* Cpu::tls_current_ = nullptr;

namespace {

// Registry of live Cpus by id, so a packet's alloc_cpu can be resolved, and the drop
// counts of Cpus that are gone, so totals survive them.
struct Registry {
  std::atomic<Cpu*> cpus[kMaxCpus] = {};
  std::mutex retired_mu;
  std::array<uint64_t, kDropReasonCount> retired_drops = {};
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Cpu::Cpu(PacketPool& pool, Options opts)
    : pool_(pool),
      headroom_(pool.headroom()),
      fail_every_(pool.alloc_fail_every()),
      opts_(opts),
      clock_(opts.clock ? opts.clock : &MonotonicClock::instance()),
      trace_(opts.trace) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"  // Cpu is not standard-layout; the offsets are fixed
  static_assert(offsetof(Cpu, fail_count_) + sizeof(uint32_t) <= kCacheLine &&
                    offsetof(Cpu, opts_) + offsetof(Options, cache_size) + sizeof(uint32_t) <= kCacheLine,
                "the fields alloc() and free() touch stay in the Cpu's first cache line");
  static_assert(offsetof(Cpu, headroom_) / 8 != offsetof(Cpu, cache_count_) / 8,
                "headroom_ shares no 8-byte word with cache_count_ (a wide load over both stalls)");
#pragma GCC diagnostic pop
  if (opts_.cache_size == 0 || opts_.cache_batch == 0 || opts_.cache_batch > opts_.cache_size)
    throw std::invalid_argument("cpu: need 0 < cache_batch <= cache_size");
  cache_ = std::make_unique<Packet*[]>(opts_.cache_size);
  backlog_napi_.poll = process_backlog;
  backlog_napi_.ctx = this;
  backlog_napi_.cpu = this;
  backlog_napi_.weight = static_cast<int>(opts_.dev_rx_weight ? opts_.dev_rx_weight : 64);
  Registry& r = registry();
  for (unsigned i = 0; i < kMaxCpus; ++i) {
    Cpu* expected = nullptr;
    if (r.cpus[i].compare_exchange_strong(expected, this, std::memory_order_acq_rel)) {
      id_ = static_cast<uint16_t>(i);
      return;
    }
  }
  throw std::runtime_error("cpu: more than 256 Cpu contexts");
}

Cpu::~Cpu() {
  // Whatever others deferred or queued to us and whatever we cache goes back to the pool.
  // Received packets are handled; a bound stops packets that the handling queues here
  // again (a redirect loop), and what is left then is dropped.
  rps_flush();
  for (int round = 0; round < 1024 && backlog_len() != 0; ++round)
    process_backlog(backlog_napi_, *this, backlog_napi_.weight);
  backlog_purge();
  defer_free_flush();
  drain_cache();
  detach_timers();
  Registry& r = registry();
  {
    std::lock_guard g(r.retired_mu);
    for (unsigned i = 0; i < kDropReasonCount; ++i) r.retired_drops[i] += stats_.drops[i].get();
  }
  r.cpus[id_].store(nullptr, std::memory_order_release);
  if (tls_current_ == this) tls_current_ = nullptr;
}

Cpu* Cpu::by_id(uint16_t id) {
  return id < kMaxCpus ? registry().cpus[id].load(std::memory_order_acquire) : nullptr;
}

bool Cpu::bind() {
  tls_current_ = this;
  return opts_.core < 0 || pin_current_thread(opts_.core);
}

bool Cpu::refill() {
  unsigned want = opts_.cache_batch;
  unsigned got = pool_.get_bulk(cache_.get() + cache_count_, want);
  cache_count_ += got;
  return got != 0;
}

// mirrors should_failslab with an interval and probability 100: the Nth call fails.
bool Cpu::fault_alloc() {
  if (++fail_count_ < fail_every_) return false;
  fail_count_ = 0;
  return true;
}

void Cpu::spill() {
  unsigned n = opts_.cache_batch;
  cache_count_ -= n;
  pool_.put_bulk(cache_.get() + cache_count_, n);
}

// The cache holds fewer than asked: hand out what it has, take the rest from the pool
// directly, then top the cache up by a batch for the next caller.
unsigned Cpu::cache_get_bulk_slow(Packet** out, unsigned n) {
  unsigned have = cache_count_;
  std::memcpy(out, cache_.get(), have * sizeof(Packet*));
  cache_count_ = 0;
  unsigned got = pool_.get_bulk(out + have, n - have);
  if (have + got < n) stats_.alloc_fail.add(n - have - got);
  refill();
  return have + got;
}

void Cpu::spill_for(unsigned n) {
  while (cache_count_ + n > opts_.cache_size && cache_count_ > 0) {
    unsigned k = cache_count_ < opts_.cache_batch ? cache_count_ : opts_.cache_batch;
    cache_count_ -= k;
    pool_.put_bulk(cache_.get() + cache_count_, k);
  }
}

void Cpu::drain_cache() {
  pool_.put_bulk(cache_.get(), cache_count_);
  cache_count_ = 0;
}

unsigned Cpu::alloc_bulk(Packet** out, unsigned n) {
  unsigned got = cache_get_bulk(out, n);
  const uint32_t headroom = headroom_;
  const uint16_t id = id_;
  for (unsigned i = 0; i < got; ++i) out[i]->reset_for_alloc(headroom, id);
  return got;
}

void Cpu::free_bulk(Packet* const* ps, unsigned n) {
  constexpr unsigned kChunk = 64;
  Packet* mine[kChunk];
  unsigned k = 0;
  for (unsigned i = 0; i < n; ++i) {
    Packet* p = ps[i];
    if (!unref(p)) continue;
    if (PP_LIKELY(p->alloc_cpu == id_ && p->pool == &pool_)) {
      mine[k++] = p;
      if (PP_UNLIKELY(k == kChunk)) {
        cache_put_bulk(mine, k);
        k = 0;
      }
    } else {
      release(p);
    }
  }
  cache_put_bulk(mine, k);
}

// mirrors skb_attempt_defer_free: hand the packet back to the Cpu that allocated it,
// unless that Cpu is gone, defer is off, or its list already holds defer_max packets.
// Without the list (defer off, or the list full: the kernel's nodefer __kfree_skb) the
// packet goes straight back to its pool, one locked put per packet: the slab's remote
// free, an object returned to memory another CPU allocates from.
void Cpu::attempt_defer_free(Packet* p) {
  Cpu* owner = by_id(p->alloc_cpu);
  if (!owner) {
    recycle(p);
    return;
  }
  if (!opts_.defer_free) {
    p->pool->put_bulk(&p, 1);
    return;
  }
  DeferList& d = owner->defer_;
  if (d.count.load(std::memory_order_relaxed) >= owner->opts_.defer_max) {
    stats_.defer_nodefer.add();
    p->pool->put_bulk(&p, 1);
    return;
  }
  d.lock.lock();
  const uint32_t count = d.count.load(std::memory_order_relaxed);
  // Kick the owner every time its list reaches half of defer_max.
  const bool kick = count == (owner->opts_.defer_max >> 1);
  d.count.store(count + 1, std::memory_order_relaxed);
  p->next = d.list.load(std::memory_order_relaxed);
  // Paired with the acquire load in defer_free_flush().
  d.list.store(p, std::memory_order_release);
  d.lock.unlock();
  stats_.defer_queued.add();
  if (PP_UNLIKELY(kick) && d.ipi_scheduled.exchange(1, std::memory_order_acq_rel) == 0) owner->wake();
}

// mirrors skb_defer_free_flush after document 002: plain lock (no flags save/restore),
// detach the whole list, then free outside the lock.
void Cpu::defer_free_flush_slow() {
  defer_.lock.lock();
  Packet* p = defer_.list.load(std::memory_order_relaxed);
  defer_.list.store(nullptr, std::memory_order_relaxed);
  defer_.count.store(0, std::memory_order_relaxed);
  defer_.lock.unlock();
  uint64_t n = 0;
  while (p) {
    Packet* next = p->next;
    recycle(p);
    p = next;
    ++n;
  }
  stats_.defer_flushed.add(n);
  stats_.defer_flushes.add();
}

// mirrors enqueue_to_backlog: up to netdev_max_backlog packets wait (the kernel admits
// while qlen <= max); the first one schedules the backlog's NAPI on this Cpu, from
// another Cpu as the RPS IPI would.
bool Cpu::backlog_enqueue(Packet* p) {
  LockGuard g(backlog_.lock);
  const uint32_t q = backlog_.qlen.load(std::memory_order_relaxed);
  if (PP_UNLIKELY(q > opts_.max_backlog)) {
    backlog_.dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  backlog_.list.push_back(p);
  backlog_.qlen.store(q + 1, std::memory_order_release);
  // The backlog's SCHED bit is only changed under this lock (process_backlog clears it
  // here too), so a plain test and set is enough.
  if (!(backlog_napi_.state.load(std::memory_order_relaxed) & Napi::kSched)) {
    backlog_napi_.state.store(Napi::kSched, std::memory_order_relaxed);
    if (tls_current_ != this) stats_.received_rps.add();
    napi_add(backlog_napi_);
  }
  return true;
}

void Cpu::backlog_enqueue_list(PacketList& l, PacketList& over) {
  LockGuard g(backlog_.lock);
  uint32_t q = backlog_.qlen.load(std::memory_order_relaxed);
  if (PP_LIKELY(q + l.count <= opts_.max_backlog + 1)) {  // every one admitted: one splice
    q += l.count;
    backlog_.list.splice(l);
  } else {
    while (Packet* p = l.pop_front()) {
      if (q > opts_.max_backlog) {
        over.push_back(p);
      } else {
        backlog_.list.push_back(p);
        ++q;
      }
    }
    backlog_.dropped.fetch_add(over.count, std::memory_order_relaxed);
  }
  backlog_.qlen.store(q, std::memory_order_release);
  if (!(backlog_napi_.state.load(std::memory_order_relaxed) & Napi::kSched)) {
    backlog_napi_.state.store(Napi::kSched, std::memory_order_relaxed);
    stats_.received_rps.add();
    napi_add(backlog_napi_);
  }
}

bool Cpu::rps_enqueue(Cpu& target, Packet* p) {
  RpsStage* s = nullptr;
  for (RpsStage& e : rps_stage_) {
    if (e.target == &target) {
      s = &e;
      break;
    }
  }
  if (PP_UNLIKELY(!s)) s = &rps_stage_.emplace_back(RpsStage{&target, {}});
  // The kernel's qlen check, made here on what the target holds and what waits for it.
  if (PP_UNLIKELY(target.backlog_queued() + s->list.count > target.max_backlog())) {
    target.backlog_.dropped.fetch_add(1, std::memory_order_relaxed);  // sd->dropped
    return false;
  }
  s->list.push_back(p);
  ++rps_staged_;
  if (PP_UNLIKELY(s->list.count >= kRpsBatch)) rps_flush_one(*s);
  return true;
}

void Cpu::rps_flush_one(RpsStage& s) {
  PacketList over;
  rps_staged_ -= s.list.count;
  s.target->backlog_enqueue_list(s.list, over);
  while (Packet* p = over.pop_front()) {  // another sender filled the queue meanwhile
    if (p->dev) p->dev->stats(*this).rx_dropped.add();
    free_reason(p, DropReason::CPU_BACKLOG);
  }
}

// mirrors net_rps_send_ipi: every target with packets waiting gets them, once.
void Cpu::rps_flush_all() {
  for (RpsStage& s : rps_stage_)
    if (!s.list.empty()) rps_flush_one(s);
}

// mirrors process_backlog: handle what was spliced to the process queue, then splice
// the shared input queue under the lock; when it is empty too, complete (clear SCHED
// under the lock, as the kernel's inlined __napi_complete).
int Cpu::process_backlog(Napi& n, Cpu& cpu, int quota) {
  Cpu& sd = *static_cast<Cpu*>(n.ctx);
  int work = 0;
  for (;;) {
    while (Packet* p = sd.process_queue_.pop_front()) {
      sd.stats_.backlog_processed.add();
      if (sd.rx_handler_) sd.rx_handler_(cpu, p);
      else if (p->dev) netif_receive_skb(cpu, p);
      else cpu.free(p);
      if (++work >= quota) return work;
    }
    LockGuard g(sd.backlog_.lock);
    if (sd.backlog_.list.empty()) {
      n.state.store(0, std::memory_order_relaxed);
      return work;
    }
    sd.process_queue_ = sd.backlog_.list;
    sd.backlog_.list = PacketList{};
    // Release: an idle check that reads 0 here also sees the owner busy (CpuThread::idle).
    sd.backlog_.qlen.store(0, std::memory_order_release);
  }
}

void Cpu::flush_backlog(const NetDevice& dev) {
  PacketList drop, keep;
  while (Packet* p = process_queue_.pop_front()) (p->dev == &dev ? drop : keep).push_back(p);
  process_queue_ = keep;
  {
    LockGuard g(backlog_.lock);
    keep = PacketList{};
    uint32_t left = 0;
    while (Packet* p = backlog_.list.pop_front()) {
      if (p->dev == &dev) {
        drop.push_back(p);
      } else {
        keep.push_back(p);
        ++left;
      }
    }
    backlog_.list = keep;
    backlog_.qlen.store(left, std::memory_order_relaxed);
  }
  while (Packet* p = drop.pop_front()) {
    p->dev->stats(*this).rx_dropped.add();
    free_reason(p, DropReason::DEV_READY);
  }
}

void Cpu::backlog_purge() {
  PacketList all = process_queue_;
  process_queue_ = PacketList{};
  {
    LockGuard g(backlog_.lock);
    while (Packet* p = backlog_.list.pop_front()) all.push_back(p);
    backlog_.qlen.store(0, std::memory_order_relaxed);
  }
  while (Packet* p = all.pop_front()) {
    if (p->dev) p->dev->stats(*this).rx_dropped.add();
    free_reason(p, DropReason::DEV_READY);
  }
}

void Cpu::schedule_work(CpuWork* w) {
  w->next_work = nullptr;
  if (work_tail_) work_tail_->next_work = w; else work_head_ = w;
  work_tail_ = w;
}

namespace {
// Identifies the calling thread for CpuTimer::running_ (a callback cancelling its own
// timer must not wait for itself).
const void* this_thread_token() {
  static thread_local char token;
  return &token;
}
}  // namespace

void Cpu::publish_head() {
  const CpuTimer* h = timers_.load(std::memory_order_relaxed);
  head_expiry_.store(h ? h->expires_ns() : UINT64_MAX, std::memory_order_release);
}

void Cpu::unlink_timer(CpuTimer* t) {
  CpuTimer* head = timers_.load(std::memory_order_relaxed);
  if (head == t) {
    timers_.store(t->next_timer_, std::memory_order_relaxed);
    publish_head();
  } else {
    for (CpuTimer* c = head; c; c = c->next_timer_)
      if (c->next_timer_ == t) {
        c->next_timer_ = t->next_timer_;
        break;
      }
  }
  t->next_timer_ = nullptr;
}

// Lock order: the timer's lock, then one Cpu's timer lock at a time.
void Cpu::arm_timer(CpuTimer* t, uint64_t expires_ns) {
  LockGuard tg(t->lock_);
  if (Cpu* old = t->base_.load(std::memory_order_relaxed)) {
    LockGuard g(old->timer_lock_);
    old->unlink_timer(t);
  }
  t->expires_ns_.store(expires_ns, std::memory_order_relaxed);
  LockGuard g(timer_lock_);
  CpuTimer* prev = nullptr;
  CpuTimer* c = timers_.load(std::memory_order_relaxed);
  while (c && c->expires_ns() <= expires_ns) {
    prev = c;
    c = c->next_timer_;
  }
  t->next_timer_ = c;
  if (prev) {
    prev->next_timer_ = t;
  } else {
    timers_.store(t, std::memory_order_relaxed);
    publish_head();
  }
  t->base_.store(this, std::memory_order_release);
}

// mirrors hrtimer_cancel: take the timer off its Cpu's list, then wait until its
// callback, if running on another thread, has returned (it may have re-armed: repeat).
bool CpuTimer::cancel() {
  bool was_queued = false;
  for (;;) {
    const void* running;
    {
      LockGuard tg(lock_);
      if (Cpu* b = base_.load(std::memory_order_relaxed)) {
        LockGuard g(b->timer_lock_);
        b->unlink_timer(this);
        base_.store(nullptr, std::memory_order_release);
        was_queued = true;
      }
      running = running_.load(std::memory_order_acquire);
    }
    if (running == nullptr || running == this_thread_token()) return was_queued;
    for (unsigned spins = 0; running_.load(std::memory_order_acquire) == running; ++spins) {
      if (spins < 64) cpu_relax();
      else sched_yield();  // the callback's thread may need this core
    }
  }
}

unsigned Cpu::timers_armed() const {
  LockGuard g(const_cast<SpinLock&>(timer_lock_));
  unsigned n = 0;
  for (CpuTimer* c = timers_.load(std::memory_order_relaxed); c; c = c->next_timer_) ++n;
  return n;
}

bool Cpu::has_due_work() const {
  if (pending_bits() != 0) return true;
  const uint64_t head = head_expiry_.load(std::memory_order_acquire);
  return head != UINT64_MAX && head <= clock_->now_ns();
}

uint64_t Cpu::next_timer_ns() const { return head_expiry_.load(std::memory_order_acquire); }

// mirrors __hrtimer_run_queues: take each expired timer off the list (marked running
// under its own lock, so a canceller waits for it), then run its callback unlocked.
// The timer lock is taken before the list lock elsewhere, hence the trylock here.
void Cpu::run_timers() {
  const uint64_t now = clock_->now_ns();
  // A timer armed on another thread after this read is seen by the next pass, as one
  // armed just after the locked check below would be.
  if (head_expiry_.load(std::memory_order_acquire) > now) return;
  for (;;) {
    timer_lock_.lock();
    CpuTimer* t = timers_.load(std::memory_order_relaxed);
    if (!t || t->expires_ns() > now) {
      timer_lock_.unlock();
      return;
    }
    if (!t->lock_.try_lock()) {
      timer_lock_.unlock();
      cpu_relax();
      continue;
    }
    unlink_timer(t);
    t->base_.store(nullptr, std::memory_order_relaxed);
    t->running_.store(this_thread_token(), std::memory_order_relaxed);
    t->lock_.unlock();
    timer_lock_.unlock();
    t->fn_(*t, *this);
    t->running_.store(nullptr, std::memory_order_release);  // t may be freed from here on
  }
}

// A Cpu going away drops its timers unfired (the kernel migrates a dead CPU's hrtimers;
// a pktpath Cpu has no successor). Same trylock dance as run_timers.
void Cpu::detach_timers() {
  for (;;) {
    timer_lock_.lock();
    CpuTimer* t = timers_.load(std::memory_order_relaxed);
    if (!t) {
      timer_lock_.unlock();
      return;
    }
    if (!t->lock_.try_lock()) {
      timer_lock_.unlock();
      cpu_relax();
      continue;
    }
    unlink_timer(t);
    t->base_.store(nullptr, std::memory_order_release);
    t->lock_.unlock();
    timer_lock_.unlock();
  }
}

// The softirq point: net_rx_action's defer flush, expired timers, then net_tx_action's
// output queue. Work scheduled while running goes to the next call, as the kernel
// re-raises the softirq instead of looping forever.
void Cpu::run_pending() {
  bh_disable();
  net_rx_action();
  if (timers_.load(std::memory_order_relaxed)) run_timers();
  CpuWork* w = work_head_;
  work_head_ = work_tail_ = nullptr;
  while (w) {
    CpuWork* next = w->next_work;
    w->next_work = nullptr;
    w->run(*this);
    w = next;
  }
  --bh_depth_;
  rps_flush();  // the end of the softirq, inside an enclosing section too
}

std::array<uint64_t, kDropReasonCount> drop_totals() {
  Registry& r = registry();
  std::array<uint64_t, kDropReasonCount> t;
  {
    std::lock_guard g(r.retired_mu);
    t = r.retired_drops;
  }
  for (unsigned i = 0; i < kMaxCpus; ++i) {
    if (Cpu* c = r.cpus[i].load(std::memory_order_acquire))
      for (unsigned k = 0; k < kDropReasonCount; ++k) t[k] += c->stats().drops[k].get();
  }
  return t;
}

uint64_t drop_total() {
  uint64_t s = 0;
  for (uint64_t v : drop_totals()) s += v;
  return s;
}

bool pin_current_thread(int core) {
  if (core < 0 || core >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

}  // namespace pktpath
