// The per-Cpu input queue (enqueue_to_backlog / process_backlog) and the flow of
// document 002: packets allocated on one Cpu, consumed on another, returned through
// the allocator's defer list.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

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

// Every Cpu runs its pending work (deferred frees come home) and returns its cache:
// then the whole pool is back.
void expect_all_returned(PacketPool& pool, std::initializer_list<Cpu*> cpus) {
  for (Cpu* c : cpus) c->run_pending();
  for (Cpu* c : cpus) c->drain_cache();
  EXPECT_EQ(pool.available(), pool.capacity());
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
  expect_all_returned(pool, {&producer, &consumer});
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
  expect_all_returned(pool, {&producer, &consumer});
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

// Inside a section, packets for another Cpu wait on the sender's stage and go over in
// one batch when it ends: the target's NAPI scheduled once, the packets in order.
TEST(RpsStageTest, SectionHandsOverOnceAtItsEnd) {
  PacketPool pool(PacketPool::Options{.capacity = 256});
  Cpu sender(pool), target(pool);
  std::vector<Packet*> sent;
  sender.bh_disable();
  for (int i = 0; i < 10; ++i) {
    Packet* p = sender.alloc();
    sent.push_back(p);
    ASSERT_TRUE(sender.rps_enqueue(target, p));
  }
  EXPECT_EQ(target.backlog_queued(), 0u);  // still on the stage
  EXPECT_FALSE(target.remote_pending());
  sender.bh_enable();
  EXPECT_EQ(target.backlog_queued(), 10u);
  EXPECT_EQ(target.stats().received_rps.get(), 1u);
  // In order: what process_backlog hands the handler.
  static std::vector<Packet*> seen;
  seen.clear();
  target.set_rx_handler([](Cpu& cpu, Packet* p) {
    seen.push_back(p);
    cpu.free(p);
  });
  target.run_pending();
  EXPECT_EQ(seen, sent);
  expect_all_returned(pool, {&sender, &target});
}

// A long section hands over every kRpsBatch packets, and a run_pending inside it (the
// end of a softirq) hands over what waits.
TEST(RpsStageTest, BatchesInsideALongSection) {
  PacketPool pool(PacketPool::Options{.capacity = 512});
  Cpu sender(pool), target(pool);
  sender.bh_disable();
  for (uint32_t i = 0; i < Cpu::kRpsBatch - 1; ++i) ASSERT_TRUE(sender.rps_enqueue(target, sender.alloc()));
  EXPECT_EQ(target.backlog_queued(), 0u);
  ASSERT_TRUE(sender.rps_enqueue(target, sender.alloc()));
  EXPECT_EQ(target.backlog_queued(), Cpu::kRpsBatch);
  ASSERT_TRUE(sender.rps_enqueue(target, sender.alloc()));
  sender.run_pending();
  EXPECT_EQ(target.backlog_queued(), Cpu::kRpsBatch + 1);
  sender.bh_enable();
  target.run_pending();
  target.run_pending();
  EXPECT_EQ(target.backlog_len(), 0u);
  expect_all_returned(pool, {&sender, &target});
}

// The target's limit holds for staged packets: refused when what it holds and what waits
// for it pass max_backlog; a batch that finds the queue filled meanwhile drops the excess
// under CPU_BACKLOG; both counted in the target's backlog drops (softnet_stat column 2).
TEST(RpsStageTest, FullTargetRefusesAndDropsTheExcess) {
  PacketPool pool(PacketPool::Options{.capacity = 1024});
  Cpu sender(pool);
  Cpu target(pool, Cpu::Options{.max_backlog = 3});
  sender.bh_disable();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(sender.rps_enqueue(target, sender.alloc()));
  Packet* refused = sender.alloc();
  EXPECT_FALSE(sender.rps_enqueue(target, refused));
  sender.free_reason(refused, DropReason::CPU_BACKLOG);
  // Another sender fills the queue first: two of the four still fit (qlen <= max admits).
  Cpu other(pool);
  ASSERT_TRUE(target.backlog_enqueue(other.alloc()));
  ASSERT_TRUE(target.backlog_enqueue(other.alloc()));
  const uint64_t before = sender.stats().drops[static_cast<unsigned>(DropReason::CPU_BACKLOG)].get();
  sender.bh_enable();
  EXPECT_EQ(target.backlog_queued(), 4u);
  EXPECT_EQ(target.backlog_dropped(), 3u);  // the refusal and the two over the limit
  EXPECT_EQ(sender.stats().drops[static_cast<unsigned>(DropReason::CPU_BACKLOG)].get() - before, 2u);
  target.run_pending();
  expect_all_returned(pool, {&sender, &other, &target});
}

// Document 002's flow under threads: a producer allocates and hands packets to a
// consumer Cpu's backlog; the consumer frees them remotely; the producer flushes its
// defer list in its loop. Every packet comes back exactly once.
// Staged: the producer hands packets over through its RPS stage inside a section, a
// softirq round (run_pending, which hands the stage over) every 16 packets.
void remote_consumer_returns_every_packet(bool staged) {
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
  if (staged) producer.bh_disable();
  for (uint64_t n = 0; sent + refused < kTotal; ++n) {
    if (!staged || n % 16 == 0) producer.run_pending();
    Packet* p = producer.alloc();
    if (!p) continue;
    if (staged ? producer.rps_enqueue(consumer, p) : consumer.backlog_enqueue(p)) {
      ++sent;
    } else {
      producer.free_reason(p, DropReason::CPU_BACKLOG);
      ++refused;
    }
  }
  if (staged) producer.bh_enable();
  done.store(true, std::memory_order_release);
  rx.join();
  producer.run_pending();
  // Every packet processed or dropped once: refused at the stage or, staged, found the
  // queue full when its batch went over (both in the consumer's backlog drops).
  const uint64_t processed = consumer.stats().backlog_processed.get();
  EXPECT_EQ(processed + consumer.backlog_dropped(), kTotal);
  EXPECT_EQ(producer.stats().drops[static_cast<unsigned>(DropReason::CPU_BACKLOG)].get(), consumer.backlog_dropped());
  EXPECT_GE(consumer.backlog_dropped(), refused);
  EXPECT_EQ(consumer.stats().defer_queued.get() + consumer.stats().defer_nodefer.get(), processed);
  EXPECT_EQ(producer.stats().defer_flushed.get(), consumer.stats().defer_queued.get());
  producer.drain_cache();
  consumer.drain_cache();
  EXPECT_EQ(pool.available(), pool.capacity());
}

TEST(BacklogStress, RemoteConsumerReturnsEveryPacket) { remote_consumer_returns_every_packet(false); }
TEST(BacklogStress, StagedProducerReturnsEveryPacket) { remote_consumer_returns_every_packet(true); }

}  // namespace
}  // namespace pktpath
