// Configuration changes under traffic: two reader threads run the egress hook in a loop
// while a third replaces the hook entries (or the nft chain's rules) many times. Checks:
// no crash, no use-after-free (asan), no data race (tsan), and every packet accounted:
// accepted + dropped == run, drops counted once under NETFILTER_DROP.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "netfilter/nf_hooks.h"
#include "core/rcu.h"
#include "nf_test_util.h"
#include "sanitizer_scale.h"

namespace pktpath::nf {
namespace {

constexpr int kReplacements = pktpath::testing::scaled<int>(10000, 2000);

// Hook private data that is freed right after each replacement: a reader still using it
// after the grace period would be a use-after-free.
struct Cfg {
  static constexpr uint64_t kMagic = 0x6e66686f6f6b2121;
  uint64_t magic = kMagic;
  bool drop;
};
NfVerdict cfg_hook(void* priv, Packet*, const NfHookState&) {
  const Cfg* c = static_cast<const Cfg*>(priv);
  if (c->magic != Cfg::kMagic) std::abort();  // freed or corrupted while in use
  return c->drop ? NfVerdict::DROP : NfVerdict::ACCEPT;
}

// Readers run until the writer ends, however it ends (a failed ASSERT returns early).
struct StopGuard {
  std::atomic<bool>& stop;
  ~StopGuard() { stop.store(true); }
};

struct ReaderResult {
  uint64_t run = 0, accepted = 0, dropped = 0, other = 0, counted_drops = 0;
};

// The n-th packet a reader sends: marks 0..3 in turn, or destinations 10.0.0.0..10.0.3.255.
test::Pkt by_mark(uint32_t n) { return test::Pkt{.mark = n & 3}; }
test::Pkt by_daddr(uint32_t n) { return test::Pkt{.daddr = 0x0a000000u | (n & 1023)}; }

// One datapath thread: its own Cpu, registered with RCU, a quiescent state per packet.
void reader(PacketPool& pool, NfDeviceHooks& dev, std::atomic<bool>& stop, ReaderResult& out,
            test::Pkt (*make)(uint32_t)) {
  Cpu cpu(pool);
  {
    RcuReader rcu;
    uint32_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      Packet* p = test::make_packet(cpu, make(n++));
      if (!p) break;
      ++out.run;
      switch (nf_hook_egress(dev, p, cpu)) {
        case NfVerdict::ACCEPT: ++out.accepted; cpu.free(p); break;
        case NfVerdict::DROP: ++out.dropped; break;
        default: ++out.other; break;
      }
      rcu_quiescent();
    }
  }
  out.counted_drops = cpu.stats().drops[static_cast<unsigned>(DropReason::NETFILTER_DROP)].get();
  cpu.drain_cache();
}

void check(const ReaderResult* r, int n) {
  uint64_t accepted = 0, dropped = 0;
  for (int i = 0; i < n; ++i) {
    EXPECT_GT(r[i].run, 0u);
    EXPECT_EQ(r[i].accepted + r[i].dropped, r[i].run) << "reader " << i;
    EXPECT_EQ(r[i].other, 0u);
    EXPECT_EQ(r[i].counted_drops, r[i].dropped) << "reader " << i;
    accepted += r[i].accepted;
    dropped += r[i].dropped;
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(dropped, 0u);
}

// Two readers sending `make`'s packets into dev while `write` runs on a third thread;
// the readers stop when it returns, however it returns. Checks the accounting.
template <typename Write>
void under_traffic(PacketPool& pool, NfDeviceHooks& dev, test::Pkt (*make)(uint32_t), Write write) {
  std::atomic<bool> stop{false};
  ReaderResult res[2];
  std::thread r0(reader, std::ref(pool), std::ref(dev), std::ref(stop), std::ref(res[0]), make);
  std::thread r1(reader, std::ref(pool), std::ref(dev), std::ref(stop), std::ref(res[1]), make);
  std::thread writer([&] {
    StopGuard guard{stop};
    write();
  });
  writer.join();
  r0.join();
  r1.join();
  check(res, 2);
}

TEST(NfHookStress, ReplaceHookEntriesUnderTraffic) {
  PacketPool pool(PacketPool::Options{.capacity = 2048});
  NfDeviceHooks dev;
  // A second, fixed hook so that arrays of two entries are rebuilt around the replaced one.
  Cfg fixed{.drop = false};
  NfHookOps fixed_ops{cfg_hook, &fixed, 100, NfHookNum::EGRESS};
  ASSERT_TRUE(nf_register_hook(dev, &fixed_ops).has_value());

  auto cfg = std::make_unique<Cfg>(Cfg{.drop = false});
  auto ops = std::make_unique<NfHookOps>(NfHookOps{cfg_hook, cfg.get(), 0, NfHookNum::EGRESS});
  ASSERT_TRUE(nf_register_hook(dev, ops.get()).has_value());

  std::atomic<bool> stop{false};
  ReaderResult res[2];
  std::thread r0(reader, std::ref(pool), std::ref(dev), std::ref(stop), std::ref(res[0]), by_mark);
  std::thread r1(reader, std::ref(pool), std::ref(dev), std::ref(stop), std::ref(res[1]), by_mark);
  std::thread writer([&] {
    StopGuard guard{stop};
    for (int i = 0; i < kReplacements; ++i) {
      auto ncfg = std::make_unique<Cfg>(Cfg{.drop = (i & 1) == 0});
      auto nops = std::make_unique<NfHookOps>(NfHookOps{cfg_hook, ncfg.get(), (i % 3) * 100 - 100, NfHookNum::EGRESS});
      ASSERT_TRUE(nf_replace_hook(dev, ops.get(), nops.get()).has_value());
      // The grace period has passed: the old hook's data and ops can go now.
      cfg->magic = 0;
      cfg = std::move(ncfg);
      ops = std::move(nops);
      if (i % 1000 == 999) {  // unregister and register again: a window with one hook
        ASSERT_TRUE(nf_unregister_hook(dev, ops.get()).has_value());
        ASSERT_TRUE(nf_register_hook(dev, ops.get()).has_value());
      }
    }
  });
  writer.join();
  r0.join();
  r1.join();
  check(res, 2);
  nf_unregister_all(dev);
  EXPECT_EQ(pool.available(), pool.capacity());
}

TEST(NfHookStress, ReplaceNftChainUnderTraffic) {
  PacketPool pool(PacketPool::Options{.capacity = 2048});
  test::TestResolver devs;
  NfDeviceHooks& foo = devs.add("foo");
  NftRuleset rs;
  ASSERT_EQ(test::nft(rs, devs, {"add", "table", "netdev", "t"}).rc, 0);
  auto add_chain = [&] {
    return test::nft(rs, devs, {"add", "chain", "netdev", "t", "c",
                                "{ type filter hook egress device foo priority 0; }"}).rc;
  };
  ASSERT_EQ(add_chain(), 0);
  uint64_t handle = 0;
  NftRuleSpec accept_all;
  accept_all.counter_at = 0;
  accept_all.verdict = NftRuleVerdict::ACCEPT;
  ASSERT_TRUE(rs.add_rule("t", "c", accept_all, false, &handle).has_value());

  std::atomic<bool> stop{false};
  ReaderResult res[2];
  std::thread r0(reader, std::ref(pool), std::ref(foo), std::ref(stop), std::ref(res[0]), by_mark);
  std::thread r1(reader, std::ref(pool), std::ref(foo), std::ref(stop), std::ref(res[1]), by_mark);
  std::thread writer([&] {
    StopGuard guard{stop};
    for (int i = 0; i < kReplacements; ++i) {
      // Replace the rule in one publication (nft replace rule ... handle H ...).
      std::vector<std::string> w = {"replace", "rule", "netdev", "t", "c", "handle", std::to_string(handle),
                                    "meta", "mark", "!=", "3", "counter"};
      w.push_back((i & 1) == 0 ? "drop" : "accept");
      auto cmd = nft_parse(w);
      ASSERT_TRUE(cmd.has_value());
      const NftCommand& c = *cmd;
      ASSERT_TRUE(rs.replace_rule(c.table, c.chain, c.handle, c.rule, &handle).has_value());
      if (i % 500 == 499) {  // replace the whole chain now and then
        ASSERT_EQ(test::nft(rs, devs, {"delete", "chain", "netdev", "t", "c"}).rc, 0);
        ASSERT_EQ(add_chain(), 0);
        ASSERT_TRUE(rs.add_rule("t", "c", accept_all, false, &handle).has_value());
      }
      if (i % 100 == 0) (void)rs.list();  // listing reads counters while they change
    }
  });
  writer.join();
  r0.join();
  r1.join();
  check(res, 2);
  rs.flush();
  EXPECT_EQ(foo.egress.load(), nullptr);
  EXPECT_EQ(pool.available(), pool.capacity());
}

// Sets changed under traffic: readers look destination addresses up in a hash set (which
// grows, and whose deleted nodes are freed after a grace period) and in an interval set
// (republished whole per command) while a writer adds and deletes elements.
TEST(NfHookStress, SetElementsChangeUnderTraffic) {
  PacketPool pool(PacketPool::Options{.capacity = 2048});
  test::TestResolver devs;
  NfDeviceHooks& foo = devs.add("foo");
  NftRuleset rs;
  auto nft = [&](const std::vector<std::string>& w) { return test::nft(rs, devs, w).rc; };
  ASSERT_EQ(nft({"add", "table", "netdev", "t"}), 0);
  ASSERT_EQ(nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; }"}), 0);
  ASSERT_EQ(nft({"add", "set", "netdev", "t", "h", "{ type ipv4_addr; }"}), 0);
  ASSERT_EQ(nft({"add", "set", "netdev", "t", "iv", "{ type ipv4_addr; flags interval; }"}), 0);
  ASSERT_EQ(nft({"add", "rule", "netdev", "t", "c", "ip", "daddr", "@h", "counter", "drop"}), 0);
  ASSERT_EQ(nft({"add", "rule", "netdev", "t", "c", "ip", "daddr", "@iv", "drop"}), 0);

  under_traffic(pool, foo, by_daddr, [&] {
    auto addr = [](uint32_t i) { return "10.0." + std::to_string(i >> 8 & 3) + "." + std::to_string(i & 255); };
    for (int i = 0; i < kReplacements / 10; ++i) {
      // 16 addresses into the hash set, the previous 16 out; a range in, the last one out.
      std::string in = "{ ", out = "{ ";
      for (int k = 0; k < 16; ++k) {
        in += addr(static_cast<uint32_t>(i * 16 + k) % 1024) + (k < 15 ? ", " : " }");
        out += addr(static_cast<uint32_t>((i - 1) * 16 + k) % 1024) + (k < 15 ? ", " : " }");
      }
      ASSERT_EQ(nft({"add", "element", "netdev", "t", "h", in}), 0);
      if (i > 0 && (i - 1) % 50 != 49) {
        ASSERT_EQ(nft({"delete", "element", "netdev", "t", "h", out}), 0);
      }
      const uint32_t lo = static_cast<uint32_t>(i * 37) % 1000;
      const std::string range = "{ " + addr(lo) + "-" + addr(lo + 7) + " }";
      ASSERT_EQ(nft({"add", "element", "netdev", "t", "iv", range}), 0);
      ASSERT_EQ(nft({"delete", "element", "netdev", "t", "iv", range}), 0);
      if (i % 50 == 49) {
        ASSERT_EQ(nft({"flush", "set", "netdev", "t", "h"}), 0);
      }
      if (i % 20 == 0) (void)rs.list();
    }
  });
  rs.flush();
  EXPECT_EQ(pool.available(), pool.capacity());
}

// Rules that add to a set from two datapath threads while a writer deletes, adds and
// flushes its elements and lists them: elements and their counters are freed only after
// the readers are past them, and the set never holds more than its size.
TEST(NfHookStress, DynamicSetWrittenByTrafficAndCommands) {
  PacketPool pool(PacketPool::Options{.capacity = 2048});
  test::TestResolver devs;
  NfDeviceHooks& foo = devs.add("foo");
  NftRuleset rs;
  auto nft = [&](const std::vector<std::string>& w) { return test::nft(rs, devs, w).rc; };
  ASSERT_EQ(nft({"add", "table", "netdev", "t"}), 0);
  ASSERT_EQ(nft({"add", "chain", "netdev", "t", "c", "{ type filter hook egress device foo priority 0; }"}), 0);
  ASSERT_EQ(nft({"add", "set", "netdev", "t", "d", "{ type ipv4_addr; size 512; flags dynamic,timeout; counter; }"}), 0);
  ASSERT_EQ(nft({"add", "rule", "netdev", "t", "c", "update", "@d", "{", "ip", "daddr", "timeout", "1h", "}"}), 0);
  ASSERT_EQ(nft({"add", "rule", "netdev", "t", "c", "ip", "daddr", "@d", "drop"}), 0);

  under_traffic(pool, foo, by_daddr, [&] {
    auto addr = [](uint32_t i) { return "10.0." + std::to_string(i >> 8 & 3) + "." + std::to_string(i & 255); };
    for (int i = 0; i < kReplacements / 10; ++i) {
      const std::string a = "{ " + addr(static_cast<uint32_t>(i * 7) % 1024) + " }";
      (void)nft({"delete", "element", "netdev", "t", "d", a});  // absent when traffic has not added it
      (void)nft({"add", "element", "netdev", "t", "d", a});     // refused when the set is full
      if (i % 50 == 49) {
        ASSERT_EQ(nft({"flush", "set", "netdev", "t", "d"}), 0);
      }
      if (i % 20 == 0) {
        const std::string l = rs.list();
        ASSERT_NE(l.find("counter packets"), std::string::npos);
      }
    }
  });
  std::string listed;
  ASSERT_EQ(rs.list_set("t", "d", &listed).has_value(), true);
  size_t n = 0;
  for (size_t at = listed.find("10.0."); at != std::string::npos; at = listed.find("10.0.", at + 1)) ++n;
  EXPECT_LE(n, 512u);
  rs.flush();
  EXPECT_EQ(pool.available(), pool.capacity());
}

// Datapath threads that also change the configuration (a script runner thread that sends,
// say): each is a registered, online reader that takes the writer mutex while the other
// holds it and waits for a grace period. RcuWriterScope keeps this from deadlocking.
TEST(NfHookStress, ReaderThreadsThatAlsoWrite) {
  PacketPool pool(PacketPool::Options{.capacity = 1024});
  NfDeviceHooks dev;
  std::atomic<uint64_t> total_run{0}, total_ok{0};
  auto worker = [&](int id) {
    Cpu cpu(pool);
    {
      RcuReader rcu;
      Cfg cfgs[2] = {Cfg{.drop = false}, Cfg{.drop = false}};
      NfHookOps ops[2] = {{cfg_hook, &cfgs[0], id, NfHookNum::EGRESS}, {cfg_hook, &cfgs[1], id, NfHookNum::EGRESS}};
      ASSERT_TRUE(nf_register_hook(dev, &ops[0]).has_value());
      int cur = 0;
      for (int i = 0; i < 300; ++i) {
        for (int k = 0; k < 20; ++k) {
          Packet* p = test::make_packet(cpu, test::Pkt{});
          ++total_run;
          if (nf_hook_egress(dev, p, cpu) == NfVerdict::ACCEPT) {
            ++total_ok;
            cpu.free(p);
          }
          rcu_quiescent();
        }
        ASSERT_TRUE(nf_replace_hook(dev, &ops[cur], &ops[cur ^ 1]).has_value());
        cur ^= 1;
      }
      ASSERT_TRUE(nf_unregister_hook(dev, &ops[cur]).has_value());
    }
    cpu.drain_cache();
  };
  std::thread a(worker, 1), b(worker, 2);
  a.join();
  b.join();
  EXPECT_EQ(total_run.load(), 2u * 300 * 20);
  EXPECT_EQ(total_ok.load(), total_run.load());
  EXPECT_EQ(dev.egress.load(), nullptr);
  EXPECT_EQ(pool.available(), pool.capacity());
}

}  // namespace
}  // namespace pktpath::nf
