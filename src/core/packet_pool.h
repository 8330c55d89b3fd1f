// PacketPool: a bounded store of packet slots shared by every Cpu (the kmem_cache behind
// skbuff_head_cache, with the data buffer in the same slot as DPDK's mbufs do).
//
// All memory is mapped once, at construction, and each slot is built the first time it
// is handed out; the per-packet path never touches the heap. The slots lie in one
// page-aligned mapping (slab()), so that a driver can lend their buffers to the kernel
// as an AF_XDP UMEM (drivers/xdp.cc), as DPDK's af_xdp PMD registers its mempool. Cpus take and return packets in bulk through get_bulk/put_bulk and keep their
// own caches (see Cpu), so the pool's lock is taken once per batch, not per packet.
//
// Concurrency: get_bulk/put_bulk may be called from any thread (internal spinlock).
// The pool must outlive every Cpu and packet that uses it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/packet.h"
#include "core/spinlock.h"

namespace pktpath {

class PacketPool {
 public:
  struct Options {
    uint32_t capacity = 1u << 16;        // packets
    uint32_t buf_size = kDefaultBufSize;  // bytes per packet buffer, headroom included
    uint32_t headroom = kDefaultHeadroom;
  };

  explicit PacketPool(Options opts);
  PacketPool() : PacketPool(Options{}) {}
  ~PacketPool();
  PacketPool(const PacketPool&) = delete;
  PacketPool& operator=(const PacketPool&) = delete;

  // Take up to n free packets (kmem_cache_alloc_bulk); returns how many were taken.
  // The packets are not reset: Cpu::alloc does that.
  unsigned get_bulk(Packet** out, unsigned n);
  // Return n packets (kmem_cache_free_bulk). Each must belong to this pool. in[0] ends
  // on top: put_bulk of what get_bulk gave restores the pool's order.
  void put_bulk(Packet* const* in, unsigned n);
  // The free packets back in the constructor's order (slot 0 handed out first): the same
  // start for every measured run. Any thread; O(n log n) in the free packets.
  void sort_free();

  uint32_t capacity() const { return opts_.capacity; }
  uint32_t buf_size() const { return opts_.buf_size; }
  uint32_t headroom() const { return opts_.headroom; }
  // Packets the pool can hand out: freed ones and slots not built yet (excludes those
  // in Cpu caches).
  uint32_t available() const;
  bool owns(const Packet* p) const;

  // The mapping every slot lives in: page-aligned, slab_bytes() long (whole pages).
  uint8_t* slab() const { return slab_; }
  size_t slab_bytes() const { return slab_bytes_; }
  size_t slot_size() const { return slot_size_; }
  // The packet whose slot holds slab offset `off` (a UMEM address); nullptr past the
  // last slot.
  Packet* slot_at(uint64_t off) const {
    const uint64_t i = off / slot_size_;
    return PP_LIKELY(i < opts_.capacity) ? reinterpret_cast<Packet*>(slab_ + i * slot_size_) : nullptr;
  }
  // The slot index of a packet of this pool (0..capacity-1).
  uint32_t index_of(const Packet* p) const {
    return static_cast<uint32_t>((reinterpret_cast<const uint8_t*>(p) - slab_) / slot_size_);
  }
  // Buffers for frames larger than this pool's (up to 64 KiB: a capture's GRO and TSO
  // segments, a device with MTU 65535), as the kernel takes a larger kmalloc for a large
  // head. A companion pool of kLargeCapacity slots made on the first call (a device's
  // open: the control path), then the same for this pool's life; its packets return to
  // it through Packet::pool. Any thread.
  static constexpr uint32_t kLargeFrame = 65535 + 18;  // the largest MTU plus a VLAN-tagged header
  static constexpr uint32_t kLargeCapacity = 256;
  PacketPool& large();
  // Fault injection: the interval a Cpu created on this pool starts with (see
  // Cpu::set_alloc_fail_every); 0 = off.
  uint32_t alloc_fail_every() const { return alloc_fail_every_.load(std::memory_order_relaxed); }
  void set_alloc_fail_every(uint32_t n) { alloc_fail_every_.store(n, std::memory_order_relaxed); }

 private:
  Options opts_;
  size_t slot_size_ = 0;
  size_t slab_bytes_ = 0;
  uint8_t* slab_ = nullptr;
  std::unique_ptr<Packet*[]> stack_;
  mutable SpinLock lock_;
  uint32_t top_ = 0;    // freed packets on the stack; guarded by lock_
  uint32_t built_ = 0;  // slots 0..built_-1 hold a Packet; guarded by lock_
  Packet* build_slot(uint32_t i);
  std::atomic<uint32_t> alloc_fail_every_{0};
  std::once_flag large_once_;
  std::unique_ptr<PacketPool> large_;
};

}  // namespace pktpath
