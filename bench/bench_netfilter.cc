// Cost per packet of the netfilter egress hook point (document 000's question):
//   (a) the hook point with nothing attached, against the same loop without a hook point;
//   (b) an accept-all nft egress chain (policy accept, no rules; and one `accept` rule);
//   (c) a chain with 3 non-matching rules then `accept`;
// plus a bare C++ hook returning ACCEPT, a counter rule, and the QSBR quiescent-state call
// a datapath loop makes once per burst.
//
//   build/bench/bench_netfilter --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/packet_pool.h"
#include "netfilter/nf_hooks.h"
#include "core/rcu.h"
#include "netfilter/nft_command.h"

namespace pktpath::nf {
namespace {

// A 60-byte UDP/IPv4 frame 10.0.0.1:1000 -> 10.0.0.2:2000, mark 0.
Packet* make_udp(Cpu& cpu) {
  static const uint8_t frame[] = {
      0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x08, 0x00,
      0x45, 0x00, 0x00, 0x2e, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00,
      10, 0, 0, 1, 10, 0, 0, 2,
      0x03, 0xe8, 0x07, 0xd0, 0x00, 0x1a, 0x00, 0x00,
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  Packet* p = cpu.alloc();
  p->append(frame, sizeof frame);
  p->protocol = 0x0008;  // htons(ETH_P_IP)
  return p;
}

class OneDevice : public NftDeviceResolver {
 public:
  NfDeviceHooks hooks;
  NfDeviceHooks* find_device(std::string_view name) override { return name == "foo" ? &hooks : nullptr; }
};

struct Fixture {
  PacketPool pool{PacketPool::Options{.capacity = 1024}};
  Cpu cpu{pool};
  OneDevice dev;
  NftRuleset rs;
  Packet* p = make_udp(cpu);

  explicit Fixture(const std::vector<std::vector<std::string>>& lines) {
    for (const auto& l : lines) {
      std::ostringstream o, e;
      if (nft_command(l, rs, dev, o, e) != 0) throw std::runtime_error(e.str());
    }
  }
  ~Fixture() {
    rs.flush();
    cpu.free(p);
    cpu.drain_cache();
  }
  // The egress hook point as the transmit path calls it.
  void loop(benchmark::State& st) {
    for (auto _ : st) {
      benchmark::DoNotOptimize(p);
      NfVerdict v = nf_hook_egress(dev.hooks, p, cpu);
      if (PP_UNLIKELY(v != NfVerdict::ACCEPT)) st.SkipWithError("packet not accepted");
      benchmark::DoNotOptimize(v);
    }
    st.SetItemsProcessed(st.iterations());
  }
};

const std::vector<std::string> kTable = {"nft", "add", "table", "netdev", "t"};
const std::vector<std::string> kChain = {"nft", "add", "chain", "netdev", "t", "c",
                                         "{ type filter hook egress device foo priority 0; policy accept; }"};

// Baseline: the same loop with no hook point at all.
void BM_no_hook_point(benchmark::State& st) {
  Fixture f({});
  for (auto _ : st) {
    benchmark::DoNotOptimize(f.p);
    NfVerdict v = NfVerdict::ACCEPT;
    benchmark::DoNotOptimize(v);
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_no_hook_point);

// (a) nothing attached: one load and one predicted branch.
void BM_hook_nothing_attached(benchmark::State& st) {
  Fixture f({});
  f.loop(st);
}
BENCHMARK(BM_hook_nothing_attached);

// A C++ hook returning ACCEPT: nf_hook_slow plus one indirect call.
NfVerdict accept_fn(void*, Packet*, const NfHookState&) { return NfVerdict::ACCEPT; }
void BM_hook_cpp_accept(benchmark::State& st) {
  Fixture f({});
  NfHookOps ops{accept_fn, nullptr, 0, NfHookNum::EGRESS};
  if (Status s = nf_register_hook(f.dev.hooks, &ops); !s) {
    st.SkipWithError(s.error().msg.c_str());
    return;
  }
  f.loop(st);
  (void)nf_unregister_hook(f.dev.hooks, &ops);
}
BENCHMARK(BM_hook_cpp_accept);

// (b) accept-all nft chain: policy accept, no rules.
void BM_nft_accept_all_policy(benchmark::State& st) {
  Fixture f({kTable, kChain});
  f.loop(st);
}
BENCHMARK(BM_nft_accept_all_policy);

// (b') accept-all nft chain: one `accept` rule.
void BM_nft_accept_all_rule(benchmark::State& st) {
  Fixture f({kTable, kChain, {"nft", "add", "rule", "netdev", "t", "c", "accept"}});
  f.loop(st);
}
BENCHMARK(BM_nft_accept_all_rule);

// `counter accept`: the per-Cpu counter slot on the way.
void BM_nft_counter_accept(benchmark::State& st) {
  Fixture f({kTable, kChain, {"nft", "add", "rule", "netdev", "t", "c", "counter", "accept"}});
  f.loop(st);
}
BENCHMARK(BM_nft_counter_accept);

// (c) 3 non-matching rules (meta, IPv4 prefix, UDP port: the headers get parsed), then accept.
void BM_nft_3_nonmatching_then_accept(benchmark::State& st) {
  Fixture f({kTable, kChain,
             {"nft", "add", "rule", "netdev", "t", "c", "meta", "mark", "7", "drop"},
             {"nft", "add", "rule", "netdev", "t", "c", "ip", "saddr", "192.168.0.0/16", "drop"},
             {"nft", "add", "rule", "netdev", "t", "c", "udp", "dport", "53", "drop"},
             {"nft", "add", "rule", "netdev", "t", "c", "accept"}});
  f.loop(st);
}
BENCHMARK(BM_nft_3_nonmatching_then_accept);

// The datapath's per-burst RCU duty.
void BM_rcu_quiescent(benchmark::State& st) {
  RcuReader reader;
  for (auto _ : st) rcu_quiescent();
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_rcu_quiescent);

}  // namespace
}  // namespace pktpath::nf

BENCHMARK_MAIN();
