// clsact (src/sched/clsact.cc): filter order, prefs and handles, attach and detach,
// ingress, the egress hook switches, netfilter egress in dev_queue_xmit, and the
// accounting invariant.
#include <gtest/gtest.h>

#include <sstream>

#include "netfilter/nft_command.h"
#include "netfilter/nft_net.h"
#include "sched/nf_dev_resolver.h"
#include "tc_fixture.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

using tc::Dir;

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
  ASSERT_TRUE(ok(tc::filter_del(*d, Dir::Egress, 5, 0)));
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
  EXPECT_FALSE(tc::filter_del(*d, Dir::Egress, 5, 0));
}

TEST_F(TcTest, AutomaticPrefAndHandleAndDuplicates) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  uint32_t pref = 0, handle = 0;
  ASSERT_TRUE(ok(tc::filter_add(*d, Dir::Egress, spec(ret_prog(0), true), false, &pref, &handle)));
  EXPECT_EQ(pref, 49152u);
  EXPECT_EQ(handle, 1u);
  ASSERT_TRUE(ok(tc::filter_add(*d, Dir::Egress, spec(ret_prog(0), true), false, &pref, &handle)));
  EXPECT_EQ(pref, 49151u);
  auto dup = spec(ret_prog(2), true, 49151);
  dup.handle = 1;
  EXPECT_FALSE(tc::filter_add(*d, Dir::Egress, dup, false));
  EXPECT_TRUE(ok(tc::filter_add(*d, Dir::Egress, dup, true)));  // replace
  send(d, 0);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 1u);
}

TEST_F(TcTest, FilterNeedsClsactAndDeletingClsactDetaches) {
  NetDevice* d = make("foo", "dummy");
  std::string err;
  err = failure_of(tc::filter_add(*d, Dir::Egress, spec(ret_prog(2), true), false));
  EXPECT_NE(err.find("clsact"), std::string::npos);
  clsact(d);
  EXPECT_FALSE(tc::clsact_add(*d));
  filter(d, Dir::Egress, spec(ret_prog(2), true));
  EXPECT_NE(d->egress_hook(), nullptr);
  send(d, 0);
  EXPECT_EQ(tx(d), 0u);
  ASSERT_TRUE(ok(tc::clsact_del(*d)));
  EXPECT_EQ(d->egress_hook(), nullptr);  // back to the one untaken branch
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
}

TEST_F(TcTest, IngressPath) {
  NetDevice* d = make("foo", "dummy");
  EXPECT_EQ(receive(d), NET_RX_SUCCESS);  // nothing attached: delivered
  EXPECT_EQ(delivered(), 1u);
  clsact(d);
  filter(d, Dir::Ingress, spec(ret_prog(2), true));
  EXPECT_EQ(receive(d), NET_RX_DROP);
  EXPECT_EQ(drops(DropReason::TC_INGRESS), 1u);
  EXPECT_EQ(delivered(), 1u);
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
  EXPECT_EQ(delivered(), 1u);
}

TEST_F(TcTest, EgressHooksAbSwitch) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(2), true));
  tc::tc_egress_hooks_enable(net, false);
  EXPECT_EQ(d->egress_hook(), nullptr);
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
  tc::tc_egress_hooks_enable(net, true);
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
  tc::tc_nf_hook_point_force(net, tc::NfHookPoint::On);
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks);
  send(d, 0);
  EXPECT_EQ(tx(d), 1u);
  tc::tc_nf_hook_point_force(net, tc::NfHookPoint::Off);
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
  nf::NftRuleset& ruleset = nf::nft_ruleset(net);
  std::string last_out;
};

// nf_hook_point=before_fix: the same hooks through the hook pointer (document 000's
// "before"); what passes and what is dropped does not change.
TEST_F(NftTcTest, BeforeFixHookPointRunsNetfilterThenTcOutOfLine) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  filter(d, Dir::Egress, spec(ret_prog(0), true));
  tc::tc_nf_hook_point_force(net, tc::NfHookPoint::BeforeFix);
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks_outline);
  nft({"add", "table", "netdev", "t"});
  nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; }"});
  nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "7", "counter", "drop"});
  EXPECT_EQ(d->egress_hook(), &tc::dev_egress_hooks_outline);
  EXPECT_EQ(send(d, 7), 1);
  EXPECT_EQ(drops(DropReason::NETFILTER_DROP), 1u);
  EXPECT_EQ(send(d, 0), 0);
  EXPECT_EQ(tx(d), 1u);
  tc::tc_nf_hook_point_force(net, tc::NfHookPoint::Off);
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
  tc::tc_nf_hook_point_force(net, tc::NfHookPoint::Off);  // the switch never takes netfilter away
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
                                                     tc::MirredAction::Kind::Redirect, bar, "bar", table.notifier());
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
                                                     tc::MirredAction::Kind::Redirect, bar, "bar", table.notifier());
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
