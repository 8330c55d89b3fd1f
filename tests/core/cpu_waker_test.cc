// Cpu::set_waker(nullptr) against a wake() from another thread: once clearing returns, no
// wake runs the old waker, so its context (here on the caller's stack) may go. Under
// AddressSanitizer a wake that outlived it is a use after scope; tsan runs it too.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/cpu.h"
#include "core/packet_pool.h"

namespace pktpath {
namespace {

TEST(CpuWakerStress, ClearingWaitsForAWakeInFlight) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu cpu(pool);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> woken{0};
  std::thread waker([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      cpu.wake();
      std::this_thread::yield();
    }
  });
  for (int round = 0; round < 300; ++round) {
    struct Ctx {
      std::atomic<uint64_t>* woken;
      std::atomic<uint64_t> calls{0};
    } ctx{&woken};
    cpu.set_waker(
        [](void* c) {
          auto* x = static_cast<Ctx*>(c);
          x->calls.fetch_add(1, std::memory_order_relaxed);  // the caller's stack: must not outlive it
          x->woken->fetch_add(1, std::memory_order_relaxed);
        },
        &ctx);
    for (int spin = 0; spin < 50 && ctx.calls.load(std::memory_order_relaxed) == 0; ++spin) std::this_thread::yield();
    cpu.set_waker(nullptr, nullptr);
  }
  stop.store(true);
  waker.join();
  EXPECT_GT(woken.load(), 0u);
}

}  // namespace
}  // namespace pktpath
