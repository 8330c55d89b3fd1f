// clsact + cls_bpf + actions: verdict tables, actions, ordering, ingress, redirect loops,
// nft egress in dev_queue_xmit, and the accounting invariant.
#include <gtest/gtest.h>

#include <sstream>

#include "netfilter/nft_command.h"
#include "sched/nf_dev_resolver.h"
#include "tc_fixture.h"

namespace pktpath::testing {
namespace {

using tc::Dir;

class TcTest : public TcFixture {};

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

TEST_F(TcTest, GactVerdicts) {
  struct Row {
    int verdict;
    bool transmitted;
    bool next_filter_runs;
  } rows[] = {
      {tc::TC_ACT_OK, true, false},
      {tc::TC_ACT_SHOT, false, false},
      {tc::TC_ACT_PIPE, true, false},     // PIPE ends the pipeline with PIPE: not UNSPEC
      {tc::TC_ACT_UNSPEC, false, true},   // continue: next filter (which drops)
  };
  int n = 0;
  for (const Row& r : rows) {
    SCOPED_TRACE(r.verdict);
    NetDevice* d = make("g" + std::to_string(n++), "dummy");
    clsact(d);
    auto a = std::make_shared<tc::GactAction>(r.verdict);
    filter(d, Dir::Egress, spec(ret_prog(-1), false, 1, {a}));
    filter(d, Dir::Egress, spec(ret_prog(2), true, 2));
    send(d, 0);
    EXPECT_EQ(tx(d), r.transmitted ? 1u : 0u);
    uint64_t second = 0;
    tc::filter_walk(*d, Dir::Egress, [&](const tc::BpfFilter& f) {
      if (f.pref() == 2) second = f.stats.sum().packets;
    });
    EXPECT_EQ(second, r.next_filter_runs ? 1u : 0u);
    EXPECT_EQ(a->stats.sum().packets, 1u);
  }
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(TcTest, SkbeditSetsFieldsAndPipes) {
  tc::SkbeditAction::Params pa;
  pa.queue_mapping = 3;
  pa.priority = 0x10002;
  pa.mark = 42;
  tc::SkbeditAction a(pa);
  Packet* p = cpu.alloc();
  p->put(60);
  tc::TcResult res;
  EXPECT_EQ(a.act(tc::TcContext{cpu, true}, p, res), tc::TC_ACT_PIPE);
  EXPECT_EQ(p->queue_mapping, 3);
  EXPECT_EQ(p->priority, 0x10002u);
  EXPECT_EQ(p->mark, 42u);
  EXPECT_EQ(a.stats.sum().packets, 1u);
  cpu.free(p);
}

TEST_F(TcTest, SkbeditMarkReachesDriverAndQueueMappingChoosesQueue) {
  NetDevice* d = make("foo", "testdrv", 4);
  testdrv_state(*d).record = true;
  testdrv_state(*d).marks.reserve(16);
  clsact(d);
  tc::SkbeditAction::Params pa;
  pa.mark = 77;
  pa.queue_mapping = 2;
  filter(d, Dir::Egress, spec(ret_prog(-1), false, 1, {std::make_shared<tc::SkbeditAction>(pa)}));
  Packet* p = cpu.alloc();
  p->put(60);
  p->dev = d;
  p->get();
  ++sent;
  EXPECT_EQ(dev_queue_xmit(cpu, p), 0);
  drain();
  EXPECT_EQ(p->queue_mapping, 2);  // skip_txqueue: not re-picked by the device
  cpu.free(p);
  ASSERT_EQ(testdrv_state(*d).marks.size(), 1u);
  EXPECT_EQ(testdrv_state(*d).marks[0], 77u);
}

TEST_F(TcTest, MirredRedirectAndMirror) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  NetDevice* baz = make("baz", "dummy");
  clsact(foo);
  clsact(baz);
  auto redirect = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                     tc::MirredAction::Kind::Redirect, bar, "bar");
  filter(foo, Dir::Egress, spec(ret_prog(-1), false, 1, {redirect}));
  EXPECT_EQ(send(foo, 0), 0);
  EXPECT_EQ(tx(foo), 0u);
  EXPECT_EQ(tx(bar), 1u);
  EXPECT_EQ(redirect->stats.sum().packets, 1u);

