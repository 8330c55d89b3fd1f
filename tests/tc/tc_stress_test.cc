// Configuration under traffic: senders run dev_queue_xmit while another thread replaces,
// deletes and re-adds the egress filter (and flips the engine). Readers take no lock;
// replaced filters are freed after a grace period. Every packet is accounted for.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <arpa/inet.h>

#include <cstring>

#include "core/bpf_engine.h"
#include "core/rcu.h"
#include "core/net.h"
#include "sched/act_police.h"
#include "sched/cls_flower.h"
#include "sched/cls_matchall.h"
#include "sched/cls_u32.h"
#include "tc_fixture.h"
#include "sanitizer_scale.h"
#include "status_assert.h"

namespace pktpath::testing {
namespace {

constexpr int kReplacements = pktpath::testing::scaled<int>(10000, 1000);

class TcStress : public TcFixture {};

struct SenderResult {
  uint64_t sent = 0, rc_ok = 0, rc_drop = 0, tc_drops = 0, other_drops = 0;
};

// Two threads sending 60-byte IPv4/UDP frames to 10.0.0.1 through `d` until stopped, each
// on its own Cpu, quiescent between bursts.
class Senders {
 public:
  Senders(PacketPool& pool, NetDevice* d) {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this, &pool, d, i] { run(pool, d, res_[i]); });
    while (ready_.load() < 2) std::this_thread::yield();
  }
  ~Senders() { stop(); }  // a failed assertion leaves early: still join
  // Stops them; the sums of what they saw.
  SenderResult stop() {
    stop_.store(true);
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    SenderResult s;
    for (const auto& r : res_) {
      s.sent += r.sent;
      s.rc_ok += r.rc_ok;
      s.rc_drop += r.rc_drop;
      s.tc_drops += r.tc_drops;
      s.other_drops += r.other_drops;
    }
    return s;
  }

 private:
  void run(PacketPool& pool, NetDevice* d, SenderResult& r) {
    Cpu c(pool);
    c.bind();
    RcuReader reader;
    ready_.fetch_add(1);
    while (!stop_.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 32; ++i) {
        Packet* p = c.alloc();
        if (!p) break;
        uint8_t* f = p->put(60);
        std::memset(f, 0, 60);
        f[12] = 0x08, f[14] = 0x45, f[23] = 17, f[30] = 10, f[33] = 1;  // IPv4, UDP, to 10.0.0.1
        p->protocol = htons(0x0800);
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
  }
  std::atomic<bool> stop_{false};
  std::atomic<int> ready_{0};
  SenderResult res_[2];
  std::vector<std::thread> threads_;
};

// Every packet transmitted or dropped under TC_EGRESS, return codes matching.
void expect_accounted(const SenderResult& r, NetDevice* d) {
  EXPECT_GT(r.sent, 0u);
  EXPECT_EQ(r.other_drops, 0u);
  EXPECT_EQ(r.rc_drop, r.tc_drops);
  EXPECT_EQ(d->stats_sum().tx_packets, r.rc_ok);
  EXPECT_EQ(r.sent, d->stats_sum().tx_packets + r.tc_drops);
  EXPECT_GT(r.tc_drops, 0u);
  EXPECT_GT(d->stats_sum().tx_packets, 0u);
}

TEST_F(TcStress, ReplaceEgressFilterWhileTwoThreadsSend) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto drop = std::make_shared<tc::GactAction>(tc::TC_ACT_SHOT);
  auto pass = std::make_shared<tc::GactAction>(tc::TC_ACT_OK);
  filter(d, tc::Dir::Egress, spec(ret_prog(0), true, 1));

  Senders senders(pool, d);

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
    ASSERT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, std::move(s), true)));
    if (i % 500 == 250) {
      // Delete and re-add (the hook pointer goes away and comes back under traffic).
      ASSERT_TRUE(ok(tc::filter_del(*d, tc::Dir::Egress, 0, 0)));
      filter(d, tc::Dir::Egress, spec(ret_prog(0), true, 1));
    }
    if (i % 1000 == 500) {
      ASSERT_TRUE(net_set_bpf_engine(net, i % 2000 == 500 ? bpf::Engine::Threaded : bpf::Engine::Jit, &err)) << err;
    }
  }
  const SenderResult r = senders.stop();
  ASSERT_TRUE(net_set_bpf_engine(net, bpf::Engine::Jit, &err)) << err;
  expect_accounted(r, d);
  // The shared actions kept counting across the replacements.
  EXPECT_EQ(pass->stats.sum().drops, 0u);
  EXPECT_LE(drop->stats.sum().drops, r.tc_drops);
  EXPECT_EQ(outstanding(), 0u);
}

