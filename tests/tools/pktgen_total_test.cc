// pktgen's Total: all threads' packets over the run's wall span (the first thread's start
// to the last thread's end), never more than the threads could have sent together.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "core/net.h"
#include "tools/pktgen.h"
#include "status_assert.h"

namespace pktpath {
namespace {

PktgenThreadResult thread(uint64_t packets, uint64_t start_ns, uint64_t end_ns) {
  PktgenThreadResult t;
  t.sofar = packets;
  t.start_ns = start_ns;
  t.end_ns = end_ns;
  t.elapsed_ns = end_ns - start_ns;
  t.pkt_size = 60;
  return t;
}

// Two threads of 1000 pps one after the other: 1000 pps together, not 2000.
TEST(PktgenTotal, ThreadsThatDoNotOverlapAreNotAdded) {
  PktgenResult r;
  r.threads = {thread(1000, 1'000'000'000, 2'000'000'000),
               thread(1000, 2'000'000'000, 3'000'000'000)};
  EXPECT_EQ(r.elapsed_ns(), 2'000'000'000u);
  EXPECT_DOUBLE_EQ(r.pps(), 1000.0);
  EXPECT_DOUBLE_EQ(r.mbps(), 1000.0 * 60 * 8 / 1e6);
}

// Started half a second apart: the span is 1.5 s.
TEST(PktgenTotal, StaggeredStartsCountFromTheFirst) {
  PktgenResult r;
  r.threads = {thread(1000, 1'000'000'000, 2'000'000'000),
               thread(1000, 1'500'000'000, 2'500'000'000)};
  EXPECT_EQ(r.elapsed_ns(), 1'500'000'000u);
  EXPECT_NEAR(r.pps(), 2000 / 1.5, 1e-9);
}

// Without start and end (results put together by hand): the longest thread's time.
TEST(PktgenTotal, WithoutTimestampsTheLongestThread) {
  PktgenResult r;
  r.threads.resize(2);
  r.threads[0].sofar = r.threads[1].sofar = 1000;
  r.threads[0].elapsed_ns = 1'000'000'000;
  r.threads[1].elapsed_ns = 500'000'000;
  EXPECT_EQ(r.elapsed_ns(), 1'000'000'000u);
  EXPECT_DOUBLE_EQ(r.pps(), 2000.0);
}

// A real run: the threads carry their start and end, and the total stays within what
// they could have sent together and within the time run() took.
TEST(PktgenTotal, RealRunTotalWithinThreadsTimesBestRate) {
  PacketPool pool{PacketPool::Options{.capacity = 16384}};
  Cpu control{pool};
  Net net{control};
  NetDevice::Config c;
  c.name = "foo";
  auto d_added = net.devices().add(c, "dummy");
  ASSERT_TRUE(ok(d_added));
  NetDevice* d = d_added.value_or(nullptr);
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  PktgenConfig cfg;
  cfg.dev = "foo";
  cfg.count = 20000;
  cfg.mode = PktgenMode::kQueueXmit;
  ASSERT_FALSE(pktgen_set(cfg, "dst_mac", "11:11:11:11:11:11"));
  ASSERT_FALSE(pktgen_set(cfg, "dst", "1.1.1.1"));
  Pktgen g(*d, pool, cfg, PktgenRunOptions{.threads = 3});
  const auto t0 = std::chrono::steady_clock::now();
  PktgenResult r = g.run();
  const auto wall =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  ASSERT_EQ(r.threads.size(), 3u);
  double best = 0;
  uint64_t longest = 0;
  for (const auto& t : r.threads) {
    EXPECT_GT(t.end_ns, t.start_ns);
    EXPECT_EQ(t.elapsed_ns, t.end_ns - t.start_ns);
    best = std::max(best, t.pps());
    longest = std::max(longest, t.elapsed_ns);
  }
  EXPECT_EQ(r.packets(), 60000u);
  EXPECT_GE(r.elapsed_ns(), longest);
  EXPECT_LE(r.elapsed_ns(), static_cast<uint64_t>(wall.count()));
  EXPECT_LE(r.pps(), 3 * best);
  EXPECT_GE(r.pps(), static_cast<double>(r.packets()) * 1e9 / static_cast<double>(wall.count()));
}

}  // namespace
}  // namespace pktpath