  auto mirror = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                   tc::MirredAction::Kind::Mirror, bar, "bar");
  filter(baz, Dir::Egress, spec(ret_prog(-1), false, 1, {mirror}));
  EXPECT_EQ(send(baz, 0), 0);
  EXPECT_EQ(tx(baz), 1u);  // mirror pipes on: the original goes out too
  EXPECT_EQ(tx(bar), 2u);  // and a copy went to bar
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(TcTest, MirredIngressRedirectReachesReceivePath) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  clsact(foo);
  auto a = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Ingress,
                                              tc::MirredAction::Kind::Redirect, bar, "bar");
  filter(foo, Dir::Egress, spec(ret_prog(-1), false, 1, {a}));
  send(foo, 0);
  EXPECT_EQ(tx(foo), 0u);
  EXPECT_EQ(rx(bar), 1u);
  EXPECT_EQ(outstanding(), 0u);
}

// foo -> bar -> foo -> ... : the nesting limit (8) ends the loop and counts the drop.
TEST_F(TcTest, RedirectLoopIsStoppedAndCounted) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  clsact(foo);
  clsact(bar);
  auto to_bar = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                   tc::MirredAction::Kind::Redirect, bar, "bar");
  auto to_foo = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                   tc::MirredAction::Kind::Redirect, foo, "foo");
  filter(foo, Dir::Egress, spec(ret_prog(-1), false, 1, {to_bar}));
  filter(bar, Dir::Egress, spec(ret_prog(-1), false, 1, {to_foo}));
  EXPECT_EQ(send(foo, 0), 0);
  EXPECT_EQ(drops(DropReason::XMIT_RECURSION), 1u);
  EXPECT_EQ(tx(foo) + tx(bar), 0u);
  EXPECT_EQ(to_bar->stats.sum().overlimits + to_foo->stats.sum().overlimits, 1u);
  EXPECT_EQ(to_bar->stats.sum().packets + to_foo->stats.sum().packets, 1u + kXmitRecursionLimit);
  EXPECT_EQ(cpu.xmit_recursion, 0);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(TcTest, FiltersRunInPrefOrder) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(0), true, 10));  // OK
  filter(d, Dir::Egress, spec(ret_prog(2), true, 5));   // SHOT, runs first
  send(d, 0);
  EXPECT_EQ(tx(d), 0u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 1u);
  std::vector<uint32_t> prefs;
  tc::filter_walk(*d, Dir::Egress, [&](const tc::BpfFilter& f) { prefs.push_back(f.pref()); });
  EXPECT_EQ(prefs, (std::vector<uint32_t>{5, 10}));
  // Deleting pref 5 lets packets through.
  std::string err;
  ASSERT_TRUE(tc::filter_del(*d, Dir::Egress, 5, 0, &err)) << err;
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
  EXPECT_FALSE(tc::filter_del(*d, Dir::Egress, 5, 0, &err));
}

TEST_F(TcTest, AutomaticPrefAndHandleAndDuplicates) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  std::string err;
  uint32_t pref = 0, handle = 0;
  ASSERT_TRUE(tc::filter_add(*d, Dir::Egress, spec(ret_prog(0), true), false, &err, &pref, &handle));
  EXPECT_EQ(pref, 49152u);
  EXPECT_EQ(handle, 1u);
  ASSERT_TRUE(tc::filter_add(*d, Dir::Egress, spec(ret_prog(0), true), false, &err, &pref, &handle));
  EXPECT_EQ(pref, 49151u);
  auto dup = spec(ret_prog(2), true, 49151);
  dup.handle = 1;
  EXPECT_FALSE(tc::filter_add(*d, Dir::Egress, dup, false, &err));
  EXPECT_TRUE(tc::filter_add(*d, Dir::Egress, dup, true, &err)) << err;  // replace
  send(d, 0);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 1u);
}

TEST_F(TcTest, FilterNeedsClsactAndDeletingClsactDetaches) {
  NetDevice* d = make("foo", "dummy");
  std::string err;
  EXPECT_FALSE(tc::filter_add(*d, Dir::Egress, spec(ret_prog(2), true), false, &err));
  EXPECT_NE(err.find("clsact"), std::string::npos);
  clsact(d);
  EXPECT_FALSE(tc::clsact_add(*d, &err));
  filter(d, Dir::Egress, spec(ret_prog(2), true));
  EXPECT_NE(d->egress_hook(), nullptr);
  send(d, 0);
  EXPECT_EQ(tx(d), 0u);
  ASSERT_TRUE(tc::clsact_del(*d, &err)) << err;
  EXPECT_EQ(d->egress_hook(), nullptr);  // back to the one untaken branch
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
}

