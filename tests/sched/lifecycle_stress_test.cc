// Lifecycle stress (run under tsan in CI: the suite name contains "Stress"). For every
// registered root qdisc kind: bursts of traffic from two sender Cpus, and between the
// bursts the control side replaces and deletes the root qdisc, takes the link down and
// up, and deletes and re-creates the device. For clsact with a cls_bpf filter and an nft
// netdev chain: the filters and rules change under traffic, the device between bursts.
// After quiesce every packet made is transmitted, delivered, dropped under one reason or
// still queued, and the pool has every packet back.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bpf/parse.h"
#include "lifecycle_harness.h"
#include "netfilter/nft_command.h"
#include "sanitizer_scale.h"
#include "sched/clsact.h"
#include "sched/nf_dev_resolver.h"
#include "sched/sch_tbf.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

constexpr int kRounds = scaled<int>(150, 15);
constexpr uint64_t kPerBurst = scaled<uint64_t>(400, 100);

// Options for a kind that has no usable defaults; empty for the others.
QdiscOptions options_for(const std::string& kind) {
  if (kind == "tbf") {
    TbfOptions o;
    o.rate_bytes_ps = 1'000'000;  // slow enough to queue, drop and arm the watchdog
    o.burst = 1600;
    o.limit = 3000;
    o.limit_set = true;
    return o;
  }
  return {};
}

std::vector<std::string> root_kinds() {
  std::vector<std::string> kinds;
  for (const QdiscOps* ops : qdisc_ops_list())
    if (!ops->ingress_hook) kinds.emplace_back(ops->id);
  return kinds;
}

TEST(LifecycleStress, EveryRootQdiscKindUnderTrafficAndLifecycle) {
  const std::vector<std::string> kinds = root_kinds();
  ASSERT_GE(kinds.size(), 5u);
  uint64_t all_made = 0, all_ops = 0;
  for (const std::string& kind : kinds) {
    SCOPED_TRACE(kind);
    LifecycleHarness h;
    NetDevice* d = h.add_device("s0");
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(h.qdisc(d, QdiscOp::Replace, kind, options_for(kind)));
    for (int round = 0; round < kRounds; ++round) {
      h.burst(d, kPerBurst);
      switch (round % 5) {
        case 0:  // replaced (maybe holding packets, with a timer armed), then back
          ASSERT_TRUE(h.qdisc(d, QdiscOp::Replace, kind == "pfifo" ? "bfifo" : "pfifo"));
          ASSERT_TRUE(h.qdisc(d, QdiscOp::Replace, kind, options_for(kind)));
          break;
        case 1:  // delete: back to the default
          ASSERT_TRUE(h.qdisc(d, QdiscOp::Del, ""));
          break;
        case 2:  // re-add, then down and up (queued packets dropped)
          ASSERT_TRUE(h.qdisc(d, QdiscOp::Replace, kind, options_for(kind)));
          h.link_down_up(d);
          break;
        case 3:
          h.link_down_up(d);
          break;
        default:  // delete the device with its qdisc (and its armed timers), re-create
          h.del_device(d);
          d = h.add_device("s0");
          ASSERT_NE(d, nullptr);
          ASSERT_TRUE(h.qdisc(d, QdiscOp::Replace, kind, options_for(kind)));
          break;
      }
      h.table->reap();
      ASSERT_FALSE(::testing::Test::HasFailure()) << "round " << round;
    }
    h.burst(d, kPerBurst);
    h.expect_accounted(kind.c_str());
    std::printf("  %s\n", h.account(kind.c_str()).c_str());
    EXPECT_GT(h.transmitted(), 0u);
    h.teardown_and_check_pool();
    h.expect_accounted(kind.c_str());
    all_made += h.total_made();
    all_ops += h.ops;
  }
  std::printf("  root kinds: %zu, packets %llu, lifecycle operations %llu\n", kinds.size(),
              (unsigned long long)all_made, (unsigned long long)all_ops);
  ::testing::Test::RecordProperty("packets", std::to_string(all_made));
  ::testing::Test::RecordProperty("lifecycle_ops", std::to_string(all_ops));
}

// "1,6 0 0 K," — a program that returns K.
tc::BpfFilterSpec ret_filter(int64_t k, bool da, uint32_t pref) {
  tc::BpfFilterSpec s;
  std::string err;
  const std::string code = "1,6 0 0 " + std::to_string(static_cast<uint32_t>(k)) + ",";
  EXPECT_TRUE(bpf::parse_bytecode(code, &s.insns, &err)) << err;
  s.source = "bytecode '" + code + "'";
  s.da = da;
  s.pref = pref;
  s.handle = 1;
  return s;
}

class ClsactNft {
 public:
  explicit ClsactNft(LifecycleHarness& h) : h_(h), resolver_(*h.table) {}
  ~ClsactNft() { ruleset_.flush(); }

