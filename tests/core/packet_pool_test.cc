#include "core/packet_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "core/cpu.h"

namespace pktpath {
namespace {

// Pages of the pool's mapping in memory (mincore).
size_t resident_pages(const PacketPool& pool) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v(pool.slab_bytes() / page);
  if (::mincore(pool.slab(), pool.slab_bytes(), v.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

// A slot is built when it is first handed out, in slot order: a large pool costs no
// memory until it is used, and what a run never takes is never touched.
TEST(PacketPoolTest, SlotsAreBuiltOnFirstUse) {
  PacketPool pool{PacketPool::Options{.capacity = 16384, .buf_size = 2048, .headroom = 128}};
  EXPECT_EQ(pool.available(), 16384u);
  EXPECT_EQ(resident_pages(pool), 0u);
  std::vector<Packet*> got(10);
  ASSERT_EQ(pool.get_bulk(got.data(), 10), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    EXPECT_EQ(pool.index_of(got[i]), i);
    EXPECT_EQ(got[i]->pool, &pool);
  }
  EXPECT_LE(resident_pages(pool), 10u);
  EXPECT_EQ(pool.available(), 16374u);
  // A freed packet is handed out again before a new slot is built.
  pool.put_bulk(&got[3], 1);
  Packet* again = nullptr;
  ASSERT_EQ(pool.get_bulk(&again, 1), 1u);
  EXPECT_EQ(again, got[3]);
  ASSERT_EQ(pool.get_bulk(&again, 1), 1u);
  EXPECT_EQ(pool.index_of(again), 10u);
  pool.put_bulk(got.data(), 10);
  pool.put_bulk(&again, 1);
  EXPECT_EQ(pool.available(), 16384u);
}

// The slab is one page-aligned mapping of whole pages (what an AF_XDP UMEM must be);
// slot_at maps any offset inside a slot to its packet and index_of back, nothing past
// the last slot.
TEST(PacketPoolTest, SlabIsPageAlignedAndOffsetsMapToSlots) {
  PacketPool pool{PacketPool::Options{.capacity = 37, .buf_size = 2048, .headroom = 128}};
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.slab()) % 4096, 0u);
  EXPECT_EQ(pool.slab_bytes() % 4096, 0u);
  EXPECT_GE(pool.slab_bytes(), pool.slot_size() * pool.capacity());
  std::vector<Packet*> all(pool.capacity());
  ASSERT_EQ(pool.get_bulk(all.data(), pool.capacity()), pool.capacity());
  std::set<uint32_t> seen;
  for (Packet* p : all) {
    const uint64_t head = static_cast<uint64_t>(p->head - pool.slab());
    EXPECT_EQ(pool.slot_at(head), p);
    EXPECT_EQ(pool.slot_at(head + 256), p);             // inside the buffer
    EXPECT_EQ(pool.slot_at(head + p->end_off - 1), p);  // its last byte
    EXPECT_LE(head + p->end_off, pool.slab_bytes());
    seen.insert(pool.index_of(p));
  }
  EXPECT_EQ(seen.size(), pool.capacity());
  EXPECT_EQ(*seen.rbegin(), pool.capacity() - 1);
  EXPECT_EQ(pool.slot_at(pool.slot_size() * pool.capacity()), nullptr);
  pool.put_bulk(all.data(), pool.capacity());
}

TEST(PacketPoolTest, RejectsBadOptions) {
  EXPECT_THROW(PacketPool(PacketPool::Options{.capacity = 0}), std::invalid_argument);
  EXPECT_THROW(PacketPool(PacketPool::Options{.capacity = 4, .buf_size = 64, .headroom = 64}),
               std::invalid_argument);
}

TEST(PacketPoolTest, GetBulkIsBoundedAndDistinct) {
  PacketPool pool(PacketPool::Options{.capacity = 10});
  Packet* ps[16];
  EXPECT_EQ(pool.get_bulk(ps, 16), 10u);
  EXPECT_EQ(pool.available(), 0u);
  std::set<Packet*> distinct(ps, ps + 10);
  EXPECT_EQ(distinct.size(), 10u);
  for (Packet* p : distinct) EXPECT_TRUE(pool.owns(p));
  EXPECT_EQ(pool.get_bulk(ps + 10, 1), 0u);
  pool.put_bulk(ps, 10);
  EXPECT_EQ(pool.available(), 10u);
}

TEST(PacketPoolTest, ExhaustionIsCountedAndRecovers) {
  PacketPool pool(PacketPool::Options{.capacity = 8});
  Cpu cpu(pool, Cpu::Options{.cache_size = 4, .cache_batch = 2});
  std::vector<Packet*> held;
  while (Packet* p = cpu.alloc()) held.push_back(p);
  EXPECT_EQ(held.size(), 8u);
  EXPECT_EQ(cpu.stats().alloc_fail.get(), 1u);
  EXPECT_EQ(cpu.alloc(), nullptr);
  EXPECT_EQ(cpu.stats().alloc_fail.get(), 2u);
  Packet* extra[3];
  EXPECT_EQ(cpu.alloc_bulk(extra, 3), 0u);
  EXPECT_EQ(cpu.stats().alloc_fail.get(), 5u);
  cpu.free(held.back());
  held.pop_back();
  Packet* again = cpu.alloc();
  ASSERT_NE(again, nullptr);  // recovered after one free
  held.push_back(again);
  for (Packet* p : held) cpu.free(p);
  cpu.drain_cache();
  EXPECT_EQ(pool.available(), 8u);
}

TEST(PacketPoolTest, CacheSpillsAndRefillsInBatches) {
  PacketPool pool(PacketPool::Options{.capacity = 256});
  Cpu cpu(pool, Cpu::Options{.cache_size = 32, .cache_batch = 8});
  Packet* p = cpu.alloc();
  EXPECT_EQ(cpu.cached(), 7u);  // one batch taken, one handed out
  EXPECT_EQ(pool.available(), 248u);
  cpu.free(p);
  std::vector<Packet*> many(100);
  ASSERT_EQ(cpu.alloc_bulk(many.data(), 100), 100u);
  cpu.free_bulk(many.data(), 100);
  EXPECT_LE(cpu.cached(), 32u);  // never beyond the cache size
  EXPECT_EQ(pool.available() + cpu.cached(), 256u);
}

TEST(PacketPoolTest, BulkAllocGivesResetPacketsAndFreeBulkReturnsAll) {
  PacketPool pool(PacketPool::Options{.capacity = 128});
  Cpu cpu(pool);
  Packet* ps[64];
  ASSERT_EQ(cpu.alloc_bulk(ps, 64), 64u);
  for (Packet* p : ps) {
    p->mark = 9;
    p->put(60);
  }
  cpu.free_bulk(ps, 64);
  ASSERT_EQ(cpu.alloc_bulk(ps, 64), 64u);
  for (Packet* p : ps) {
    EXPECT_EQ(p->mark, 0u);
    EXPECT_EQ(p->len, 0u);
    EXPECT_EQ(p->users.load(), 1u);
    EXPECT_EQ(p->alloc_cpu, cpu.id());
  }
  cpu.free_bulk(ps, 64);
  cpu.drain_cache();
  EXPECT_EQ(pool.available(), 128u);
}

TEST(PacketPoolTest, FreeBulkHonoursSharedPackets) {
  PacketPool pool(PacketPool::Options{.capacity = 16});
  Cpu cpu(pool);
  Packet* ps[4];
  ASSERT_EQ(cpu.alloc_bulk(ps, 4), 4u);
  ps[1]->get();
  cpu.free_bulk(ps, 4);
  EXPECT_EQ(ps[1]->users.load(), 1u);  // one user left: not recycled
  cpu.drain_cache();
  EXPECT_EQ(pool.available(), 15u);
  cpu.free(ps[1]);
  cpu.drain_cache();
  EXPECT_EQ(pool.available(), 16u);
}

TEST(PacketPoolTest, RawCacheBulkRoundTrip) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Cpu cpu(pool, Cpu::Options{.cache_size = 16, .cache_batch = 8});
  Packet* ps[40];
  EXPECT_EQ(cpu.cache_get_bulk(ps, 12), 12u);
  cpu.cache_put_bulk(ps, 12);
  EXPECT_EQ(cpu.cache_get_bulk(ps, 40), 40u);  // beyond the cache: straight from the pool
  EXPECT_LE(cpu.cached(), 16u);
  cpu.cache_put_bulk(ps, 40);
  EXPECT_LE(cpu.cached(), 16u);
  cpu.drain_cache();
  EXPECT_EQ(pool.available(), 64u);
}

TEST(PacketPoolTest, PacketFromAnotherPoolGoesHome) {
  PacketPool a(PacketPool::Options{.capacity = 8});
  PacketPool b(PacketPool::Options{.capacity = 8});
  Cpu ca(a), cb(b);
  Packet* p = cb.alloc();
  ASSERT_NE(p, nullptr);
  p->alloc_cpu = ca.id();  // pretend ca allocated it: ca's free must not cache b's slot
  ca.free(p);
  ca.drain_cache();
  cb.drain_cache();
  EXPECT_EQ(a.available(), 8u);
  EXPECT_EQ(b.available(), 8u);
}

// get_bulk then put_bulk leaves the pool as it was: the next taker gets the same packets
// in the same order.
TEST(PacketPoolTest, PutBulkUndoesGetBulk) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Packet* a[16];
  Packet* b[16];
  ASSERT_EQ(pool.get_bulk(a, 16), 16u);
  pool.put_bulk(a, 16);
  ASSERT_EQ(pool.get_bulk(b, 16), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(a[i], b[i]) << i;
  pool.put_bulk(b, 16);
}

// Each pktgen run makes a Cpu on the same pool: every one must reuse the same hot packet
// (pushed in order, the drain reversed the refill's batch and the hot packet alternated).
TEST(PacketPoolTest, CpuLifetimesKeepThePoolOrder) {
  PacketPool pool(PacketPool::Options{.capacity = 256});
  Packet* first[3];
  for (Packet*& f : first) {
    Cpu cpu(pool);
    f = cpu.alloc();
    ASSERT_NE(f, nullptr);
    cpu.free(f);
  }
  EXPECT_EQ(first[0], first[1]);
  EXPECT_EQ(first[1], first[2]);
}

// sort_free puts the free packets back in the constructor's order, whatever came before.
TEST(PacketPoolTest, SortFreeRestoresTheFirstOrder) {
  PacketPool pool(PacketPool::Options{.capacity = 64});
  Packet* a[64];
  ASSERT_EQ(pool.get_bulk(a, 64), 64u);
  for (int i = 0; i < 64; i += 2) pool.put_bulk(&a[i], 1);
  for (int i = 1; i < 64; i += 2) pool.put_bulk(&a[i], 1);
  pool.sort_free();
  Packet* b[64];
  ASSERT_EQ(pool.get_bulk(b, 64), 64u);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(b[i], pool.slot_at(uint64_t(i) * pool.slot_size())) << i;
  pool.put_bulk(b, 64);
}

}  // namespace
}  // namespace pktpath
