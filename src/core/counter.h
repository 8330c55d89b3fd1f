// Single-writer statistics counter. Only the owning thread increments it; any thread may
// read it at any time. Relaxed atomics make the concurrent read well defined while the
// increment still compiles to a plain load/add/store (no bus lock).
#pragma once

#include <atomic>
#include <cstdint>

namespace pktpath {

class Counter {
 public:
  void add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }
  void reset() { v_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

}  // namespace pktpath
