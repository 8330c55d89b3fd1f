// Fixture for tc tests: the transmit fixture plus helpers to attach cls_bpf filters.
#pragma once

#include <string>

#include "../core/xmit_fixture.h"
#include "bpf/parse.h"
#include "core/dev_rx.h"
#include "core/host_sink.h"
#include "sched/act_gact.h"
#include "sched/act_mirred.h"
#include "sched/act_skbedit.h"
#include "sched/clsact.h"
#include "status_assert.h"

namespace pktpath::testing {

class TcFixture : public XmitFixture {
 protected:
  // "1,6 0 0 K," — a program that returns K.
  static std::string ret_prog(int64_t k) {
    return "1,6 0 0 " + std::to_string(static_cast<uint32_t>(k)) + ",";
  }
  static tc::BpfFilterSpec spec(const std::string& bytecode, bool da, uint32_t pref = 0,
                                tc::ActionList actions = {}, uint32_t classid = 0) {
    tc::BpfFilterSpec s;
    std::string err;
    EXPECT_TRUE(bpf::parse_bytecode(bytecode, &s.insns, &err)) << err;
    s.source = "bytecode '" + bytecode + "'";
    s.da = da;
    s.pref = pref;
    s.actions = std::move(actions);
    s.classid = classid;
    s.classid_set = classid != 0;
    return s;
  }
  void clsact(NetDevice* d) {
    std::string err;
    ASSERT_TRUE(ok(tc::clsact_add(*d)));
  }
  void filter(NetDevice* d, tc::Dir dir, tc::BpfFilterSpec s, bool replace = false) {
    std::string err;
    ASSERT_TRUE(ok(tc::filter_add(*d, dir, std::move(s), replace)));
  }
  // Hand one packet to d's receive path; returns netif_receive_skb's rc.
  int receive(NetDevice* d, uint32_t mark = 0, uint32_t size = 60) {
    Packet* p = cpu.alloc();
    EXPECT_NE(p, nullptr);
    if (!p) return -1;
    p->put(size);
    p->dev = d;
    p->mark = mark;
    ++sent;
    return netif_receive_skb(cpu, p);
  }
  uint64_t tx(NetDevice* d) const { return d->stats_sum().tx_packets; }
  uint64_t rx(NetDevice* d) const { return d->stats_sum().rx_packets; }  // the driver's count
  // Packets the Net's host sink took (what passed every receive hook).
  uint64_t delivered() { return host_stats(net).delivered; }
};

// The suite name of the clsact, cls_bpf and action tests (one fixture type for all files).
class TcTest : public TcFixture {};

}  // namespace pktpath::testing
