// tc actions (src/sched/tc_act.cc): gact verdicts, skbedit, mirred redirect and mirror,
// the redirect nesting limit, a mirred target deleted under the action.
#include <gtest/gtest.h>

#include "core/host_sink.h"
#include "status_assert.h"
#include "tc_fixture.h"

namespace pktpath::testing {
namespace {

using tc::Dir;

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
                                                     tc::MirredAction::Kind::Redirect, bar, "bar", table.notifier());
  filter(foo, Dir::Egress, spec(ret_prog(-1), false, 1, {redirect}));
  EXPECT_EQ(send(foo, 0), 0);
  EXPECT_EQ(tx(foo), 0u);
  EXPECT_EQ(tx(bar), 1u);
  EXPECT_EQ(redirect->stats.sum().packets, 1u);

  auto mirror = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                   tc::MirredAction::Kind::Mirror, bar, "bar", table.notifier());
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
                                              tc::MirredAction::Kind::Redirect, bar, "bar", table.notifier());
  filter(foo, Dir::Egress, spec(ret_prog(-1), false, 1, {a}));
  send(foo, 0);
  EXPECT_EQ(tx(foo), 0u);
  EXPECT_EQ(host_stats(net).delivered, 1u);
  EXPECT_EQ(rx(bar), 0u);  // tcf_mirred_forward counts nothing on the target: no driver took it
  EXPECT_EQ(outstanding(), 0u);
}

// tcf_mirred_act: bytes are skb->len where the action runs (on ingress the Ethernet header
// is pulled: 986 of a 1000-byte frame), and a target that refuses the packet — its egress
// hook or qdisc drops it, its receive path drops it — counts an overlimit.
TEST_F(TcTest, MirredCountsIngressBytesAndTargetRefusals) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  clsact(foo);
  clsact(bar);
  filter(bar, Dir::Egress, spec(ret_prog(2), true, 1));   // bar drops what it sends
  filter(bar, Dir::Ingress, spec(ret_prog(2), true, 1));  // and what it receives
  auto to_egress = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                      tc::MirredAction::Kind::Redirect, bar, "bar", table.notifier());
  auto to_ingress = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Ingress,
                                                       tc::MirredAction::Kind::Mirror, bar, "bar", table.notifier());
  filter(foo, Dir::Ingress, spec(ret_prog(-1), false, 1, {to_ingress, to_egress}));
  EXPECT_EQ(receive(foo, 0, 1000), NET_RX_SUCCESS);
  const tc::TcStats::Sum e = to_egress->stats.sum(), i = to_ingress->stats.sum();
  EXPECT_EQ(e.packets, 1u);
  EXPECT_EQ(e.bytes, 986u);
  EXPECT_EQ(i.bytes, 986u);
  EXPECT_EQ(e.overlimits, 1u);
  EXPECT_EQ(i.overlimits, 1u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 1u);
  EXPECT_EQ(drops(DropReason::TC_INGRESS), 1u);

  // On egress the whole frame counts; a target that takes the packet is no overlimit.
  NetDevice* baz = make("baz", "dummy");
  clsact(baz);
  auto to_foo = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                   tc::MirredAction::Kind::Redirect, foo, "foo", table.notifier());
  filter(baz, Dir::Egress, spec(ret_prog(-1), false, 1, {to_foo}));
  send(baz, 0);
  EXPECT_EQ(to_foo->stats.sum().bytes, 60u);
  EXPECT_EQ(to_foo->stats.sum().overlimits, 0u);
  EXPECT_EQ(tx(foo), 1u);
  EXPECT_EQ(outstanding(), 0u);
}

// foo -> bar -> foo -> ... : the nesting limit (8) ends the loop and counts the drop.
TEST_F(TcTest, RedirectLoopIsStoppedAndCounted) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  clsact(foo);
  clsact(bar);
  auto to_bar = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                   tc::MirredAction::Kind::Redirect, bar, "bar", table.notifier());
  auto to_foo = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                   tc::MirredAction::Kind::Redirect, foo, "foo", table.notifier());
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

// NETDEV_UNREGISTER of the target (mirred_device_event): the action forgets it; a
// redirect is then dropped under TC_EGRESS and a mirror makes no copy, both counted as
// overlimits. A new device of the same name is not the target (Linux keeps none either).
TEST_F(TcTest, MirredTargetDeletedDropsAndCounts) {
  NetDevice* foo = make("foo", "dummy");
  NetDevice* bar = make("bar", "dummy");
  clsact(foo);
  auto mirror = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress, tc::MirredAction::Kind::Mirror,
                                                   bar, "bar", table.notifier());
  auto redirect = std::make_shared<tc::MirredAction>(tc::MirredAction::Dir::Egress,
                                                     tc::MirredAction::Kind::Redirect, bar, "bar", table.notifier());
  filter(foo, Dir::Egress, spec(ret_prog(-1), false, 1, {mirror, redirect}));
  send(foo, 0);
  EXPECT_EQ(tx(bar), 2u);  // the copy and the packet
  const uint64_t subscribers = table.notifier().size();
  EXPECT_GE(subscribers, 2u);
  ASSERT_TRUE(ok(table.del("bar")));
  EXPECT_EQ(mirror->target(), nullptr);
  EXPECT_EQ(redirect->target(), nullptr);
  EXPECT_EQ(redirect->dump().get<tc::MirredOptions>()->dev, "*");
  for (int i = 0; i < 3; ++i) send(foo, 0);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 3u);
  EXPECT_EQ(tx(foo), 0u);
  EXPECT_EQ(redirect->stats.sum().overlimits, 3u);
  EXPECT_EQ(mirror->stats.sum().overlimits, 3u);
  EXPECT_EQ(redirect->stats.sum().packets, 4u);

  NetDevice* again = make("bar", "dummy");
  send(foo, 0);
  EXPECT_EQ(tx(again), 0u);
  EXPECT_EQ(drops(DropReason::TC_EGRESS), 4u);
  EXPECT_EQ(outstanding(), 0u);

  // The actions unsubscribe when they go away.
  ASSERT_TRUE(ok(tc::clsact_del(*foo)));
  mirror.reset();
  redirect.reset();
  ASSERT_TRUE(ok(table.del("foo")));
  EXPECT_EQ(table.notifier().size(), subscribers - 2);
}

}  // namespace
}  // namespace pktpath::testing
