// CpuTimer: timers with owners. Arm and cancel from any thread whatever Cpu holds the
// timer; cancel waits for a running callback; an owner's or a Cpu's destruction leaves
// nothing behind on a list.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "core/clock.h"
#include "core/cpu.h"
#include "core/packet_pool.h"

namespace pktpath {
namespace {

struct Counted {
  std::atomic<int> fired{0};
  static void fn(CpuTimer& t, Cpu&) { static_cast<Counted*>(t.owner())->fired.fetch_add(1); }
};

class TimerTest : public ::testing::Test {
 protected:
  TimerTest() {
    a.set_clock(&clock);
    b.set_clock(&clock);
  }
  PacketPool pool{PacketPool::Options{.capacity = 256, .buf_size = 2048, .headroom = 128}};
  VirtualClock clock{1000};
  Cpu a{pool};
  Cpu b{pool};
};

TEST_F(TimerTest, FiresOnceInExpiryOrder) {
  Counted c1, c2;
  CpuTimer t1(&Counted::fn, &c1), t2(&Counted::fn, &c2);
  a.arm_timer(&t1, 3000);
  a.arm_timer(&t2, 2000);
  EXPECT_EQ(a.timers_armed(), 2u);
  clock.set(2500);
  a.run_pending();
  EXPECT_EQ(c2.fired.load(), 1);
  EXPECT_EQ(c1.fired.load(), 0);
  clock.set(4000);
  a.run_pending();
  a.run_pending();
  EXPECT_EQ(c1.fired.load(), 1);
  EXPECT_EQ(c2.fired.load(), 1);
  EXPECT_FALSE(t1.queued());
  EXPECT_EQ(a.timers_armed(), 0u);
}

// A timer armed for later is pending (a thread must not sleep past it) but not due work:
// a line's settling does not wait for it. It becomes due when the clock reaches it.
TEST_F(TimerTest, AnArmedTimerIsDueOnlyAtItsExpiry) {
  Counted c;
  CpuTimer t(&Counted::fn, &c);
  EXPECT_FALSE(a.has_due_work());
  a.arm_timer(&t, 3000);
  EXPECT_TRUE(a.has_pending());
  EXPECT_FALSE(a.has_due_work());
  EXPECT_EQ(a.next_timer_ns(), 3000u);
  clock.set(2999);
  EXPECT_FALSE(a.has_due_work());
  a.run_pending();
  EXPECT_EQ(c.fired.load(), 0);
  clock.set(3000);
  EXPECT_TRUE(a.has_due_work());
  a.run_pending();
  EXPECT_EQ(c.fired.load(), 1);
  EXPECT_FALSE(a.has_due_work());
  EXPECT_EQ(a.next_timer_ns(), UINT64_MAX);
  // An earlier timer armed in front becomes the head; cancelling it restores the later one.
  CpuTimer t2(&Counted::fn, &c);
  a.arm_timer(&t, 9000);
  a.arm_timer(&t2, 5000);
  EXPECT_EQ(a.next_timer_ns(), 5000u);
  EXPECT_TRUE(t2.cancel());
  EXPECT_EQ(a.next_timer_ns(), 9000u);
  EXPECT_TRUE(t.cancel());
  EXPECT_EQ(a.next_timer_ns(), UINT64_MAX);
}

// Armed on Cpu a, cancelled through any Cpu or none: it is off a's list.
TEST_F(TimerTest, CancelWhateverCpuArmedIt) {
  Counted c;
  CpuTimer t(&Counted::fn, &c);
  a.arm_timer(&t, 2000);
  EXPECT_TRUE(Cpu::cancel_timer(&t));
  EXPECT_FALSE(t.cancel());
  EXPECT_EQ(a.timers_armed(), 0u);
  clock.set(5000);
  a.run_pending();
  EXPECT_EQ(c.fired.load(), 0);
}

TEST_F(TimerTest, RearmOnAnotherCpuMovesIt) {
  Counted c;
  CpuTimer t(&Counted::fn, &c);
  a.arm_timer(&t, 2000);
  b.arm_timer(&t, 3000);
  EXPECT_EQ(a.timers_armed(), 0u);
  EXPECT_EQ(b.timers_armed(), 1u);
  EXPECT_EQ(t.expires_ns(), 3000u);
  clock.set(5000);
  a.run_pending();
  EXPECT_EQ(c.fired.load(), 0);
  b.run_pending();
  EXPECT_EQ(c.fired.load(), 1);
}

// The owner's destruction cancels: nothing stays on the Cpu's list (asan: no use after
// free when the Cpu later runs its timers).
TEST_F(TimerTest, DestroyedTimerLeavesTheList) {
  Counted c;
  auto t = std::make_unique<CpuTimer>(&Counted::fn, &c);
  a.arm_timer(t.get(), 2000);
  t.reset();
  EXPECT_EQ(a.timers_armed(), 0u);
  clock.set(5000);
  a.run_pending();
  EXPECT_EQ(c.fired.load(), 0);
}

// A Cpu destroyed with a timer armed drops it unfired; cancelling afterwards is safe.
TEST_F(TimerTest, DestroyedCpuDetachesItsTimers) {
  Counted c;
  CpuTimer t(&Counted::fn, &c);
  auto cpu = std::make_unique<Cpu>(pool);
  cpu->arm_timer(&t, 2000);
  cpu.reset();
  EXPECT_FALSE(t.queued());
  EXPECT_FALSE(t.cancel());
}

// Cancel from another thread while the callback runs on the Cpu's thread: it returns
// only after the callback has returned.
struct Blocking {
  std::atomic<bool> entered{false}, release{false}, done{false};
  static void fn(CpuTimer& t, Cpu&) {
    auto* s = static_cast<Blocking*>(t.owner());
    s->entered.store(true);
    while (!s->release.load()) std::this_thread::yield();
    s->done.store(true);
  }
};

TEST_F(TimerTest, CancelWaitsForARunningCallback) {
  Blocking s;
  CpuTimer t(&Blocking::fn, &s);
  a.arm_timer(&t, 2000);
  clock.set(5000);
  std::thread runner([&] {
    a.bind();
    a.run_pending();
  });
  while (!s.entered.load()) std::this_thread::yield();
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    t.cancel();
    cancelled.store(true);
  });
  for (int i = 0; i < 100; ++i) std::this_thread::yield();
  EXPECT_FALSE(cancelled.load());
  s.release.store(true);
  canceller.join();
  EXPECT_TRUE(s.done.load());
  runner.join();
}