// The other kinds under traffic: pref 1 holds one kind, replaced in place with passing
// and dropping variants; every 250 replacements it is deleted and the next kind added.
TEST_F(TcStress, ReplaceEachKindWhileTwoThreadsSend) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto drop = std::make_shared<tc::GactAction>(tc::TC_ACT_SHOT);
  tc::PoliceOptions po;
  po.rate_bytes_ps = 1000000;
  po.burst = 6000;
  po.exceed = tc::TC_ACT_SHOT;
  auto police = tc::tcf_action_init("police", po, table);
  ASSERT_TRUE(police) << police.error().msg;
  auto make_spec = [&](int kind, bool dropping) -> std::unique_ptr<tc::FilterSpec> {
    tc::ActionList acts;
    if (dropping) acts.push_back(kind == 1 ? *police : drop);
    std::unique_ptr<tc::FilterSpec> s;
    if (kind == 0) {
      s = std::make_unique<tc::BpfFilterSpec>(spec(ret_prog(-1), false, 1, acts));
    } else if (kind == 1) {
      s = std::make_unique<tc::MatchallSpec>();
    } else if (kind == 2) {
      auto u = std::make_unique<tc::U32Spec>();
      u->keys = {{htonl(0x0a000000), htonl(0xff000000), 16}};  // dst 10/8
      u->terminal = true;
      s = std::move(u);
    } else {
      auto f = std::make_unique<tc::FlowerSpec>();
      f->key.ip_proto = 17;
      f->mask.ip_proto = 0xff;
      s = std::move(f);
    }
    s->pref = 1;
    s->actions = acts;
    return s;
  };
  ASSERT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, *make_spec(0, false), false)));
  Senders senders(pool, d);
  int kind = 0;
  for (int i = 1; i < kReplacements; ++i) {
    if (i % 250 == 0) {
      ASSERT_TRUE(ok(tc::filter_del(*d, tc::Dir::Egress, 1, 0)));
      kind = (kind + 1) % 4;
      ASSERT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, *make_spec(kind, false), false)));
      continue;
    }
    ASSERT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, *make_spec(kind, i % 2), true)));
  }
  expect_accounted(senders.stop(), d);
  EXPECT_EQ(outstanding(), 0u);
}

// flower's per-mask hash tables changed in place under traffic: one pref gains and loses
// nodes of three masks (tables grow, masks come and go) while two threads send; the node
// that drops the senders' frames comes and goes with them.
TEST_F(TcStress, FlowerTablesChangeWhileTwoThreadsSend) {
  NetDevice* d = make("foo", "dummy");
  clsact(d);
  auto drop = std::make_shared<tc::GactAction>(tc::TC_ACT_SHOT);
  auto node = [&](uint32_t handle, uint32_t dst, int prefix, bool dropping) {
    tc::FlowerSpec f;
    f.pref = 1;
    f.handle = handle;
    f.protocol = 0x0800;
    f.key.n_proto = htons(0x0800), f.mask.n_proto = 0xffff;
    const uint32_t m = prefix ? ~0u << (32 - prefix) : 0;
    const uint32_t k = htonl(dst), mk = htonl(m);
    std::memcpy(f.key.dst_ip, &k, 4);
    std::memcpy(f.mask.dst_ip, &mk, 4);
    if (dropping) f.actions = {drop};
    return f;
  };
  Senders senders(pool, d);
  const int rounds = kReplacements / 10;
  for (int i = 0; i < rounds; ++i) {
    // 24 nodes of three masks that miss 10.0.0.1, then the dropping /32 node.
    for (uint32_t j = 0; j < 24; ++j)
      ASSERT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, node(j + 1, 0x0b000000 + (j << 8), 24 + 4 * (j % 3), false),
                                 false)));
    ASSERT_TRUE(ok(tc::filter_add(*d, tc::Dir::Egress, node(100, 0x0a000001, 32, true), false)));
    for (uint32_t j = 0; j < 24; j += 2) ASSERT_TRUE(ok(tc::filter_del(*d, tc::Dir::Egress, 1, j + 1)));
    ASSERT_TRUE(ok(tc::filter_del(*d, tc::Dir::Egress, 1, 0)));
  }
  expect_accounted(senders.stop(), d);
  EXPECT_EQ(outstanding(), 0u);
}

}  // namespace
}  // namespace pktpath::testing
