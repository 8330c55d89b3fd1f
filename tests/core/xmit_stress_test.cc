// Concurrency stress for the qdisc layer (run under tsan in CI: suite names contain
// "Stress"). Several sender threads, each with its own Cpu, push packets into one
// NOLOCK pfifo_fast, into mq, into a locked pfifo, and into pfifo_fast on a driver that
// returns BUSY. After the senders stop and every Cpu has run its pending work, every
// packet must be transmitted or dropped exactly once and nothing may stay queued.
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "xmit_fixture.h"
#include "core/net.h"
#include "sanitizer_scale.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

constexpr uint64_t kPerThread = pktpath::testing::scaled<uint64_t>(1000000, 20000);

struct StressCase {
  const char* name;
  const char* link;  // dummy | testdrv
  uint16_t queues;
  const char* root;  // qdisc to install at the root ("" = default)
  unsigned threads;
  uint32_t busy_every;
  bool bypass;
};

class XmitStress : public ::testing::TestWithParam<StressCase> {};

TEST_P(XmitStress, EveryPacketTransmittedOrDroppedOnce) {
  const StressCase& c = GetParam();
  PacketPool pool{PacketPool::Options{.capacity = 1u << 16, .buf_size = 256, .headroom = 64}};
  std::vector<std::unique_ptr<Cpu>> cpus;
  for (unsigned i = 0; i <= c.threads; ++i) cpus.push_back(std::make_unique<Cpu>(pool));
  Cpu& control = *cpus[c.threads];
  control.bind();
  uint64_t drop_base[kDropReasonCount] = {};
  for (auto& cp : cpus)
    for (unsigned r = 0; r < kDropReasonCount; ++r) drop_base[r] += cp->stats().drops[r].get();
  {
    Net net(control);
    DeviceTable& table = net.devices();
    NetDevice::Config cfg;
    cfg.name = "s0";
    cfg.num_tx_queues = c.queues;
    cfg.tx_queue_len = 256;
    auto dev_added = table.add(cfg, c.link);
    ASSERT_TRUE(ok(dev_added));
    NetDevice* dev = dev_added.value_or(nullptr);
    ASSERT_TRUE(ok(table.set_up(*dev, true)));
    if (*c.root) {
      QdiscRequest r;
      r.op = QdiscOp::Replace;
      r.kind = c.root;
      auto st = tc_qdisc_modify(table, *dev, r);
      ASSERT_TRUE(st) << st.error().msg;
    }
    if (std::string(c.link) == "testdrv") testdrv_state(*dev).busy_every = c.busy_every;
    net.xmit_config().bypass.store(c.bypass);

    std::atomic<bool> go{false};
    std::vector<uint64_t> sent(c.threads, 0);
    std::vector<std::thread> th;
    for (unsigned t = 0; t < c.threads; ++t) {
      th.emplace_back([&, t] {
        Cpu& cpu = *cpus[t];
        cpu.bind();
        while (!go.load(std::memory_order_acquire)) cpu_relax();
        uint64_t n = 0;
        for (uint64_t i = 0; i < kPerThread; ++i) {
          Packet* p = cpu.alloc();
          if (!p) {
            cpu.run_pending();
            continue;
          }
          p->put(60);
          p->dev = dev;
          p->mark = static_cast<uint32_t>(i);
          p->priority = static_cast<uint32_t>(i & 7);
          p->hash = static_cast<uint32_t>((i * 0x9e3779b9u) ^ t);
          dev_queue_xmit(cpu, p);
          ++n;
          if ((i & 63) == 0) cpu.run_pending();
        }
        for (int k = 0; k < 1000000 && cpu.has_pending(); ++k) cpu.run_pending();
        sent[t] = n;
      });
    }
    go.store(true, std::memory_order_release);
    for (auto& x : th) x.join();
    // Senders stopped: run whatever work is left on any Cpu (joined threads: no race).
    for (int round = 0; round < 100; ++round)
      for (auto& cp : cpus)
        while (cp->has_pending()) cp->run_pending();

    uint64_t total_sent = 0;
    for (uint64_t s : sent) total_sent += s;
    uint64_t dropped = 0;
    for (auto& cp : cpus)
      for (unsigned r = 0; r < kDropReasonCount; ++r) dropped += cp->stats().drops[r].get();
    for (unsigned r = 0; r < kDropReasonCount; ++r) dropped -= drop_base[r];
    const uint64_t transmitted = dev->stats_sum().tx_packets;
    EXPECT_EQ(dev->qdisc()->qlen(), 0u);
    EXPECT_EQ(transmitted + dropped, total_sent)
        << "transmitted " << transmitted << " dropped " << dropped;
    EXPECT_GT(transmitted, 0u);
    std::printf("  %s: sent %llu transmitted %llu dropped %llu\n", c.name,
                (unsigned long long)total_sent, (unsigned long long)transmitted,
                (unsigned long long)dropped);
    for (uint16_t q = 0; q < dev->num_tx_queues(); ++q)
      EXPECT_EQ(dev->txq(q).qdisc->requeued.load(), 0u);
  }
  // No packet freed twice and none lost: the pool has every slot back.
  for (auto& cp : cpus) {
    cp->defer_free_flush();
    cp->drain_cache();
  }
  EXPECT_EQ(pool.available(), pool.capacity());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, XmitStress,
    ::testing::Values(StressCase{"pfifo_fast_2t", "dummy", 1, "pfifo_fast", 2, 0, true},
                      StressCase{"pfifo_fast_4t", "dummy", 1, "pfifo_fast", 4, 0, true},
                      StressCase{"pfifo_fast_4t_nobypass", "dummy", 1, "pfifo_fast", 4, 0, false},
                      StressCase{"mq_4t", "dummy", 2, "mq", 4, 0, true},
                      StressCase{"pfifo_locked_3t", "dummy", 1, "pfifo", 3, 0, true},
                      StressCase{"pfifo_fast_busy_3t", "testdrv", 1, "", 3, 5, true},
                      StressCase{"mq_busy_4t", "testdrv", 2, "", 4, 7, true}),
    [](const ::testing::TestParamInfo<StressCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace pktpath::testing
