// A fixed-size ring of pointers (include/linux/ptr_ring.h): many producers, serialized by
// a spinlock (ptr_ring's producer_lock), and one consumer that takes no lock. A slot
// holds null when free; the producer fills the slot at its index if it is free (else the
// ring is full), the consumer empties the slot at its own index. Storage is inline: no
// allocation after construction.
//
// Contract: produce() from any thread; consume() from one consumer at a time (ordered
// with the next consumer by the caller, e.g. NAPI's SCHED bit). empty() may also be called
// by a consumer that has just handed over (veth_poll after napi_complete_done, while the
// next one already consumes): as __ptr_ring_empty, its answer may then be stale.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "base/compiler.h"
#include "core/spinlock.h"

namespace pktpath {

template <class T, uint32_t N>
class PtrRing {
  static_assert(N > 0 && (N & (N - 1)) == 0, "a power of two");

 public:
  // mirrors ptr_ring_produce: false when full (the caller still owns `p`).
  bool produce(T* p) {
    LockGuard g(producer_lock_);
    std::atomic<T*>& slot = queue_[producer_];
    if (slot.load(std::memory_order_acquire) != nullptr) return false;
    slot.store(p, std::memory_order_seq_cst);  // seq_cst: ordered before the notify check
    producer_ = (producer_ + 1) & (N - 1);
    return true;
  }
  // mirrors __ptr_ring_consume: the oldest entry, or null when empty.
  T* consume() {
    const uint32_t c = consumer_.load(std::memory_order_relaxed);
    std::atomic<T*>& slot = queue_[c];
    T* p = slot.load(std::memory_order_acquire);
    if (!p) return nullptr;
    slot.store(nullptr, std::memory_order_release);  // the producer may reuse it
    consumer_.store((c + 1) & (N - 1), std::memory_order_relaxed);
    return p;
  }
  // mirrors __ptr_ring_empty: the index is read once (READ_ONCE), the slot after it.
  bool empty() const {
    return queue_[consumer_.load(std::memory_order_relaxed)].load(std::memory_order_seq_cst) == nullptr;
  }
  static constexpr uint32_t size() { return N; }

 private:
  std::array<std::atomic<T*>, N> queue_{};
  std::atomic<uint32_t> consumer_{0};  // written by the consumer only; relaxed: see empty()
  alignas(kCacheLine) SpinLock producer_lock_;
  uint32_t producer_ = 0;  // under producer_lock_
};

}  // namespace pktpath
