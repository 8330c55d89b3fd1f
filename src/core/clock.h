// Clock: where qdiscs and timers read time. MonotonicClock is real time (vDSO, no
// syscall); VirtualClock is advanced by hand so shapers and timers can be tested, or a
// pcap replayed, deterministically.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

namespace pktpath {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() const = 0;
};

class MonotonicClock final : public Clock {
 public:
  uint64_t now_ns() const override {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }
  static MonotonicClock& instance() {
    static MonotonicClock c;
    return c;
  }
};

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(uint64_t start_ns = 0) : now_(start_ns) {}
  uint64_t now_ns() const override { return now_.load(std::memory_order_acquire); }
  void advance(uint64_t ns) { now_.fetch_add(ns, std::memory_order_acq_rel); }
  void set(uint64_t ns) { now_.store(ns, std::memory_order_release); }

 private:
  std::atomic<uint64_t> now_;
};

}  // namespace pktpath
