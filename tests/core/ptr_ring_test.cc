// PtrRing: order, full and empty, and the consumer handing over to another while it still
// asks whether the ring is empty (veth_poll after napi_complete_done).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/ptr_ring.h"
#include "sanitizer_scale.h"

namespace pktpath {
namespace {

TEST(PtrRing, FifoUntilFullThenRefusesUntilConsumed) {
  PtrRing<int, 4> ring;
  int v[5] = {0, 1, 2, 3, 4};
  EXPECT_TRUE(ring.empty());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.produce(&v[i]));
  EXPECT_FALSE(ring.produce(&v[4]));  // full: the caller keeps it
  EXPECT_FALSE(ring.empty());
  EXPECT_EQ(ring.consume(), &v[0]);
  EXPECT_TRUE(ring.produce(&v[4]));  // the freed slot is reused
  for (int i = 1; i < 5; ++i) EXPECT_EQ(ring.consume(), &v[i]);
  EXPECT_EQ(ring.consume(), nullptr);
  EXPECT_TRUE(ring.empty());
}

// One producer; two consumers that take turns through a token as NAPI's SCHED bit. The
// one that gives the token up then reads empty(), while the other may already consume:
// every item is taken exactly once, and (under tsan) the late read is no data race.
TEST(PtrRingStress, ConsumerReadsEmptyAfterHandingOver) {
  constexpr int kItems = pktpath::testing::scaled<int>(400'000, 40'000);
  PtrRing<int, 64> ring;
  std::vector<int> items(kItems);
  std::vector<std::atomic<int>> taken(kItems);
  std::atomic<bool> token{false};
  std::atomic<int> consumed{0};
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      items[i] = i;
      while (!ring.produce(&items[i])) std::this_thread::yield();
    }
  });
  auto consumer = [&] {
    while (consumed.load(std::memory_order_relaxed) < kItems) {
      bool free = false;
      if (!token.compare_exchange_strong(free, true, std::memory_order_acq_rel)) continue;
      for (int k = 0; k < 16; ++k) {
        int* p = ring.consume();
        if (!p) break;
        taken[*p].fetch_add(1, std::memory_order_relaxed);
        consumed.fetch_add(1, std::memory_order_relaxed);
      }
      token.store(false, std::memory_order_release);
      (void)ring.empty();  // the late read
    }
  };
  std::thread c1(consumer), c2(consumer);
  producer.join();
  c1.join();
  c2.join();
  EXPECT_EQ(consumed.load(), kItems);
  int wrong = 0;
  for (auto& t : taken) wrong += t.load() != 1;
  EXPECT_EQ(wrong, 0);
  EXPECT_TRUE(ring.empty());
}

}  // namespace
}  // namespace pktpath
