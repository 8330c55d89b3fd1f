// Cross-Cpu free through the defer list (document 002's mechanism).
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/cpu.h"
#include "core/packet_pool.h"
#include "sanitizer_scale.h"

namespace pktpath {
namespace {

// Every slot back in the pool exactly once: count and distinctness.
void expect_pool_whole(PacketPool& pool) {
  ASSERT_EQ(pool.available(), pool.capacity());
  std::vector<Packet*> all(pool.capacity());
  ASSERT_EQ(pool.get_bulk(all.data(), pool.capacity()), pool.capacity());
  EXPECT_EQ(std::set<Packet*>(all.begin(), all.end()).size(), pool.capacity());
  pool.put_bulk(all.data(), pool.capacity());
}

TEST(DeferFreeTest, RemoteFreeGoesToOwnersListUntilFlush) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu owner(pool), other(pool);
  Packet* ps[10];
  ASSERT_EQ(owner.alloc_bulk(ps, 10), 10u);
  uint32_t cached_before = owner.cached();
  other.free_bulk(ps, 10);
  EXPECT_EQ(owner.defer_count(), 10u);
  EXPECT_EQ(other.cached(), 0u);  // nothing landed in the freeing Cpu's cache
  EXPECT_EQ(other.stats().defer_queued.get(), 10u);
  // Below half of defer_max (32) nobody kicked the owner: the list waits for its next
  // net_rx_action, which flushes it whatever its length.
  EXPECT_FALSE(owner.has_pending());
  owner.run_pending();
  EXPECT_EQ(owner.defer_count(), 0u);
  EXPECT_EQ(owner.cached(), cached_before + 10);
  EXPECT_EQ(owner.stats().defer_flushed.get(), 10u);
  EXPECT_EQ(owner.stats().defer_flushes.get(), 1u);
  owner.defer_free_flush();  // empty: the lockless check returns at once
  EXPECT_EQ(owner.stats().defer_flushes.get(), 1u);
  owner.drain_cache();
  expect_pool_whole(pool);
}

TEST(DeferFreeTest, DeferMaxFallsBackToDirectFree) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu owner(pool, Cpu::Options{.defer_max = 4});
  Cpu other(pool);
  Packet* ps[10];
  ASSERT_EQ(owner.alloc_bulk(ps, 10), 10u);
  for (Packet* p : ps) other.free(p);
  EXPECT_EQ(owner.defer_count(), 4u);
  EXPECT_EQ(other.stats().defer_queued.get(), 4u);
  EXPECT_EQ(other.stats().defer_nodefer.get(), 6u);
  // The fallback returns them straight to the pool (nothing in the freeing Cpu's cache).
  EXPECT_EQ(other.cached(), 0u);
  EXPECT_EQ(pool.available() + owner.cached(), 64u - 4u);
  owner.defer_free_flush();
  owner.drain_cache();
  other.drain_cache();
  expect_pool_whole(pool);
}

// skb_attempt_defer_free's kick: the free that finds the list at half of defer_max makes
// the owner's has_pending() true (the IPI), once until its next net_rx_action.
TEST(DeferFreeTest, HalfFullListKicksTheOwner) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu owner(pool, Cpu::Options{.defer_max = 8});
  Cpu other(pool);
  Packet* ps[6];
  ASSERT_EQ(owner.alloc_bulk(ps, 6), 6u);
  for (int i = 0; i < 4; ++i) other.free(ps[i]);
  EXPECT_FALSE(owner.has_pending());
  other.free(ps[4]);  // finds 4 = 8 / 2 queued
  EXPECT_TRUE(owner.has_pending());
  owner.run_pending();
  EXPECT_FALSE(owner.has_pending());
  EXPECT_EQ(owner.defer_count(), 0u);
  EXPECT_EQ(owner.stats().defer_flushed.get(), 5u);
  other.free(ps[5]);
  EXPECT_FALSE(owner.has_pending());
  owner.run_pending();
  owner.drain_cache();
  other.drain_cache();
  expect_pool_whole(pool);
}

