// core/rcu.h: publication and frees after a grace period, at once and in batches.
#include "core/rcu.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

namespace pktpath {
namespace {

struct Counted {
  explicit Counted(int* frees) : frees(frees) {}
  ~Counted() { ++*frees; }
  int* frees;
};

TEST(RcuPtr, ReplaceFreesTheOldObjectAndDestructionTheLast) {
  int frees = 0;
  {
    RcuPtr<Counted> p;
    EXPECT_TRUE(p.empty());
    p.replace(std::make_unique<const Counted>(&frees));
    const Counted* first = p.get();
    ASSERT_NE(first, nullptr);
    p.replace(std::make_unique<const Counted>(&frees));
    EXPECT_EQ(frees, 1);
    EXPECT_NE(p.get(), nullptr);
  }
  EXPECT_EQ(frees, 2);
}

TEST(RcuRetireList, FreesInBatchesAndOnBarrier) {
  int frees = 0;
  RcuRetireList list;
  for (size_t i = 0; i + 1 < RcuRetireList::kBatch; ++i) list.retire(std::make_unique<Counted>(&frees));
  EXPECT_EQ(frees, 0);  // held until a grace period covers the batch
  list.retire(std::make_unique<Counted>(&frees));
  EXPECT_EQ(frees, static_cast<int>(RcuRetireList::kBatch));
  list.retire(std::make_unique<Counted>(&frees));
  list.barrier();
  EXPECT_EQ(frees, static_cast<int>(RcuRetireList::kBatch) + 1);
}

// A registered reader that keeps reading while a writer replaces the object: every
// object it sees is alive until its next quiescent state.
TEST(RcuPtr, ReaderNeverSeesAFreedObject) {
  struct Obj {
    std::atomic<int> alive{1};
    ~Obj() { alive.store(0); }
  };
  RcuPtr<Obj> p;
  p.replace(std::make_unique<const Obj>());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    RcuReader r;
    while (!stop.load()) {
      for (int i = 0; i < 64; ++i)
        if (const Obj* o = p.get(); o && o->alive.load() != 1) bad.fetch_add(1);
      rcu_quiescent();
    }
  });
  for (int i = 0; i < 200; ++i) {
    RcuWriterScope writer;
    p.replace(std::make_unique<const Obj>());
  }
  stop.store(true);
  reader.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace pktpath
