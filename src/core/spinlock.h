// A test-and-test-and-set spinlock, the userspace stand-in for the kernel's spinlock_t.
//
// Contract: any thread may lock; the holder must unlock; not recursive. lock() has acquire
// and unlock() release semantics. Waiters spin on a plain load (no bus-locked ops while the
// lock is held) with PAUSE between reads.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/compiler.h"

namespace pktpath {

class SpinLock {
 public:
  void lock() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) cpu_relax();
    }
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// The spin_lock_irqsave/irqrestore analogue: reads the flags register (pushf) before
// taking the lock and writes it back (popf) after releasing it. In ring 3 popf cannot
// change IF, so nothing is masked; what remains is the cost the kernel pays to save and
// restore the flags, which is the difference document 002 removes.
inline uint64_t save_flags() {
  uint64_t flags;
  asm volatile("pushfq\n\tpopq %0" : "=r"(flags) : : "memory");
  return flags;
}
inline void restore_flags(uint64_t flags) {
  asm volatile("pushq %0\n\tpopfq" : : "r"(flags) : "memory", "cc");
}

template <class Lock>
class LockGuard {
 public:
  explicit LockGuard(Lock& l) : l_(l) { l_.lock(); }
  ~LockGuard() { l_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Lock& l_;
};

}  // namespace pktpath
