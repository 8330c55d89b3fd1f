// RcuHashTable: lookups against a std::multimap model through growth and erases, and a
// reader searching while the writer inserts and erases (tsan).
#include "core/rcu_hash.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

namespace pktpath::testing {
namespace {

// Values are small integers stored as pointers' stand-ins; hashes collide on purpose
// (every value v hashes to v % 7) so chains hold several entries.
uint64_t h(uintptr_t v) { return v % 7; }

TEST(RcuHashTable, AgreesWithAModelThroughGrowthAndErase) {
  RcuWriterScope writer;
  RcuHashTable<uintptr_t> t;
  RcuRetireList retired;
  std::map<uintptr_t, bool> model;
  std::mt19937 rng(3);
  for (int i = 0; i < 20000; ++i) {
    const uintptr_t v = 1 + rng() % 3000;
    if (rng() % 3 == 0) {
      EXPECT_EQ(t.erase(h(v), v, retired), model.erase(v) == 1) << v;
    } else if (!model.count(v)) {
      t.insert(h(v), v, retired);
      model[v] = true;
    }
    ASSERT_EQ(t.size(), model.size());
  }
  for (uintptr_t v = 1; v <= 3000; ++v)
    EXPECT_EQ(t.find(h(v), [&](uintptr_t x) { return x == v; }), model.count(v) ? v : 0u) << v;
  EXPECT_GE(t.buckets(), t.size());  // it grew: about one entry per bucket at most
  size_t seen = 0;
  t.for_each([&](uintptr_t v) { seen += model.count(v); });
  EXPECT_EQ(seen, model.size());
  retired.barrier();
}

TEST(RcuHashTable, ReaderSearchesWhileTheWriterChangesIt) {
  RcuHashTable<uintptr_t> t;
  RcuRetireList retired;
  t.insert(h(1), 1, retired);  // always there
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0};
  std::thread reader([&] {
    RcuReader r;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 64; ++i)
        if (t.find(h(1), [](uintptr_t x) { return x == 1; }) != 1) misses.fetch_add(1);
      rcu_quiescent();
    }
  });
  RcuWriterScope writer;
  for (int round = 0; round < 200; ++round) {
    for (uintptr_t v = 2; v < 200; ++v) t.insert(h(v), v, retired);
    for (uintptr_t v = 2; v < 200; ++v) ASSERT_TRUE(t.erase(h(v), v, retired));
  }
  stop.store(true);
  reader.join();
  retired.barrier();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
}  // namespace pktpath::testing