// A callback may cancel or re-arm its own timer without waiting for itself.
struct SelfRearm {
  int runs = 0;
  static void fn(CpuTimer& t, Cpu& cpu) {
    auto* s = static_cast<SelfRearm*>(t.owner());
    if (++s->runs == 1) {
      t.cancel();
      cpu.arm_timer(&t, 9000);
    }
  }
};

TEST_F(TimerTest, CallbackCancelsAndRearmsItself) {
  SelfRearm s;
  CpuTimer t(&SelfRearm::fn, &s);
  a.arm_timer(&t, 2000);
  clock.set(5000);
  a.run_pending();
  EXPECT_EQ(s.runs, 1);
  EXPECT_TRUE(t.queued());
  clock.set(10000);
  a.run_pending();
  EXPECT_EQ(s.runs, 2);
}

// Many threads arming and cancelling one timer while its Cpu runs timers: no timer
// lost on a list, no crash (run under tsan/asan).
TEST_F(TimerTest, ConcurrentArmCancelRun) {
  Counted c;
  CpuTimer t(&Counted::fn, &c);
  std::atomic<bool> stop{false};
  std::thread runner([&] {
    a.bind();
    while (!stop.load()) {
      clock.advance(100);
      a.run_pending();
    }
  });
  std::thread armer([&] {
    for (int i = 0; i < 20000; ++i) (i & 1 ? b : a).arm_timer(&t, clock.now_ns() + 50);
  });
  for (int i = 0; i < 20000; ++i) t.cancel();
  armer.join();
  stop.store(true);
  runner.join();
  t.cancel();
  EXPECT_EQ(a.timers_armed(), 0u);
  EXPECT_EQ(b.timers_armed(), 0u);
}

}  // namespace
}  // namespace pktpath
