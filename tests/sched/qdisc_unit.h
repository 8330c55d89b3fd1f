// QdiscUnit: a test fixture that creates one discipline on a down testdrv device and
// enqueues, dequeues and drains marked packets through it, every packet accounted for.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../core/xmit_fixture.h"
#include "sched/sch_fifo.h"
#include "sched/sch_prio.h"
#include "sched/sch_tbf.h"

namespace pktpath::testing {

class QdiscUnit : public XmitFixture {
 protected:
  std::unique_ptr<Qdisc> create(const char* kind, QdiscOptions o = {}, uint32_t txqlen = 1000,
                                uint16_t queues = 1) {
    if (!dev_) dev_ = make("u0", "testdrv", queues, txqlen, /*up=*/false);
    auto q = qdisc_create(*dev_, kind, o);
    EXPECT_TRUE(q) << q.error().msg;
    return q ? std::move(*q) : nullptr;
  }
  Packet* pkt(uint32_t mark, uint32_t size = 60, uint32_t prio = 0) {
    Packet* p = cpu.alloc();
    p->put(size);
    p->mark = mark;
    p->priority = prio;
    return p;
  }
  // Enqueue; frees what the qdisc rejected. Returns the rc.
  int enq(Qdisc& q, Packet* p) {
    PacketList to_free;
    int rc = q.enqueue(cpu, p, to_free);
    while (Packet* x = to_free.pop_front()) cpu.free_reason(x, DropReason::QDISC_DROP);
    return rc;
  }
  std::vector<uint32_t> drain_marks(Qdisc& q) {
    std::vector<uint32_t> v;
    while (Packet* p = q.dequeue(cpu)) {
      v.push_back(p->mark);
      cpu.free(p);
    }
    return v;
  }
  // enqueued = dequeued + dropped + queued, and the Cpu freed exactly the qdisc's drops,
  // all under QDISC_DROP.
  void expect_accounted(Qdisc& q, uint64_t enqueued, uint64_t dequeued) {
    const QdiscStats s = q.stats();
    EXPECT_EQ(enqueued, dequeued + s.drops + s.qlen);
    EXPECT_EQ(drops(DropReason::QDISC_DROP), s.drops);
    EXPECT_EQ(all_drops(), s.drops);
  }
  NetDevice* dev_ = nullptr;
};

}  // namespace pktpath::testing
