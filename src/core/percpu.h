// Per-Cpu slots of an object (the kernel's alloc_percpu for counters), indexed by Cpu
// id, each written only by its Cpu's thread. Like percpu memory they cost only for the
// Cpus that use them: slots come in blocks of kBlock Cpus, made the first time a Cpu of
// the block asks (an object no packet reached holds one pointer: a device or a rule
// among 100,000). Two Cpus making the same block at once keep one (compare-exchange).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/compiler.h"

namespace pktpath {

template <class T, unsigned kMaxIds>
class PerCpu {
 public:
  PerCpu() = default;
  ~PerCpu() {
    Blocks* b = blocks_.load(std::memory_order_acquire);
    if (!b) return;
    for (auto& k : b->at) delete k.load(std::memory_order_acquire);
    delete b;
  }
  PerCpu(const PerCpu&) = delete;
  PerCpu& operator=(const PerCpu&) = delete;

  // The slot of Cpu `id` (< kMaxIds), made zeroed on first use.
  PP_ALWAYS_INLINE T& at(unsigned id) {
    Blocks* b = blocks_.load(std::memory_order_acquire);
    if (PP_UNLIKELY(!b)) b = make(blocks_);
    Block* k = b->at[id / kBlock].load(std::memory_order_acquire);
    if (PP_UNLIKELY(!k)) k = make(b->at[id / kBlock]);
    return k->slot[id % kBlock];
  }

  // Every slot made so far (a reader summing counters; slots not made are zero).
  template <class F>
  void for_each(F&& fn) const {
    const Blocks* b = blocks_.load(std::memory_order_acquire);
    if (!b) return;
    for (const auto& kp : b->at)
      if (const Block* k = kp.load(std::memory_order_acquire))
        for (const T& x : k->slot) fn(x);
  }

 private:
  static constexpr unsigned kBlock = 8;
  struct Block {
    T slot[kBlock];
  };
  struct Blocks {
    std::atomic<Block*> at[(kMaxIds + kBlock - 1) / kBlock] = {};
  };
  template <class U>
  static PP_NOINLINE U* make(std::atomic<U*>& where) {
    auto* fresh = new U;
    U* cur = nullptr;
    if (where.compare_exchange_strong(cur, fresh, std::memory_order_acq_rel)) return fresh;
    delete fresh;
    return cur;
  }

  std::atomic<Blocks*> blocks_{nullptr};
};

}  // namespace pktpath
