// Per-Cpu slots of an object (the kernel's alloc_percpu for counters), indexed by Cpu
// id, each written only by its Cpu's thread. Like percpu memory they cost only for the
// Cpus that use them: slots come in blocks of kBlock Cpus, made the first time a Cpu of
// the block asks (an object no packet reached holds two pointers: a device or a rule
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
    delete first_.load(std::memory_order_acquire);
    if (Rest* r = rest_.load(std::memory_order_acquire)) {
      for (auto& k : r->at) delete k.load(std::memory_order_acquire);
      delete r;
    }
  }
  PerCpu(const PerCpu&) = delete;
  PerCpu& operator=(const PerCpu&) = delete;

  // The slot of Cpu `id` (< kMaxIds), made zeroed on first use. Cpus 0..kBlock-1 (the
  // usual ones) cost what a flat array does: one load from the object and a branch
  // taken once; higher ids go through a table made on first use.
  PP_ALWAYS_INLINE T& at(unsigned id) {
    if (PP_LIKELY(id < kBlock)) {
      Block* k = first_.load(std::memory_order_acquire);
      if (PP_UNLIKELY(!k)) k = make(first_);
      return k->slot[id];
    }
    return rest_at(id);
  }

  // Every slot made so far (a reader summing counters; slots not made are zero).
  template <class F>
  void for_each(F&& fn) const {
    if (const Block* k = first_.load(std::memory_order_acquire))
      for (const T& x : k->slot) fn(x);
    if (const Rest* r = rest_.load(std::memory_order_acquire))
      for (const auto& kp : r->at)
        if (const Block* k = kp.load(std::memory_order_acquire))
          for (const T& x : k->slot) fn(x);
  }

 private:
  static constexpr unsigned kBlock = 8;
  struct Block {
    T slot[kBlock];
  };
  struct Rest {  // blocks for ids kBlock..kMaxIds-1
    std::atomic<Block*> at[(kMaxIds + kBlock - 1) / kBlock - 1] = {};
  };
  template <class U>
  static PP_NOINLINE U* make(std::atomic<U*>& where) {
    auto* fresh = new U;
    U* cur = nullptr;
    if (where.compare_exchange_strong(cur, fresh, std::memory_order_acq_rel)) return fresh;
    delete fresh;
    return cur;
  }
  PP_NOINLINE T& rest_at(unsigned id) {
    Rest* r = rest_.load(std::memory_order_acquire);
    if (!r) r = make(rest_);
    std::atomic<Block*>& kp = r->at[id / kBlock - 1];
    Block* k = kp.load(std::memory_order_acquire);
    if (!k) k = make(kp);
    return k->slot[id % kBlock];
  }

  std::atomic<Block*> first_{nullptr};
  std::atomic<Rest*> rest_{nullptr};
};

}  // namespace pktpath
