// Shared fixture for transmit-path tests: a pool, a bound Cpu, a device table, and
// helpers to send marked packets and account for every one of them.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/cpu.h"
#include "core/net.h"
#include "core/dev_table.h"
#include "core/dev_xmit.h"
#include "core/packet_pool.h"
#include "drivers/testdrv.h"
#include "sched/qdisc.h"
#include "sched/sch_api.h"
#include "sched/sch_fifo.h"
#include "sched/sch_generic.h"
#include "sched/sch_prio.h"
#include "sched/sch_tbf.h"
#include "status_assert.h"

namespace pktpath::testing {

class XmitFixture : public ::testing::Test {
 protected:
  XmitFixture() { cpu.bind(); }
  ~XmitFixture() override {
    drain();
  }

  NetDevice* make(const std::string& name, const std::string& kind, uint16_t queues = 1,
                  uint32_t txqlen = 1000, bool up = true) {
    NetDevice::Config cfg;
    cfg.name = name;
    cfg.num_tx_queues = queues;
    cfg.tx_queue_len = txqlen;
    auto d_added = table.add(cfg, kind);
    EXPECT_TRUE(ok(d_added));
    NetDevice* d = d_added.value_or(nullptr);
    if (d && up) {
      EXPECT_TRUE(ok(table.set_up(*d, true)));
    }
    return d;
  }
  void tc(NetDevice* d, QdiscOp op, const std::string& kind, QdiscOptions opts = {},
          uint32_t parent = TC_H_ROOT, uint32_t handle = 0) {
    QdiscRequest r;
    r.op = op;
    r.kind = kind;
    r.opts = opts;
    r.parent = parent;
    if (handle) {
      r.handle = handle;
      r.handle_set = true;
    }
    auto st = tc_qdisc_modify(table, *d, r);
    ASSERT_TRUE(st) << st.error().msg;
  }
  // Send one packet of `size` bytes with mark `mark`; returns dev_queue_xmit's rc.
  int send(NetDevice* d, uint32_t mark, uint32_t size = 60, uint32_t priority = 0,
           uint32_t hash = 0) {
    Packet* p = cpu.alloc();
    EXPECT_NE(p, nullptr);
    if (!p) return -1;
    p->put(size);
    p->dev = d;
    p->mark = mark;
    p->priority = priority;
    p->hash = hash;
    ++sent;
    return dev_queue_xmit(cpu, p);
  }
  void drain() {
    for (int i = 0; i < 10000 && cpu.has_pending(); ++i) cpu.run_pending();
  }
  uint64_t drops(DropReason r) const { return cpu.stats().drops[static_cast<unsigned>(r)].get(); }
  uint64_t all_drops() const {
    uint64_t s = 0;
    for (unsigned i = 0; i < kDropReasonCount; ++i) s += cpu.stats().drops[i].get();
    return s;
  }
  // Packets out of the pool right now (allocated and not yet freed).
  uint64_t outstanding() {
    cpu.drain_cache();
    return pool.capacity() - pool.available();
  }

  PacketPool pool{PacketPool::Options{.capacity = 8192, .buf_size = 2048, .headroom = 128}};
  Cpu cpu{pool};
  Net net{cpu};
  DeviceTable& table = net.devices();
  uint64_t sent = 0;
};

}  // namespace pktpath::testing
