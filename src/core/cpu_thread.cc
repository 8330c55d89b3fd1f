#include "core/cpu_thread.h"

#include "base/compiler.h"
#include "core/rcu.h"

namespace pktpath {

CpuThread::CpuThread(PacketPool& pool, const Cpu::Options& opts) : cpu_(pool, opts) {
  cpu_.set_waker(&CpuThread::wake, this);
  thread_ = std::thread([this] { loop(); });
}

CpuThread::~CpuThread() { stop(); }

void CpuThread::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_seq_cst);
  wake(this);
  thread_.join();
}

void CpuThread::wake(void* self) {
  auto* t = static_cast<CpuThread*>(self);
  t->seq_.fetch_add(1, std::memory_order_seq_cst);
  if (t->sleeping_.load(std::memory_order_seq_cst)) {
    t->wakeups_.fetch_add(1, std::memory_order_relaxed);
    t->seq_.notify_one();
  }
}

void CpuThread::loop() {
  cpu_.bind();
  RcuReader reader;
  constexpr unsigned kSpins = 2000;  // about 10 us of looking before sleeping
  for (;;) {
    unsigned spins = 0;
    while ((cpu_.has_pending() || spins < kSpins) && !stop_.load(std::memory_order_relaxed)) {
      if (cpu_.has_pending()) {
        idle_.store(false, std::memory_order_seq_cst);
        cpu_.run_pending();
        rcu_quiescent();
        spins = 0;
      } else {
        cpu_relax();
        ++spins;
      }
    }
    if (stop_.load(std::memory_order_acquire)) break;
    // Sleep: announce it, then look once more (a waker that missed the flag has
    // published its work before reading it, so one of the two sees the other).
    const uint32_t s = seq_.load(std::memory_order_seq_cst);
    sleeping_.store(true, std::memory_order_seq_cst);
    if (!cpu_.has_pending() && !stop_.load(std::memory_order_seq_cst)) {
      idle_.store(true, std::memory_order_release);
      rcu_offline();
      seq_.wait(s, std::memory_order_seq_cst);
      rcu_online();
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }
}

bool CpuThread::idle() const {
  // Idle: it found nothing pending after its last work, and nothing was handed to it
  // since (a packet on its input queue, an instance on its remote poll list).
  // idle_ is read again after the queues: an owner that took the queues (storing them
  // empty with release) after the first read had cleared idle_ before, and the second
  // read sees that.
  return idle_.load(std::memory_order_seq_cst) && cpu_.backlog_queued() == 0 && !cpu_.remote_pending() &&
         idle_.load(std::memory_order_seq_cst);
}

void CpuThread::quiesce() {
  while (!idle()) std::this_thread::yield();
}

CpuSet::~CpuSet() {
  stop();
  threads_.clear();
}

void CpuSet::stop() {
  each([](CpuThread& t) { t.stop(); });
  // All stopped: nothing can hand a packet to a Cpu that has already dropped its queue.
  each([](CpuThread& t) { t.cpu().backlog_purge(); });
}

bool CpuSet::quiesce_for(uint64_t max_ns) {
  const uint64_t end = MonotonicClock::instance().now_ns() + max_ns;
  while (!idle()) {
    if (MonotonicClock::instance().now_ns() >= end) return false;
    std::this_thread::yield();
  }
  return true;
}

CpuThread& CpuSet::get(unsigned i, const Cpu::Options& opts) {
  if (threads_.size() <= i) threads_.resize(i + 1);
  if (!threads_[i]) {
    // CPU i of a mask is core i where the machine has one.
    Cpu::Options o = opts;
    o.core = i < std::thread::hardware_concurrency() ? static_cast<int>(i) : -1;
    threads_[i] = std::make_unique<CpuThread>(pool_, o);
  }
  return *threads_[i];
}

CpuThread& CpuSet::add_napi_thread(const Cpu::Options& opts) {
  Cpu::Options o = opts;
  o.core = -1;
  napi_threads_.push_back(std::make_unique<CpuThread>(pool_, o));
  return *napi_threads_.back();
}

void CpuSet::set_defer_free(bool on) {
  quiesce();
  each([on](CpuThread& t) { t.cpu().set_defer_free(on); });
}

bool CpuSet::idle() const {
  bool all = true;
  each([&all](const CpuThread& t) { all = all && t.idle(); });
  return all;
}

void CpuSet::quiesce() {
  // One thread's work may hand another more (a reply, a forward): until all are idle
  // in the same pass.
  while (!idle()) std::this_thread::yield();
}

}  // namespace pktpath
