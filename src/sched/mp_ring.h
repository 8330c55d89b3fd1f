// MpRing: a bounded FIFO of Packet pointers for many producers and one consumer, the
// lockless stand-in for ptr_ring/skb_array that pfifo_fast's bands use.
//
// Contract:
//  - produce() may be called by any number of threads at once; lock-free (a CAS on the
//    tail claims a slot). Fails when `limit` packets are in the ring.
//  - consume()/peek()/empty() are called by one thread at a time (the qdisc's dequeuer,
//    serialised by the qdisc seqlock); they never block.
//  - A produced pointer is visible to the consumer once produce() returns (release store
//    of the slot, acquire load in consume). A producer that claimed a slot but has not
//    stored yet makes the ring look empty at that slot; that producer always runs the
//    qdisc afterwards (qdisc_run / MISSED), so the packet is not stranded.
//  - Slots are reused only after the consumer has emptied them: a producer claims
//    position t only when t - head < limit <= size, and the consumer clears a slot
//    before publishing the new head (release), which the producer reads (acquire).
//
// Memory: one allocation at construction (size = next power of two >= limit).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/compiler.h"
#include "core/packet.h"

namespace pktpath {

class MpRing {
 public:
  explicit MpRing(uint32_t limit) { resize(limit); }

  // Only while empty and with no concurrent user (init/change).
  void resize(uint32_t limit) {
    if (limit == 0) limit = 1;
    uint32_t size = 1;
    while (size < limit) size <<= 1;
    slots_ = std::make_unique<std::atomic<Packet*>[]>(size);
    for (uint32_t i = 0; i < size; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
    mask_ = size - 1;
    limit_ = limit;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
  }
  uint32_t limit() const { return limit_; }

  // Multi-producer. false if full.
  PP_ALWAYS_INLINE bool produce(Packet* p) {
    uint64_t t = tail_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t h = head_.load(std::memory_order_acquire);
      if (PP_UNLIKELY(t - h >= limit_)) return false;
      if (tail_.compare_exchange_weak(t, t + 1, std::memory_order_relaxed,
                                      std::memory_order_relaxed))
        break;
    }
    slots_[t & mask_].store(p, std::memory_order_release);
    return true;
  }

  // Single consumer. nullptr if empty (or the next slot is claimed but not yet filled).
  PP_ALWAYS_INLINE Packet* consume() {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    std::atomic<Packet*>& s = slots_[h & mask_];
    Packet* p = s.load(std::memory_order_acquire);
    if (!p) return nullptr;
    s.store(nullptr, std::memory_order_relaxed);
    head_.store(h + 1, std::memory_order_release);
    return p;
  }
  PP_ALWAYS_INLINE Packet* peek() const {
    return slots_[head_.load(std::memory_order_relaxed) & mask_].load(std::memory_order_acquire);
  }
  bool empty() const { return peek() == nullptr; }

 private:
  // Producers write tail_, the consumer writes head_: separate lines.
  alignas(kCacheLine) std::atomic<uint64_t> tail_{0};
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};
  std::unique_ptr<std::atomic<Packet*>[]> slots_;
  uint32_t mask_ = 0;
  uint32_t limit_ = 0;
};

}  // namespace pktpath
