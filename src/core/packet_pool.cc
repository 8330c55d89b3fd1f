#include "core/packet_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace pktpath {

namespace {
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

PacketPool::PacketPool(Options opts) : opts_(opts) {
  if (opts_.capacity == 0 || opts_.buf_size <= opts_.headroom)
    throw std::invalid_argument("packet pool: capacity must be > 0 and buf_size > headroom");
  slot_size_ = round_up(sizeof(Packet), kCacheLine) + round_up(opts_.buf_size, kCacheLine);
  // Whole pages, page-aligned: xdp_umem_reg takes nothing else as a UMEM.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  slab_bytes_ = round_up(slot_size_ * opts_.capacity, page);
  void* m = ::mmap(nullptr, slab_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  slab_ = static_cast<uint8_t*>(m);
  stack_ = std::make_unique_for_overwrite<Packet*[]>(opts_.capacity);
  // Slots are built on first use (get_bulk, in slot order): a run that needs few packets
  // touches few pages of the mapping.
}

Packet* PacketPool::build_slot(uint32_t i) {
  uint8_t* slot = slab_ + i * slot_size_;
  auto* p = new (slot) Packet();
  p->head = slot + round_up(sizeof(Packet), kCacheLine);
  p->end_off = opts_.buf_size;
  p->pool = this;
  return p;
}

PacketPool::~PacketPool() {
  for (uint32_t i = 0; i < built_; ++i) reinterpret_cast<Packet*>(slab_ + i * slot_size_)->~Packet();
  ::munmap(slab_, slab_bytes_);
}

PacketPool& PacketPool::large() {
  std::call_once(large_once_, [this] {
    large_ = std::make_unique<PacketPool>(Options{.capacity = kLargeCapacity,
                                                  .buf_size = static_cast<uint32_t>(round_up(opts_.headroom + kLargeFrame, kCacheLine)),
                                                  .headroom = opts_.headroom});
    large_->set_alloc_fail_every(alloc_fail_every());
  });
  return *large_;
}

unsigned PacketPool::get_bulk(Packet** out, unsigned n) {
  LockGuard g(lock_);
  unsigned k = n < top_ ? n : top_;
  for (unsigned i = 0; i < k; ++i) out[i] = stack_[--top_];
  while (PP_UNLIKELY(k < n) && built_ < opts_.capacity) out[k++] = build_slot(built_++);
  return k;
}

void PacketPool::put_bulk(Packet* const* in, unsigned n) {
  LockGuard g(lock_);
  // More packets back than exist means one was freed twice: stop before corrupting.
  if (PP_UNLIKELY(n > built_ - top_)) {
    std::fprintf(stderr, "pktpath: packet pool overflow (double free?)\n");
    std::abort();
  }
  // The mirror of get_bulk (out[0] is the top): in[0] goes back on top, so putting back
  // what get_bulk gave leaves the stack as it was. Pushed in order, every round trip (a
  // Cpu's refill, then its drain when it goes) reversed a batch, and the packet a new
  // Cpu reuses alternated between the batch's two ends, run after run.
  Packet** top = stack_.get() + top_;
  for (unsigned i = 0; i < n; ++i) top[n - 1 - i] = in[i];
  top_ += n;
}

void PacketPool::sort_free() {
  LockGuard g(lock_);
  std::sort(stack_.get(), stack_.get() + top_, std::greater<Packet*>());  // slot 0 on top
}

uint32_t PacketPool::available() const {
  LockGuard g(lock_);
  return top_ + (opts_.capacity - built_);
}

bool PacketPool::owns(const Packet* p) const {
  auto* b = reinterpret_cast<const uint8_t*>(p);
  return b >= slab_ && b < slab_ + slot_size_ * opts_.capacity &&
         (b - slab_) % slot_size_ == 0;
}

}  // namespace pktpath
