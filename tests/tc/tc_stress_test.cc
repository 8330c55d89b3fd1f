// Configuration under traffic: senders run dev_queue_xmit while another thread replaces,
// deletes and re-adds the egress filter (and flips the engine). Readers take no lock;
// replaced filters are freed after a grace period. Every packet is accounted for.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/bpf_engine.h"
#include "core/rcu.h"
#include "core/net.h"
#include "tc_fixture.h"
#include "sanitizer_scale.h"

namespace pktpath::testing {
namespace {

constexpr int kReplacements = pktpath::testing::scaled<int>(10000, 1000);

class TcStress : public TcFixture {};

struct SenderResult {
  uint64_t sent = 0, rc_ok = 0, rc_drop = 0, tc_drops = 0, other_drops = 0;
};

TEST_F(TcStress, ReplaceEgressFilterWhileTwoThreadsSend) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto drop = std::make_shared<tc::GactAction>(tc::TC_ACT_SHOT);
  auto pass = std::make_shared<tc::GactAction>(tc::TC_ACT_OK);
  filter(d, tc::Dir::Egress, spec(ret_prog(0), true, 1));

  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  SenderResult res[2];
  auto sender = [&](int idx) {
    Cpu c(pool);
    c.bind();
    RcuReader reader;
    SenderResult& r = res[idx];
    ready.fetch_add(1);
    while (!stop.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 32; ++i) {
        Packet* p = c.alloc();
        if (!p) break;
        p->put(60);
        p->dev = d;
        ++r.sent;
        if (dev_queue_xmit(c, p) == 0)
          ++r.rc_ok;
        else
          ++r.rc_drop;
      }
      rcu_quiescent();  // between bursts: no hook pointer held
    }
    c.run_pending();
    r.tc_drops = c.stats().drops[static_cast<unsigned>(DropReason::TC_EGRESS)].get();
    for (unsigned k = 0; k < kDropReasonCount; ++k)
      if (k != static_cast<unsigned>(DropReason::TC_EGRESS)) r.other_drops += c.stats().drops[k].get();
  };
  std::thread t0(sender, 0), t1(sender, 1);
  while (ready.load() < 2) std::this_thread::yield();

  std::string err;
  for (int i = 0; i < kReplacements; ++i) {
    tc::BpfFilterSpec s;
    switch (i % 4) {
      case 0: s = spec(ret_prog(2), true, 1); break;                  // da drop
      case 1: s = spec(ret_prog(-1), false, 1, {pass}); break;        // match, pass
      case 2: s = spec(ret_prog(-1), false, 1, {drop}); break;        // match, drop
      default: s = spec(ret_prog(0), true, 1); break;                 // da ok
    }
    s.handle = 1;
    ASSERT_TRUE(tc::filter_add(*d, tc::Dir::Egress, std::move(s), true, &err)) << err;
    if (i % 500 == 250) {
      // Delete and re-add (the hook pointer goes away and comes back under traffic).
      ASSERT_TRUE(tc::filter_del(*d, tc::Dir::Egress, 0, 0, &err)) << err;
      filter(d, tc::Dir::Egress, spec(ret_prog(0), true, 1));
    }
    if (i % 1000 == 500) {
      ASSERT_TRUE(net_set_bpf_engine(net, i % 2000 == 500 ? bpf::Engine::Threaded : bpf::Engine::Jit, &err)) << err;
    }
  }
  stop.store(true);
  t0.join();
  t1.join();
  ASSERT_TRUE(net_set_bpf_engine(net, bpf::Engine::Jit, &err)) << err;

  uint64_t sent = 0, ok = 0, dropped_rc = 0, tc_drops = 0, other = 0;
  for (const auto& r : res) {
    sent += r.sent;
    ok += r.rc_ok;
    dropped_rc += r.rc_drop;
    tc_drops += r.tc_drops;
    other += r.other_drops;
  }
  EXPECT_GT(sent, 0u);
  EXPECT_EQ(other, 0u);
  EXPECT_EQ(dropped_rc, tc_drops);
  EXPECT_EQ(tx(d), ok);
  EXPECT_EQ(sent, tx(d) + tc_drops);  // every packet transmitted or dropped by reason
  EXPECT_GT(tc_drops, 0u);
  EXPECT_GT(tx(d), 0u);
  // The shared actions kept counting across the replacements.
  EXPECT_EQ(pass->stats.sum().drops, 0u);
  EXPECT_LE(drop->stats.sum().drops, tc_drops);
  EXPECT_EQ(outstanding(), 0u);
}

}  // namespace
}  // namespace pktpath::testing