TEST_F(TcTest, RejectedProgramIsNotAttached) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  tc::BpfFilterSpec s;
  s.insns.push_back(bpf::Insn{0x15, 5, 0, 0});  // jeq jumping out of the program, no ret
  std::string err;
  EXPECT_FALSE(tc::filter_add(*d, Dir::Egress, s, false, &err));
  EXPECT_FALSE(err.empty());
  EXPECT_EQ(d->egress_hook(), nullptr);
}

TEST_F(TcTest, IngressPath) {
  NetDevice* d = make("foo", "dummy");
  EXPECT_EQ(receive(d), NET_RX_SUCCESS);  // nothing attached: delivered
  EXPECT_EQ(rx(d), 1u);
  clsact(d);
  filter(d, Dir::Ingress, spec(ret_prog(2), true));
  EXPECT_EQ(receive(d), NET_RX_DROP);
  EXPECT_EQ(drops(DropReason::TC_INGRESS), 1u);
  EXPECT_EQ(rx(d), 1u);
  EXPECT_EQ(d->egress_hook(), nullptr);  // ingress filters do not touch the egress hook
  NetDevice* down = make("down", "dummy", 1, 1000, false);
  EXPECT_EQ(receive(down), NET_RX_DROP);
  EXPECT_EQ(drops(DropReason::DEV_READY), 1u);
  EXPECT_EQ(outstanding(), 0u);
}

// Ingress filter reading the mark (ld #mark; ret a) on a packet the test marks.
TEST_F(TcTest, IngressProgramSeesMetadata) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Ingress, spec("2,32 0 0 4294963220,22 0 0 0,", true));  // ret mark
  receive(d, 2);  // SHOT
  receive(d, 0);  // OK
  EXPECT_EQ(drops(DropReason::TC_INGRESS), 1u);
  EXPECT_EQ(rx(d), 1u);
}

TEST_F(TcTest, EngineSwitchReloadsAttachedPrograms) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(2), true));
  std::string err;
  ASSERT_TRUE(tc::tc_set_bpf_engine(bpf::Engine::Switch, &err)) << err;
  tc::filter_walk(*d, Dir::Egress, [](const tc::BpfFilter& f) { EXPECT_EQ(f.engine(), bpf::Engine::Switch); });
  send(d, 0);
  ASSERT_TRUE(tc::tc_set_bpf_engine(bpf::Engine::Threaded, &err)) << err;
  tc::filter_walk(*d, Dir::Egress, [](const tc::BpfFilter& f) { EXPECT_EQ(f.engine(), bpf::Engine::Threaded); });
  send(d, 0);
  ASSERT_TRUE(tc::tc_set_bpf_engine(bpf::Engine::Jit, &err)) << err;
  send(d, 0);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 3u);
}

TEST_F(TcTest, EgressHooksAbSwitch) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(2), true));
  tc::tc_egress_hooks_enable(false);
  EXPECT_EQ(d->egress_hook(), nullptr);
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
  tc::tc_egress_hooks_enable(true);
  EXPECT_NE(d->egress_hook(), nullptr);
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 1u);
}

// Document 000's "with netfilter hook": the egress hook of a device without netfilter
// egress is tc alone; the A/B switch forces the (empty) netfilter check in.
TEST_F(TcTest, NetfilterHookPointOnlyWhereAskedFor) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(0), true));
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_tc_only);
  tc::tc_nf_hook_point_force(tc::NfHookPoint::On);
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks);
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
  tc::tc_nf_hook_point_force(tc::NfHookPoint::Off);
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_tc_only);
  send(d, 0);
  EXPECT_EQ(tx(d), 2u);
}

class NftTcTest : public TcFixture {
 protected:
  int nft(const std::vector<std::string>& w) {
    std::ostringstream o, e;
    int rc = nf::nft_command(w, ruleset, resolver, o, e);
    EXPECT_EQ(rc, 0) << e.str();
    last_out = o.str();
    return rc;
  }
  tc::DevTableNftResolver resolver{table};
  nf::NftRuleset ruleset;
  std::string last_out;
  ~NftTcTest() override { ruleset.flush(); }
};

// nf_hook_point=before_fix: the same hooks through the hook pointer (document 000's
// "before"); what passes and what is dropped does not change.
TEST_F(NftTcTest, BeforeFixHookPointRunsNetfilterThenTcOutOfLine) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(0), true));
  tc::tc_nf_hook_point_force(tc::NfHookPoint::BeforeFix);
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks_outline);
  nft({"add", "table", "netdev", "t"});
  nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; }"});
  nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "7", "counter", "drop"});
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks_outline);
  EXPECT_EQ(send(d, 7), 1);
  EXPECT_EQ(drops(DropReason::NETFILTER_DROP), 1u);
  EXPECT_EQ(send(d, 0), 0);
  EXPECT_EQ(tx(d), 1u);
  tc::tc_nf_hook_point_force(tc::NfHookPoint::Off);
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks);
  EXPECT_EQ(send(d, 7), 1);  // inline now: the chain still drops
  EXPECT_EQ(drops(DropReason::NETFILTER_DROP), 2u);
}

