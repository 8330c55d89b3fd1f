// Taps attached and detached while two threads receive: readers take no lock, detached
// taps are unpublished and waited for (RCU grace period) before their counts are final,
// and every packet is delivered (nothing lost).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/bpf_engine.h"
#include "capture_fixture.h"
#include "core/net.h"
#include "core/rcu.h"
#include "sanitizer_scale.h"

namespace pktpath::testing {
namespace {

constexpr int kRounds = pktpath::testing::scaled<int>(1500, 150);

class TapStress : public CaptureFixture {};

TEST_F(TapStress, AttachDetachWhileTwoThreadsReceive) {
  NetDevice* d = make("foo", "dummy");
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  uint64_t received[2] = {0, 0}, other_drops[2] = {0, 0};
  auto receiver = [&](int idx) {
    Cpu c(pool);
    c.bind();
    RcuReader reader;
    ready.fetch_add(1);
    uint32_t i = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int k = 0; k < 32; ++k, ++i) {
        Packet* p = c.alloc();
        if (!p) break;
        uint8_t* h = p->put(60);
        std::memset(h, 0, 60);
        h[12] = 0x08;
        h[14] = 0x45;
        h[23] = 17;
        h[30] = 192;
        h[31] = 168;
        h[32] = static_cast<uint8_t>(i & 3);  // a quarter in 192.168.2.0/24
        p->protocol = htons(0x0800);
        p->dev = d;
        if (netif_receive_skb(c, p) == NET_RX_SUCCESS) ++received[idx];
      }
      rcu_quiescent();  // between bursts: no tap pointer held
      c.run_pending();
    }
    c.run_pending();
    for (unsigned k = 0; k < kDropReasonCount; ++k) other_drops[idx] += c.stats().drops[k].get();
  };
  // One long-lived tap beside the ones that come and go: it must see every packet.
  std::shared_ptr<Tap> keep = attach(d, tap_spec("udp"));
  std::thread t0(receiver, 0), t1(receiver, 1);
  while (ready.load() < 2) std::this_thread::yield();

  std::string err;
  uint64_t seen_total = 0;
  for (int r = 0; r < kRounds; ++r) {
    auto a = attach(d, tap_spec("net 192.168.2.0/24", kTapDefaultSnaplen, r % 3 == 0 ? 5 : 0));
    auto b = attach(d, tap_spec(r % 2 ? "" : "ip"));
    if (r % 100 == 50) {
      ASSERT_TRUE(net_set_bpf_engine(net, r % 200 == 50 ? bpf::Engine::Threaded : bpf::Engine::Switch, &err)) << err;
    }
    TapCounts ca = tap_detach(a);
    TapCounts cb = tap_detach(b);
    // Final counts are consistent: what passed is captured or dropped, never more.
    EXPECT_EQ(ca.received_by_filter, ca.captured + ca.dropped);
    EXPECT_LE(ca.received_by_filter, ca.seen);
    if (r % 3 == 0) {
      EXPECT_LE(ca.captured, 5u);
    }
    EXPECT_EQ(cb.captured, cb.seen);
    // Detached means unpublished and waited for: no more counting afterwards.
    EXPECT_EQ(a->counts().seen, ca.seen);
    seen_total += cb.seen;
  }
  stop.store(true);
  t0.join();
  t1.join();
  TapCounts ck = tap_detach(keep);
  EXPECT_EQ(ck.captured, ck.seen);
  EXPECT_EQ(ck.seen, received[0] + received[1]);  // the long-lived tap saw every packet
  EXPECT_GT(seen_total, 0u);
  EXPECT_EQ(other_drops[0] + other_drops[1], 0u);
  EXPECT_EQ(delivered(), received[0] + received[1]);
  EXPECT_EQ(d->taps(), nullptr);
  ASSERT_TRUE(net_set_bpf_engine(net, bpf::default_engine(), &err)) << err;
}

}  // namespace
}  // namespace pktpath::testing
