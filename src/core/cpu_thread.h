// CpuThread: a Cpu with a datapath thread of its own (a CPU running ksoftirqd / threaded
// NAPI). The thread runs the Cpu's pending work (net_rx_action, timers, tx work) while
// there is any, spins a little, then sleeps until napi_schedule from another thread
// wakes it (Cpu::set_waker). RPS maps point at these Cpus.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/cpu.h"

namespace pktpath {

class CpuThread {
 public:
  CpuThread(PacketPool& pool, const Cpu::Options& opts);
  ~CpuThread();  // stop()
  // Stop the thread (what is still queued stays queued) and join it. Control thread.
  void stop();
  CpuThread(const CpuThread&) = delete;
  CpuThread& operator=(const CpuThread&) = delete;

  Cpu& cpu() { return cpu_; }
  // Wait until the thread has nothing pending: every packet handed to it is processed.
  // Control thread, while nobody else hands it work.
  void quiesce();
  bool idle() const;
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

 private:
  static void wake(void* self);
  void loop();

  Cpu cpu_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> idle_{false};      // nothing pending at the last look
  std::atomic<uint32_t> seq_{0};       // bumped by every wake; the futex word
  std::atomic<uint64_t> wakeups_{0};   // wakes that found the thread asleep
  std::thread thread_;
};

// The datapath Cpus of one runner, numbered from 0 as RPS masks number CPUs (bit i =
// Cpu i). Made on first use, with the options of the Net that first names them. Every
// Net of the runner points at the same set (Net::cpu_set()).
class CpuSet {
 public:
  explicit CpuSet(PacketPool& pool) : pool_(pool) {}
  ~CpuSet();  // stop()
  static constexpr unsigned kMax = 32;
  // Cpu i, started with `opts` if it does not exist yet. i < kMax.
  CpuThread& get(unsigned i, const Cpu::Options& opts);
  unsigned size() const { return static_cast<unsigned>(threads_.size()); }
  CpuThread* at(unsigned i) { return i < threads_.size() ? threads_[i].get() : nullptr; }
  // A thread for a device's threaded NAPI (napi_kthread_create's "napi/D"): outside the
  // numbering of RPS masks, not pinned, kept until stop() like the others.
  CpuThread& add_napi_thread(const Cpu::Options& opts);
  // Every thread idle at once (nothing handed to any of them is left).
  bool idle() const;
  void quiesce();
  // quiesce() for at most max_ns of real time; false if some thread was still busy
  // (packets circling between devices, as a redirect loop makes them).
  bool quiesce_for(uint64_t max_ns);
  // Stop every thread, then drop what is still queued on any of them (backlog_purge):
  // before the devices their packets point at go.
  void stop();
  // net.pktpath.defer_free for these Cpus (they are the ones freeing remotely). While
  // nothing is handed to them.
  void set_defer_free(bool on);

 private:
  PacketPool& pool_;
  std::vector<std::unique_ptr<CpuThread>> threads_;  // null where not made yet
  std::vector<std::unique_ptr<CpuThread>> napi_threads_;
  template <typename Fn> void each(Fn fn) const {
    for (const auto& t : threads_)
      if (t) fn(*t);
    for (const auto& t : napi_threads_) fn(*t);
  }
};

}  // namespace pktpath
