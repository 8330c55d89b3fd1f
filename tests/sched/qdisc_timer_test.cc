// Qdisc timers and the qdisc's lifetime: for every discipline kind, traffic from a
// sender Cpu (which arms any watchdog there), then the qdisc goes away from the control
// Cpu by every route (device delete, tc del, replace, as a child of prio or mq, after
// down/up). Afterwards no timer is left on any Cpu, the sender Cpu runs its timers
// safely (asan: no use after free) and every packet is accounted for.
#include <gtest/gtest.h>

#include <string>

#include "../core/xmit_fixture.h"
#include "core/clock.h"
#include "sched/sch_tbf.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

enum class Teardown { DeviceDelete, QdiscDel, ReplacePfifo, DownUpDelete };

QdiscOptions options_for(std::string_view kind) {
  if (kind == "tbf") {
    TbfOptions o;
    o.rate_bytes_ps = 1000;  // 8kbit: one packet per burst, then the watchdog
    o.burst = 1600;
    o.limit = 100000;
    o.limit_set = true;
    return o;
  }
  return {};
}

class QdiscTimerLifecycle : public XmitFixture {
 protected:
  QdiscTimerLifecycle() { worker.set_clock(&clock); }
  ~QdiscTimerLifecycle() override {
    // The sender Cpu runs whatever it still holds: nothing of a freed qdisc.
    clock.advance(10'000'000'000);
    for (int i = 0; i < 100 && worker.has_pending(); ++i) worker.run_pending();
  }

  bool add(NetDevice* d, std::string_view kind, uint32_t parent, uint32_t handle = 0) {
    QdiscRequest r;
    r.op = QdiscOp::Add;
    r.kind = std::string(kind);
    r.opts = options_for(kind);
    r.parent = parent;
    if (handle) {
      r.handle = handle;
      r.handle_set = true;
    }
    return static_cast<bool>(tc_qdisc_modify(table, *d, r));
  }
  // Packets from the sender Cpu, spread over the tx queues and prio bands.
  void traffic(NetDevice* d) {
    for (uint32_t i = 0; i < 200; ++i) {
      Packet* p = worker.alloc();
      ASSERT_NE(p, nullptr);
      p->put(100);
      p->dev = d;
      p->hash = i * 0x9e3779b9u;
      p->priority = i % 8;
      dev_queue_xmit(worker, p);
      clock.advance(1000);
      worker.run_pending();
    }
  }
  void teardown(NetDevice* d, Teardown how) {
    const std::string name = d->name();
    switch (how) {
      case Teardown::DeviceDelete:
        ASSERT_TRUE(ok(table.del(name)));
        break;
      case Teardown::QdiscDel: {
        QdiscRequest r;
        r.op = QdiscOp::Del;
        ASSERT_TRUE(tc_qdisc_modify(table, *d, r));
        ASSERT_TRUE(ok(table.del(name)));
        break;
      }
      case Teardown::ReplacePfifo: {
        QdiscRequest r;
        r.op = QdiscOp::Replace;
        r.kind = "pfifo";
        ASSERT_TRUE(tc_qdisc_modify(table, *d, r));
        break;
      }
      case Teardown::DownUpDelete:
        ASSERT_TRUE(ok(table.set_up(*d, false)));
        ASSERT_TRUE(ok(table.set_up(*d, true)));
        ASSERT_TRUE(ok(table.del(name)));
        break;
    }
  }
  // Nothing on either Cpu's timer list, and the sender Cpu runs safely after.
  void check_clean(const std::string& what) {
    EXPECT_EQ(worker.timers_armed(), 0u) << what;
    EXPECT_EQ(cpu.timers_armed(), 0u) << what;
    clock.advance(10'000'000'000);
    for (int i = 0; i < 100 && worker.has_pending(); ++i) worker.run_pending();
    drain();
    table.reap();
    worker.drain_cache();
  }

  VirtualClock clock{1'000'000'000};
  Cpu worker{pool};
};

const Teardown kTeardowns[] = {Teardown::DeviceDelete, Teardown::QdiscDel,
                               Teardown::ReplacePfifo, Teardown::DownUpDelete};

// Every kind at the root of a one-queue device.
TEST_F(QdiscTimerLifecycle, EveryKindAtTheRoot) {
  int n = 0;
  for (const QdiscOps* ops : qdisc_ops_list()) {
    const QdiscOps& k = *ops;
    if (k.ingress_hook) continue;
    for (Teardown how : kTeardowns) {
      NetDevice* d = make("r" + std::to_string(n++), "testdrv");
      if (!add(d, k.id, TC_H_ROOT, 0x10000)) {
        EXPECT_TRUE(ok(table.del(d->name())));
        continue;  // needs another device (mq) or options
      }
      traffic(d);
      if (std::string_view(k.id) == "tbf") {
        EXPECT_EQ(worker.timers_armed(), 1u);
      }
      teardown(d, how);
      check_clean(std::string(k.id) + " root, teardown " + std::to_string(int(how)));
    }
  }
  EXPECT_EQ(outstanding(), 0u);
}

// Every kind as each band of a prio root.
TEST_F(QdiscTimerLifecycle, EveryKindUnderPrio) {
  int n = 0;
  for (const QdiscOps* ops : qdisc_ops_list()) {
    const QdiscOps& k = *ops;
    if (k.ingress_hook) continue;
    for (Teardown how : kTeardowns) {
      NetDevice* d = make("p" + std::to_string(n++), "testdrv");
      ASSERT_TRUE(add(d, "prio", TC_H_ROOT, 0x10000));
      bool added = true;
      for (uint32_t band = 1; band <= 3; ++band) added = added && add(d, k.id, 0x10000 | band);
      if (!added) {
        EXPECT_TRUE(ok(table.del(d->name())));
        continue;
      }
      traffic(d);
      if (std::string_view(k.id) == "tbf") {
        EXPECT_GE(worker.timers_armed(), 1u);
      }
      teardown(d, how);
      check_clean(std::string(k.id) + " under prio, teardown " + std::to_string(int(how)));
    }
  }
  EXPECT_EQ(outstanding(), 0u);
}

// Every kind as each child of mq on a four-queue device.
TEST_F(QdiscTimerLifecycle, EveryKindUnderMq) {
  int n = 0;
  for (const QdiscOps* ops : qdisc_ops_list()) {
    const QdiscOps& k = *ops;
    if (k.ingress_hook) continue;
    for (Teardown how : kTeardowns) {
      NetDevice* d = make("m" + std::to_string(n++), "testdrv", 4);
      ASSERT_TRUE(add(d, "mq", TC_H_ROOT, 0x10000));
      bool added = true;
      for (uint32_t q = 1; q <= 4; ++q) added = added && add(d, k.id, 0x10000 | q);
      if (!added) {
        EXPECT_TRUE(ok(table.del(d->name())));
        continue;
      }
      traffic(d);
      if (std::string_view(k.id) == "tbf") {
        EXPECT_GE(worker.timers_armed(), 2u);
      }
      teardown(d, how);
      check_clean(std::string(k.id) + " under mq, teardown " + std::to_string(int(how)));
    }
  }
  EXPECT_EQ(outstanding(), 0u);
}

// A throttled tbf keeps working across link down/up: the watchdog re-arms and the queue
// drains on the sender Cpu.
TEST_F(QdiscTimerLifecycle, TbfWatchdogDrainsAfterDownUp) {
  NetDevice* d = make("t0", "testdrv");
  ASSERT_TRUE(add(d, "tbf", TC_H_ROOT, 0x10000));
  traffic(d);
  ASSERT_TRUE(ok(table.set_up(*d, false)));
  EXPECT_EQ(worker.timers_armed(), 0u);
  ASSERT_TRUE(ok(table.set_up(*d, true)));
  const uint64_t before = testdrv_state(*d).transmitted.load();
  traffic(d);
  for (int i = 0; i < 200; ++i) {
    clock.advance(200'000'000);
    worker.run_pending();
  }
  EXPECT_GT(testdrv_state(*d).transmitted.load(), before + 10);
  EXPECT_EQ(d->qdisc()->qlen(), 0u);
  worker.drain_cache();
  EXPECT_EQ(outstanding(), 0u);
}

}  // namespace
}  // namespace pktpath::testing
