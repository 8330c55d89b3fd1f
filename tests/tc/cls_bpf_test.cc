// cls_bpf (src/sched/cls_bpf.cc): direct-action and classid verdict tables, classid to
// tc_index, rejected programs, engine reloads.
#include <gtest/gtest.h>

#include "core/bpf_engine.h"
#include "tc_fixture.h"
#include "core/net.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

using tc::Dir;

struct DaRow {
  int64_t ret;
  bool transmitted;
  bool dropped;  // counted under TC_EGRESS
  int rc;
};

// Direct-action: the program's return is the verdict (cls_bpf_exec_opcode); values the
// table does not know continue, and with no further filter the packet goes out.
TEST_F(TcTest, DirectActionVerdictTable) {
  const DaRow rows[] = {
      {0, true, false, 0},    // TC_ACT_OK
      {-1, true, false, 0},   // TC_ACT_UNSPEC: continue, nothing else -> transmit
      {1, true, false, 0},    // RECLASSIFY is not a da opcode: continue
      {2, false, true, 1},    // TC_ACT_SHOT
      {3, true, false, 0},    // TC_ACT_PIPE: continue
      {4, false, false, 0},   // TC_ACT_STOLEN: consumed, not a drop
      {7, false, true, 1},    // TC_ACT_REDIRECT without a target: dropped
      {8, false, false, 0},   // TC_ACT_TRAP: consumed
      {1000, true, false, 0}, // unknown: continue
  };
  for (const DaRow& r : rows) {
    SCOPED_TRACE("ret " + std::to_string(r.ret));
    NetDevice* d = make("da" + std::to_string(r.ret + 1), "dummy");
    clsact(d);
    filter(d, Dir::Egress, spec(ret_prog(r.ret), true));
    const uint64_t drops0 = drops(DropReason::TC_EGRESS);
    EXPECT_EQ(send(d, 0), r.rc);
    EXPECT_EQ(tx(d), r.transmitted ? 1u : 0u);
    EXPECT_EQ(drops(DropReason::TC_EGRESS) - drops0, r.dropped ? 1u : 0u);
  }
  EXPECT_EQ(outstanding(), 0u);
}

// Non-da: 0 = no match (next filter), -1 = match with the filter's classid, other =
// that classid; then the actions decide (none: OK).
TEST_F(TcTest, ClassidModeVerdictTable) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  // pref 1 does not match; pref 2 matches with the filter's classid 1:7 and no actions.
  filter(d, Dir::Egress, spec(ret_prog(0), false, 1, {}, 0x10007));
  filter(d, Dir::Egress, spec(ret_prog(-1), false, 2, {}, 0x10009));
  filter(d, Dir::Egress, spec(ret_prog(2), true, 3));  // would drop if reached
  EXPECT_EQ(send(d, 0), 0);
  EXPECT_EQ(tx(d), 1u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 0u);
  uint64_t ran[3] = {}, matched[3] = {};
  int i = 0;
  tc::filter_walk(*d, Dir::Egress, [&](const tc::BpfFilter& f) {
    ran[i] = f.stats.sum().packets;
    matched[i++] = f.stats.sum().matched;
  });
  EXPECT_EQ(ran[0], 1u);
  EXPECT_EQ(matched[0], 0u);
  EXPECT_EQ(matched[1], 1u);
  EXPECT_EQ(ran[2], 0u);
}

TEST_F(TcTest, ClassidFromProgramSetsTcIndex) {
  NetDevice* d = make("foo", "testdrv");
  testdrv_state(*d).record = true;
  clsact(d);
  // Returns 0x10005: classid 1:5, no actions -> OK, tc_index = minor 5. A second
  // program in the same chain reads nothing of it, so look at the packet via a mirror.
  filter(d, Dir::Egress, spec(ret_prog(0x10005), false));
  Packet* p = cpu.alloc();
  p->put(60);
  p->dev = d;
  p->get();  // keep a user to look at it after the send
  ++sent;
  EXPECT_EQ(dev_queue_xmit(cpu, p), 0);
  EXPECT_EQ(p->tc_index, 5);
  cpu.free(p);
  drain();
  EXPECT_EQ(testdrv_state(*d).transmitted.load(), 1u);
}

TEST_F(TcTest, ClassidModeActionsDecide) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto drop = std::make_shared<tc::GactAction>(tc::TC_ACT_SHOT);
  filter(d, Dir::Egress, spec(ret_prog(-1), false, 1, {drop}));
  EXPECT_EQ(send(d, 0), 1);
  EXPECT_EQ(send(d, 0), 1);
  EXPECT_EQ(tx(d), 0u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 2u);
  EXPECT_EQ(drop->stats.sum().packets, 2u);
  EXPECT_EQ(drop->stats.sum().drops, 2u);
  EXPECT_EQ(tc::clsact_stats(*d, Dir::Egress).drops, 2u);
}

TEST_F(TcTest, RejectedProgramIsNotAttached) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  tc::BpfFilterSpec s;
  s.insns.push_back(bpf::Insn{0x15, 5, 0, 0});  // jeq jumping out of the program, no ret
  std::string err;
  err = failure_of(tc::filter_add(*d, Dir::Egress, s, false));
  EXPECT_FALSE(err.empty());
  EXPECT_EQ(d->egress_hook(), nullptr);
}

TEST_F(TcTest, EngineSwitchReloadsAttachedPrograms) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(2), true));
  std::string err;
  ASSERT_TRUE(net_set_bpf_engine(net, bpf::Engine::Switch, &err)) << err;
  tc::filter_walk(*d, Dir::Egress, [](const tc::BpfFilter& f) { EXPECT_EQ(f.engine(), bpf::Engine::Switch); });
  send(d, 0);
  ASSERT_TRUE(net_set_bpf_engine(net, bpf::Engine::Threaded, &err)) << err;
  tc::filter_walk(*d, Dir::Egress, [](const tc::BpfFilter& f) { EXPECT_EQ(f.engine(), bpf::Engine::Threaded); });
  send(d, 0);
  ASSERT_TRUE(net_set_bpf_engine(net, bpf::Engine::Jit, &err)) << err;
  send(d, 0);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 3u);
}

}  // namespace
}  // namespace pktpath::testing