  void nft(const std::vector<std::string>& w) {
    std::ostringstream o, e;
    EXPECT_EQ(nf::nft_command(w, ruleset_, resolver_, o, e), 0) << e.str();
    ++h_.ops;
  }
  // clsact, an egress and an ingress filter, a netdev egress chain dropping mark 7.
  void attach(NetDevice* d) {
    std::string err;
    EXPECT_TRUE(ok(tc::clsact_add(*d)));
    EXPECT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, ret_filter(0, true, 1), false)));
    EXPECT_TRUE(ok(tc::filter_add(*d, tc::Dir::Ingress, ret_filter(0, true, 1), false)));
    h_.ops += 3;
    nft({"add", "table", "netdev", "t"});
    nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device " + d->name() + " priority 0; }"});
    nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "7", "counter", "drop"});
  }
  // NETDEV_UNREGISTER for this private ruleset (nft_netdev_event), then the device goes.
  void del_device(NetDevice* d) {
    ruleset_.netdev_unregister(&d->nf_hooks());
    nft({"delete", "table", "netdev", "t"});
    h_.del_device(d);
  }
  // Filter and rule changes, under traffic: `i` picks one.
  void change(NetDevice* d, int i) {
    std::string err;
    switch (i % 6) {
      case 0: {  // egress: direct-action drop, held until a sender meets it
        const uint64_t before = h_.drops(DropReason::TC_EGRESS);
        EXPECT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, ret_filter(2, true, 1), true)));
        ++h_.ops;
        // Bounded: on a slow (sanitized, loaded) run the next change could otherwise
        // replace the filter before any packet passed it.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (h_.drops(DropReason::TC_EGRESS) == before && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        break;
      }
      case 1:  // egress: direct-action ok
        EXPECT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, ret_filter(0, true, 1), true)));
        ++h_.ops;
        break;
      case 2:  // ingress: drop, then ok
        EXPECT_TRUE(ok(tc::filter_add(*d, tc::Dir::Ingress, ret_filter(2, true, 1), true)));
        EXPECT_TRUE(ok(tc::filter_add(*d, tc::Dir::Ingress, ret_filter(0, true, 1), true)));
        h_.ops += 2;
        break;
      case 3:  // egress filter deleted and re-added
        EXPECT_TRUE(ok(tc::filter_del(*d, tc::Dir::Egress, 0, 0)));
        EXPECT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, ret_filter(0, true, 1), false)));
        h_.ops += 2;
        break;
      case 4:  // nft: the chain deleted and re-created with its rule
        nft({"delete", "chain", "netdev", "t", "c"});
        nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device " + d->name() + " priority 0; }"});
        nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "7", "counter", "drop"});
        break;
      default:  // nft: one more rule
        nft({"add", "rule", "netdev", "t", "c", "meta", "mark", "3", "counter", "accept"});
        break;
    }
  }

 private:
  LifecycleHarness& h_;
  tc::DevTableNftResolver resolver_;
  nf::NftRuleset ruleset_;
};

TEST(LifecycleStress, ClsactAndNftChangedUnderTrafficDeviceBetweenBursts) {
  LifecycleHarness h;
  {
    ClsactNft cn(h);
    NetDevice* d = h.add_device("s0");
    ASSERT_NE(d, nullptr);
    cn.attach(d);
    int change = 0;
    for (int round = 0; round < kRounds; ++round) {
      // Senders run (one packet in 4 into the receive path) while filters and rules change.
      h.burst(d, UINT64_MAX, [&] {
        for (int i = 0; i < 12; ++i) cn.change(d, change++);
      }, 4);
      switch (round % 3) {
        case 0:
          h.link_down_up(d);
          break;
        case 1:  // a root qdisc under clsact replaced
          ASSERT_TRUE(h.qdisc(d, QdiscOp::Replace, round % 2 ? "pfifo" : "prio"));
          break;
        default:
          cn.del_device(d);
          d = h.add_device("s0");
          ASSERT_NE(d, nullptr);
          cn.attach(d);
          break;
      }
      h.table->reap();
      ASSERT_FALSE(::testing::Test::HasFailure()) << "round " << round;
    }
    tc::tc_rcu_barrier(*h.net);
    h.expect_accounted("clsact+nft");
    std::printf("  %s\n", h.account("clsact+nft").c_str());
    EXPECT_GT(h.transmitted(), 0u);
    EXPECT_GT(h.delivered(), 0u);
    EXPECT_GT(h.drops(DropReason::TC_EGRESS), 0u);
    cn.del_device(d);
  }
  tc::tc_rcu_barrier(*h.net);
  h.teardown_and_check_pool();
  h.expect_accounted("clsact+nft");
  std::printf("  clsact+nft: packets %llu, lifecycle operations %llu\n",
              (unsigned long long)h.total_made(), (unsigned long long)h.ops);
  ::testing::Test::RecordProperty("packets", std::to_string(h.total_made()));
  ::testing::Test::RecordProperty("lifecycle_ops", std::to_string(h.ops));
}

}  // namespace
}  // namespace pktpath::testing
