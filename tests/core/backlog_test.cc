// The per-Cpu input queue (enqueue_to_backlog / process_backlog) and the flow of
// document 002: packets allocated on one Cpu, consumed on another, returned through
// the allocator's defer list.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/cpu.h"
#include "core/packet_pool.h"
#include "sanitizer_scale.h"

namespace pktpath {
namespace {

std::atomic<uint64_t> g_handled{0};
void count_and_free(Cpu& cpu, Packet* p) {
  g_handled.fetch_add(1, std::memory_order_relaxed);
  cpu.free(p);
}

TEST(BacklogTest, ProcessesInWeightsThroughTheHandler) {
  PacketPool pool(PacketPool::Options{.capacity = 512});
  Cpu producer(pool), consumer(pool);
  consumer.set_rx_handler(count_and_free);
  g_handled = 0;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(consumer.backlog_enqueue(producer.alloc()));
  EXPECT_EQ(consumer.backlog_len(), 100u);
  EXPECT_TRUE(consumer.has_pending());
  consumer.run_pending();
  EXPECT_EQ(g_handled.load(), 64u);  // one weight per net_rx_action round
  EXPECT_EQ(consumer.backlog_len(), 36u);
  consumer.run_pending();
  EXPECT_EQ(g_handled.load(), 100u);
  EXPECT_EQ(consumer.stats().backlog_processed.get(), 100u);
  // Freed on the consumer, allocated on the producer: all on the producer's defer list
  // (up to defer_max, the rest freed directly on the consumer).
  EXPECT_EQ(producer.defer_count() + consumer.stats().defer_nodefer.get(), 100u);
  producer.run_pending();
  EXPECT_EQ(producer.defer_count(), 0u);
  producer.drain_cache();
  consumer.drain_cache();
  EXPECT_EQ(pool.available(), 512u);
}

TEST(BacklogTest, FullBacklogRefuses) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu producer(pool);
  Cpu consumer(pool, Cpu::Options{.max_backlog = 3});
  Packet* ps[5];
  ASSERT_EQ(producer.alloc_bulk(ps, 5), 5u);
  // enqueue_to_backlog admits while qlen <= max_backlog: max + 1 packets.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(consumer.backlog_enqueue(ps[i]));
  EXPECT_FALSE(consumer.backlog_enqueue(ps[4]));
  EXPECT_EQ(consumer.backlog_dropped(), 1u);
  producer.free_reason(ps[4], DropReason::CPU_BACKLOG);
  consumer.run_pending();  // default handler consumes
  EXPECT_EQ(consumer.backlog_len(), 0u);
  producer.run_pending();
  producer.drain_cache();
  consumer.drain_cache();
  EXPECT_EQ(pool.available(), 64u);
}

TEST(BacklogTest, DestructorDrainsTheQueue) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu producer(pool);
  {
    Cpu consumer(pool);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(consumer.backlog_enqueue(producer.alloc()));
  }
  producer.run_pending();
  producer.drain_cache();
  EXPECT_EQ(pool.available(), 64u);
}

// Document 002's flow under threads: a producer allocates and hands packets to a
// consumer Cpu's backlog; the consumer frees them remotely; the producer flushes its
// defer list in its loop. Every packet comes back exactly once.
TEST(BacklogStress, RemoteConsumerReturnsEveryPacket) {
constexpr uint64_t kTotal = pktpath::testing::scaled<uint64_t>(2'000'000, 100'000);
  PacketPool pool(PacketPool::Options{.capacity = 8192});
  Cpu producer(pool);
  Cpu consumer(pool);
  std::atomic<bool> done{false};
  std::thread rx([&] {
    consumer.bind();
    while (!done.load(std::memory_order_acquire) || consumer.backlog_len() != 0) {
      if (consumer.has_pending()) consumer.run_pending();
      else cpu_relax();
    }
  });
  producer.bind();
  uint64_t sent = 0, refused = 0;
  while (sent + refused < kTotal) {
    producer.run_pending();
    Packet* p = producer.alloc();
    if (!p) continue;
    if (consumer.backlog_enqueue(p)) {
      ++sent;
    } else {
      producer.free_reason(p, DropReason::CPU_BACKLOG);
      ++refused;
    }
  }
  done.store(true, std::memory_order_release);
  rx.join();
  producer.run_pending();
  EXPECT_EQ(consumer.stats().backlog_processed.get(), sent);
  EXPECT_EQ(producer.stats().drops[static_cast<unsigned>(DropReason::CPU_BACKLOG)].get(), refused);
  EXPECT_EQ(consumer.stats().defer_queued.get() + consumer.stats().defer_nodefer.get(), sent);
  EXPECT_EQ(producer.stats().defer_flushed.get(), consumer.stats().defer_queued.get());
  producer.drain_cache();
  consumer.drain_cache();
  EXPECT_EQ(pool.available(), pool.capacity());
}

}  // namespace
}  // namespace pktpath