TEST(DeferFreeTest, DeferOffFreesDirectly) {
  PacketPool pool(PacketPool::Options{.capacity = 16});
  Cpu owner(pool);
  Cpu other(pool, Cpu::Options{.defer_free = false});
  Packet* p = owner.alloc();
  const uint32_t in_pool = pool.available();
  other.free(p);
  EXPECT_EQ(owner.defer_count(), 0u);
  EXPECT_EQ(other.cached(), 0u);
  EXPECT_EQ(pool.available(), in_pool + 1);  // straight back to the pool
  owner.drain_cache();
  other.drain_cache();
  expect_pool_whole(pool);
}

TEST(DeferFreeTest, OwnerGoneFreesDirectly) {
  PacketPool pool(PacketPool::Options{.capacity = 16});
  Cpu other(pool);
  Packet* p;
  {
    Cpu owner(pool);
    p = owner.alloc();
  }
  other.free(p);
  EXPECT_EQ(other.cached(), 1u);
  other.drain_cache();
  expect_pool_whole(pool);
}

TEST(DeferFreeTest, SharedPacketDefersOnlyOnLastUser) {
  PacketPool pool(PacketPool::Options{.capacity = 16});
  Cpu owner(pool), other(pool);
  Packet* p = owner.alloc();
  p->get();
  other.free(p);
  EXPECT_EQ(owner.defer_count(), 0u);
  other.free(p);
  EXPECT_EQ(owner.defer_count(), 1u);
  owner.run_pending();
  owner.drain_cache();
  expect_pool_whole(pool);
}

// N threads free packets allocated by one owner, which flushes in its loop. Every packet
// must come back exactly once (the pool aborts on overflow; distinctness checked).
TEST(DeferFreeStress, ManyThreadsToOneOwner) {
constexpr uint64_t kTotal = pktpath::testing::scaled<uint64_t>(2'000'000, 100'000);
  constexpr int kThreads = 3;
  PacketPool pool(PacketPool::Options{.capacity = 4096});
  Cpu owner(pool, Cpu::Options{.defer_max = 64});
  owner.bind();

  struct Handoff {
    std::mutex mu;
    std::deque<Packet*> q;
  };
  std::vector<Handoff> hand(kThreads);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> freed{0};
  std::vector<uint64_t> queued(kThreads), nodefer(kThreads);

  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      Cpu me(pool, Cpu::Options{.cache_size = 64, .cache_batch = 16});
      me.bind();
      for (;;) {
        Packet* batch[32];
        unsigned n = 0;
        {
          std::lock_guard g(hand[t].mu);
          while (n < 32 && !hand[t].q.empty()) {
            batch[n++] = hand[t].q.front();
            hand[t].q.pop_front();
          }
        }
        if (n == 0) {
          if (done.load(std::memory_order_acquire)) {
            std::lock_guard g(hand[t].mu);
            if (hand[t].q.empty()) break;
          }
          std::this_thread::yield();
          continue;
        }
        me.free_bulk(batch, n);
        freed.fetch_add(n, std::memory_order_relaxed);
      }
      queued[t] = me.stats().defer_queued.get();
      nodefer[t] = me.stats().defer_nodefer.get();
      me.drain_cache();
    });
  }

  uint64_t made = 0;
  int next = 0;
  while (made < kTotal) {
    owner.run_pending();  // flush what the workers handed back
    Packet* p = owner.alloc();
    if (!p) {
      std::this_thread::yield();
      continue;
    }
    p->cb[0] = made;
    {
      std::lock_guard g(hand[next].mu);
      hand[next].q.push_back(p);
    }
    next = (next + 1) % kThreads;
    ++made;
  }
  done.store(true, std::memory_order_release);
  for (auto& w : workers) w.join();
  owner.run_pending();

  EXPECT_EQ(freed.load(), kTotal);
  uint64_t total_queued = 0, total_nodefer = 0;
  for (int t = 0; t < kThreads; ++t) {
    total_queued += queued[t];
    total_nodefer += nodefer[t];
  }
  EXPECT_EQ(total_queued + total_nodefer, kTotal);  // every free was remote
  EXPECT_EQ(owner.stats().defer_flushed.get(), total_queued);
  EXPECT_GT(total_queued, 0u);
  EXPECT_EQ(owner.defer_count(), 0u);
  owner.drain_cache();
  expect_pool_whole(pool);
}

}  // namespace
}  // namespace pktpath
