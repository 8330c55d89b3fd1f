// Harness for lifecycle stress tests: a pool, a control Cpu (bound to the test thread)
// with its DeviceTable, two sender Cpus driven by bursts of two threads, and the
// accounting that must hold at the end: every packet made is transmitted, delivered,
// dropped under one reason, or still queued.
//
// The configuration contract (docs/architecture.md "Configuration"): DeviceTable and
// qdisc changes run between bursts (senders joined); tc filters and nft rules change
// under traffic (RCU), in the function a burst runs while its senders send.
#pragma once

#include <gtest/gtest.h>

#include "core/host_sink.h"
#include "core/net.h"
#include "status_assert.h"

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/cpu.h"
#include "core/dev_rx.h"
#include "core/dev_table.h"
#include "core/dev_xmit.h"
#include "core/drop_reason.h"
#include "core/packet_pool.h"
#include "core/rcu.h"
#include "drivers/testdrv.h"
#include "sched/qdisc.h"
#include "sched/sch_api.h"

namespace pktpath::testing {

class LifecycleHarness {
 public:
  static constexpr int kSenders = 2;

  LifecycleHarness() { control.bind(); }
  ~LifecycleHarness() { net.reset(); }

  // `ip link add` + `ip link set up`: a testdrv with two tx queues (so mq has children).
  NetDevice* add_device(const std::string& name, uint32_t txqlen = 64) {
    NetDevice::Config cfg;
    cfg.name = name;
    cfg.num_tx_queues = 2;
    cfg.tx_queue_len = txqlen;
    auto added = table->add(cfg, "testdrv");
    EXPECT_TRUE(ok(added));
    NetDevice* d = added.value_or(nullptr);
    if (d) {
      EXPECT_TRUE(ok(table->set_up(*d, true)));
    }
    ++ops;
    return d;
  }
  // `ip link del`: the device's counters are kept for the accounting first.
  void del_device(NetDevice* d) {
    const DevStatsSum s = d->stats_sum();
    gone_tx += s.tx_packets;
    const std::string name = d->name();
    EXPECT_TRUE(ok(table->del(name)));
    ++ops;
  }
  void link_down_up(NetDevice* d) {
    EXPECT_TRUE(ok(table->set_up(*d, false)));
    EXPECT_TRUE(ok(table->set_up(*d, true)));
    ops += 2;
  }
  bool qdisc(NetDevice* d, QdiscOp op, const std::string& kind, QdiscOptions opts = {}) {
    QdiscRequest r;
    r.op = op;
    r.kind = kind;
    r.opts = std::move(opts);
    auto st = tc_qdisc_modify(*table, *d, r);
    EXPECT_TRUE(st) << kind << ": " << st.error().msg;
    ++ops;
    return static_cast<bool>(st);
  }

  // One burst: two sender threads, each on its own Cpu, send up to `per_thread` packets
  // to `d` (every `rx_every`th one into d's receive path instead, 0: none) while this
  // thread runs `under_traffic`; then they stop, run their pending work and are joined.
  void burst(NetDevice* d, uint64_t per_thread, const std::function<void()>& under_traffic = {},
             unsigned rx_every = 0) {
    std::atomic<bool> stop{false};
    std::atomic<int> done{0};
    auto sender = [&](int idx) {
      Cpu& c = *senders[idx];
      c.bind();
      RcuReader reader;
      uint64_t n = 0;
      while (n < per_thread && !stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 32 && n < per_thread; ++i) {
          Packet* p = c.alloc();
          if (!p) break;
          p->put(60);
          p->dev = d;
          p->mark = static_cast<uint32_t>(n & 7);
          p->priority = static_cast<uint32_t>(n & 7);
          p->hash = static_cast<uint32_t>(n * 0x9e3779b9u) ^ static_cast<uint32_t>(idx);
          ++made[idx];
          ++n;
          if (rx_every && n % rx_every == 0)
            netif_receive_skb(c, p);
          else
            dev_queue_xmit(c, p);
        }
        rcu_quiescent();  // between batches: no hook pointer held
        c.run_pending();
      }
      // Run what is left (a rate-limited qdisc may keep a timer armed: bounded).
      for (int k = 0; k < 1000 && c.has_pending(); ++k) c.run_pending();
      done.fetch_add(1);
    };
    std::thread t0(sender, 0), t1(sender, 1);
    if (under_traffic) under_traffic();
    if (per_thread != UINT64_MAX)
      while (done.load() < kSenders) std::this_thread::yield();
    stop.store(true);
    t0.join();
    t1.join();
  }

  // Packets queued in every qdisc of the table's devices.
  uint64_t queued() const {
    uint64_t q = 0;
    for (NetDevice* d : table->list()) q += d->qdisc() ? d->qdisc()->qlen() : 0;
    return q;
  }
  uint64_t total_made() const { return made[0] + made[1]; }
  uint64_t drops(DropReason r) const {
    const unsigned k = static_cast<unsigned>(r);
    uint64_t s = control.stats().drops[k].get();
    for (const auto& c : senders) s += c->stats().drops[k].get();
    return s;
  }
  uint64_t all_drops() const {
    uint64_t s = 0;
    for (unsigned k = 0; k < kDropReasonCount; ++k) s += drops(static_cast<DropReason>(k));
    return s;
  }
  uint64_t transmitted() const {
    uint64_t t = gone_tx;
    for (NetDevice* d : table->list()) t += d->stats_sum().tx_packets;
    return t;
  }
  uint64_t delivered() const { return host_stats(*net).delivered; }
  // made = transmitted + delivered + dropped + queued, with the drops by reason.
  std::string account(const char* what) const {
    char line[256];
    std::snprintf(line, sizeof line, "%s: made %llu transmitted %llu delivered %llu dropped %llu queued %llu |",
                  what, (unsigned long long)total_made(), (unsigned long long)transmitted(),
                  (unsigned long long)delivered(), (unsigned long long)all_drops(),
                  (unsigned long long)queued());
    std::string s = line;
    for (unsigned k = 0; k < kDropReasonCount; ++k)
      if (uint64_t n = drops(static_cast<DropReason>(k)))
        s += " " + std::string(drop_reason_name(static_cast<DropReason>(k))) + "=" + std::to_string(n);
    return s;
  }
  void expect_accounted(const char* what) const {
    EXPECT_EQ(total_made(), transmitted() + delivered() + all_drops() + queued()) << account(what);
  }
  // Every Cpu's deferred frees and cache back to the pool (senders joined).
  uint64_t outstanding() {
    for (int r = 0; r < 3; ++r) {
      for (auto& c : senders) c->defer_free_flush();
      control.defer_free_flush();
    }
    for (auto& c : senders) c->drain_cache();
    control.drain_cache();
    return pool.capacity() - pool.available();
  }
  // Delete every device (queued packets dropped), then check the pool is full.
  void teardown_and_check_pool() {
    for (NetDevice* d : table->list()) del_device(d);
    table->reap();
    EXPECT_EQ(outstanding(), 0u);
  }

  PacketPool pool{PacketPool::Options{.capacity = 4096, .buf_size = 256, .headroom = 64}};
  Cpu control{pool};
  std::unique_ptr<Cpu> senders[kSenders] = {std::make_unique<Cpu>(pool), std::make_unique<Cpu>(pool)};
  std::unique_ptr<Net> net = std::make_unique<Net>(control);
  DeviceTable* table = &net->devices();
  uint64_t made[kSenders] = {0, 0};
  uint64_t gone_tx = 0;
  uint64_t ops = 0;  // lifecycle operations (device, link, qdisc, filter, nft changes)
};

}  // namespace pktpath::testing
