// police (src/sched/act_police.cc) on a VirtualClock: the burst passes exactly its bytes,
// tokens come back at the rate, the peak bucket, the mtu, conform/exceed verdicts, and
// every drop counted once under the hook's reason.
#include <gtest/gtest.h>

#include "core/clock.h"
#include "sched/act_police.h"
#include "sched/cls_matchall.h"
#include "tc_fixture.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

using tc::Dir;

class PoliceTest : public TcFixture {
 protected:
  PoliceTest() { cpu.set_clock(&clock); }
  ~PoliceTest() override { cpu.set_clock(nullptr); }
  std::shared_ptr<tc::TcAction> police(uint64_t rate, uint32_t burst, int exceed, int conform = tc::TC_ACT_OK,
                                       uint64_t peak = 0, uint32_t mtu = 0) {
    tc::PoliceOptions o;
    o.rate_bytes_ps = rate;
    o.burst = burst;
    o.exceed = exceed;
    o.conform = conform;
    o.peak_bytes_ps = peak;
    o.mtu = mtu;
    auto a = tc::tcf_action_init("police", o, table);
    EXPECT_TRUE(a) << a.error().msg;
    return *a;
  }
  void attach(NetDevice* d, Dir dir, std::shared_ptr<tc::TcAction> a, uint32_t pref = 1, uint32_t classid = 0) {
    tc::MatchallSpec s;
    s.pref = pref;
    s.classid = classid;
    s.classid_set = classid != 0;
    s.actions = {std::move(a)};
      ASSERT_TRUE(ok(tc::filter_add(*d, dir, s, false)));
  }
  // Sends n packets of `size` bytes on egress; returns how many went out.
  int burst(NetDevice* d, int n, uint32_t size) {
    int ok = 0;
    for (int i = 0; i < n; ++i) ok += send(d, 0, size) == NET_XMIT_SUCCESS;
    return ok;
  }
  VirtualClock clock{0};
};

// The psched arithmetic the bucket uses is exact for these rates.
TEST_F(PoliceTest, RateArithmetic) {
  tc::PschedRate r;
  r.precompute(1000000);  // 8mbit
  EXPECT_EQ(r.l2t_ns(1000), 1000000u);
  EXPECT_EQ(r.l2t_ns(1), 1000u);
  r.precompute(2000000);
  EXPECT_EQ(r.l2t_ns(1000), 500000u);
  EXPECT_EQ(tc::tc_calc_xmittime(1000000, 10000), 156250u);  // 10 ms in 64 ns ticks
  EXPECT_EQ(tc::tc_calc_xmitsize(1000000, 156250), 10000u);
}

// rate 8mbit burst 10000: ten 1000-byte packets pass at t=0, the eleventh exceeds; 1 ms
// gives one packet's worth back; a long pause refills to the burst, not beyond.
TEST_F(PoliceTest, BurstThenRefillAtRate) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto a = police(1000000, 10000, tc::TC_ACT_SHOT);
  attach(d, Dir::Egress, a);
  EXPECT_EQ(burst(d, 10, 1000), 10);
  EXPECT_EQ(send(d, 0, 1000), NET_XMIT_DROP);
  clock.advance(999999);
  EXPECT_EQ(send(d, 0, 1000), NET_XMIT_DROP);  // 1 ns short
  clock.advance(1);
  EXPECT_EQ(send(d, 0, 1000), NET_XMIT_SUCCESS);  // 1 ms since the last conforming one
  EXPECT_EQ(send(d, 0, 1000), NET_XMIT_DROP);
  clock.advance(500000);
  EXPECT_EQ(burst(d, 2, 500), 1);  // half a millisecond: one 500-byte packet
  clock.advance(100ull * 1000000000);
  EXPECT_EQ(burst(d, 25, 1000), 10);
  const uint64_t dropped = 1 + 1 + 1 + 1 + 15;
  EXPECT_EQ(tx(d), 10u + 1 + 1 + 10);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), dropped);
  EXPECT_EQ(all_drops(), dropped);
  EXPECT_EQ(sent, tx(d) + dropped);
  const auto st = a->stats.sum();
  EXPECT_EQ(st.packets, sent);
  EXPECT_EQ(st.overlimits, dropped);
  EXPECT_EQ(st.drops, dropped);
  EXPECT_EQ(tc::clsact_stats(*d, Dir::Egress).drops, dropped);
  EXPECT_EQ(outstanding(), 0u);
}

// peakrate 16mbit mtu 1500: the peak bucket holds one mtu's time (750 us), so three
// 500-byte packets (250 us each) pass back to back, then 250 us buys one more.
TEST_F(PoliceTest, PeakBucket) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  attach(d, Dir::Egress, police(1000000, 10000, tc::TC_ACT_SHOT, tc::TC_ACT_OK, 2000000, 1500));
  EXPECT_EQ(burst(d, 4, 500), 3);
  clock.advance(125000);
  EXPECT_EQ(send(d, 0, 500), NET_XMIT_DROP);
  clock.advance(125000);
  EXPECT_EQ(send(d, 0, 500), NET_XMIT_SUCCESS);
  // Longer than the mtu: always over the limit.
  clock.advance(1000000000);
  EXPECT_EQ(send(d, 0, 1501), NET_XMIT_DROP);
  EXPECT_EQ(send(d, 0, 1500), NET_XMIT_SUCCESS);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 3u);
  EXPECT_EQ(tx(d), 5u);
}

// conform-exceed continue/ok: conforming packets end with the police filter's classid,
// exceeding ones go on to the next filter.
TEST_F(PoliceTest, ExceedContinuesToTheNextFilter) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  attach(d, Dir::Egress, police(1000000, 3000, tc::TC_ACT_UNSPEC, tc::TC_ACT_OK), 1, 0x10001);
  tc::MatchallSpec next;
  next.pref = 2;
  next.classid = 0x10002;
  next.classid_set = true;
  ASSERT_TRUE(ok(tc::filter_add(*d, Dir::Egress, next, false)));
  const tc::Miniq* mq = d->tc_egress().load();
  std::vector<uint32_t> got;
  for (int i = 0; i < 5; ++i) {
    Packet* p = cpu.alloc();
    p->put(1000);
    tc::TcResult res;
    EXPECT_EQ(tc::tcf_classify(tc::TcContext{cpu, false}, p, *mq, res), tc::TC_ACT_OK);
    got.push_back(res.classid);
    cpu.free(p);
  }
  EXPECT_EQ(got, (std::vector<uint32_t>{0x10001, 0x10001, 0x10001, 0x10002, 0x10002}));
}

// On ingress the packet's length is without its Ethernet header (skb->len there), and
// drops count under TC_INGRESS.
TEST_F(PoliceTest, IngressCountsWithoutTheMacHeader) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  attach(d, Dir::Ingress, police(1000000, 10000, tc::TC_ACT_SHOT));
  int ok = 0;
  for (int i = 0; i < 12; ++i) ok += receive(d, 0, 1014) == NET_RX_SUCCESS;
  EXPECT_EQ(ok, 10);
  EXPECT_EQ(drops(DropReason::TC_INGRESS), 2u);
  EXPECT_EQ(all_drops(), 2u);
  EXPECT_EQ(delivered(), 10u);
}

}  // namespace
}  // namespace pktpath::testing