// A device whose tc hook was installed without netfilter switches to the full hook when
// a chain is added later, and the chain takes effect.
TEST_F(NftTcTest, ChainAddedAfterTcFilterRuns) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(0), true));
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_tc_only);
  nft({"add", "table", "netdev", "t"});
  nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; }"});
  nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "7", "counter", "drop"});
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks);
  tc::tc_nf_hook_point_force(tc::NfHookPoint::Off);  // the switch never takes netfilter away
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks);
  EXPECT_EQ(send(d, 7), 1);
  EXPECT_EQ(drops(DropReason::NETFILTER_DROP), 1u);
  EXPECT_EQ(send(d, 1), 0);
  EXPECT_EQ(tx(d), 1u);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(NftTcTest, EgressChainDropsAndAcceptsInDevQueueXmit) {
  NetDevice* d = make("foo", "dummy");
  nft({"add", "table", "netdev", "t"});
  nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; }"});
  EXPECT_NE(d->egress_hook(), nullptr);
  nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "7", "counter", "drop"});
  EXPECT_EQ(send(d, 7), 1);  // NET_XMIT_DROP
  EXPECT_EQ(send(d, 1), 0);
  EXPECT_EQ(tx(d), 1u);
  EXPECT_EQ(drops(DropReason::NETFILTER_DROP), 1u);
  nft({"list", "ruleset"});
  EXPECT_NE(last_out.find("packets 1"), std::string::npos) << last_out;
  EXPECT_EQ(outstanding(), 0u);
}

// Netfilter egress runs before tc egress; a packet tc redirects to another device skips
// that device's netfilter egress (nf_skip_egress).
TEST_F(NftTcTest, NetfilterBeforeTcAndRedirectSkipsNetfilter) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  nft({"add", "table", "netdev", "t"});
  nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; }"});
  nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "7", "counter", "drop"});
  nft({"add", "chain", "netdev", "t", "b", "{ type filter hook egress device bar priority 0; policy drop; }"});
  clsact(foo);
  auto tc_drop = spec(ret_prog(2), true);
  filter(foo, Dir::Egress, tc_drop);
  send(foo, 7);  // netfilter sees it first
  EXPECT_EQ(drops(DropReason::NETFILTER_DROP), 1u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 0u);
  send(foo, 1);  // netfilter accepts, tc drops
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 1u);
  // Now tc redirects foo -> bar; bar's netfilter chain (policy drop) is skipped.
  auto redirect = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                     tc::MirredAction::Kind::Redirect, bar, "bar");
  filter(foo, Dir::Egress, spec(ret_prog(-1), false, 49152, {redirect}), true);
  send(foo, 1);
  EXPECT_EQ(tx(bar), 1u);
  send(bar, 1);  // sent on bar directly: its chain drops it
  EXPECT_EQ(drops(DropReason::NETFILTER_DROP), 2u);
  EXPECT_EQ(tx(bar), 1u);
  EXPECT_EQ(outstanding(), 0u);
}

TEST_F(TcTest, AccountingInvariantAcrossMixedFilters) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  clsact(foo);
  // da returns the mark: 2 drop, 7 redirect without target (drop), 4 stolen, 8 trap
  // (consumed), others go on; pref 1 redirects mark 9 to bar first.
  filter(foo, Dir::Egress, spec("2,32 0 0 4294963220,22 0 0 0,", true, 10));
  // (ld #mark; jeq #9 -> ret -1 (match) else ret 0)
  auto redirect = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                     tc::MirredAction::Kind::Redirect, bar, "bar");
  filter(foo, Dir::Egress, spec("4,32 0 0 4294963220,21 0 1 9,6 0 0 4294967295,6 0 0 0,", false, 1, {redirect}));
  uint64_t stolen = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    const uint32_t mark = i % 10;
    send(foo, mark);
    if (mark == 4 || mark == 8) ++stolen;
  }
  drain();
  EXPECT_EQ(tx(bar), 100u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 200u);
  EXPECT_EQ(tx(foo), 500u);
  EXPECT_EQ(sent, tx(foo) + tx(bar) + all_drops() + stolen);
  EXPECT_EQ(outstanding(), 0u);
}

}  // namespace
}  // namespace pktpath::testing
