// What the egress hooks cost (document 000): dev_queue_xmit -> dummy (noqueue), a fresh
// 60-byte packet per send as pktgen's queue_xmit mode, one thread.
//   (a) HookPoint/empty   dev_queue_xmit, hook point compiled in, nothing attached
//   (b) NoHookPoint       dev_queue_xmit_nohook: the same path without the hook point
//   (c) NftAcceptAll      an nft netdev egress chain with one `accept` rule
//   (d) ClsactBpfDa       clsact + `bpf da bytecode '1,6 0 0 0,'` (document 000's path),
//                         on the JIT and on threaded code; and with the nft chain too
//   HookPointAB           (a) and (b) alternated in blocks of 256 packets inside one
//                         benchmark, so drift and noise hit both alike; reports both and
//                         the ratio (the figure for the < 1% rule)
//
//   build/bench_hooks --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "core/bpf_engine.h"
#include "bpf/parse.h"
#include "core/net.h"
#include "core/cpu.h"
#include "core/dev_table.h"
#include "core/dev_xmit.h"
#include "core/packet_pool.h"
#include "netfilter/nft_command.h"
#include "sched/clsact.h"
#include "sched/nf_dev_resolver.h"

namespace pktpath {
namespace {

struct Env {
  PacketPool pool{PacketPool::Options{.capacity = 1u << 14, .buf_size = 512, .headroom = 128}};
  Cpu cpu{pool};
  Net net{cpu};
  DeviceTable& table = net.devices();
  tc::DevTableNftResolver resolver{table};
  nf::NftRuleset ruleset;
  NetDevice* plain = nullptr;
  NetDevice* nft = nullptr;
  NetDevice* cls_jit = nullptr;
  NetDevice* cls_thr = nullptr;
  NetDevice* cls_nft = nullptr;

  NetDevice* dev(const char* name) {
    NetDevice::Config cfg;
    cfg.name = name;
    NetDevice* d = table.add(cfg, "dummy").value_or(nullptr);
    if (!d || !table.set_up(*d, true)) std::abort();
    return d;
  }
  void nft_cmd(std::vector<std::string> w) {
    std::ostringstream o, e;
    if (nf::nft_command(w, ruleset, resolver, o, e) != 0) {
      std::fprintf(stderr, "%s", e.str().c_str());
      std::abort();
    }
  }
  void nft_accept_all(const std::string& devname) {
    nft_cmd({"add", "chain", "netdev", "t", devname, "{ type filter hook egress device " + devname + " priority 0; }"});
    nft_cmd({"add", "rule", "netdev", "t", devname, "accept"});
  }
  void clsact_da(NetDevice* d, bpf::Engine e) {
    std::string err;
    if (!net_set_bpf_engine(net, e, &err) || !tc::clsact_add(*d)) std::abort();
    tc::BpfFilterSpec s;
    if (!bpf::parse_bytecode("1,6 0 0 0,", &s.insns, &err)) std::abort();
    s.da = true;
    if (!tc::filter_add(*d, tc::Dir::Egress, s, false)) std::abort();
  }
  Env() {
    cpu.bind();
    plain = dev("plain");
    nft = dev("nft");
    cls_jit = dev("clsjit");
    cls_thr = dev("clsthr");
    cls_nft = dev("clsnft");
    nft_cmd({"add", "table", "netdev", "t"});
    nft_accept_all("nft");
    nft_accept_all("clsnft");
    clsact_da(cls_thr, bpf::Engine::Threaded);
    clsact_da(cls_jit, bpf::Engine::Jit);
    clsact_da(cls_nft, bpf::Engine::Jit);
  }
  ~Env() { ruleset.flush(); }
};

Env* g_env;

template <int (*Xmit)(Cpu&, Packet*)>
PP_ALWAYS_INLINE void send_one(Cpu& cpu, NetDevice* d) {
  Packet* p = cpu.alloc();
  p->put(60);
  p->dev = d;
  Xmit(cpu, p);
}

template <int (*Xmit)(Cpu&, Packet*)>
void run(benchmark::State& state, NetDevice* d) {
  Cpu& cpu = g_env->cpu;
  for (auto _ : state) send_one<Xmit>(cpu, d);
  state.SetItemsProcessed(state.iterations());
  if (d->stats_sum().tx_packets == 0) state.SkipWithError("nothing transmitted");
}

void HookPoint_empty(benchmark::State& s) { run<dev_queue_xmit>(s, g_env->plain); }
void NoHookPoint(benchmark::State& s) { run<dev_queue_xmit_nohook>(s, g_env->plain); }
void NftAcceptAll(benchmark::State& s) { run<dev_queue_xmit>(s, g_env->nft); }
void ClsactBpfDa_jit(benchmark::State& s) { run<dev_queue_xmit>(s, g_env->cls_jit); }
void ClsactBpfDa_threaded(benchmark::State& s) { run<dev_queue_xmit>(s, g_env->cls_thr); }
void ClsactBpfDa_jit_plus_nft(benchmark::State& s) { run<dev_queue_xmit>(s, g_env->cls_nft); }

// (a) vs (b) interleaved: blocks of 256 sends each way, each block timed; the per-packet
// cost of each side is the sum of its blocks' times over its packets.
void HookPointAB(benchmark::State& state) {
  Cpu& cpu = g_env->cpu;
  NetDevice* d = g_env->plain;
  using clk = std::chrono::steady_clock;
  constexpr int kBlock = 256;
  double ns_a = 0, ns_b = 0;
  uint64_t n = 0;
  for (auto _ : state) {
    auto t0 = clk::now();
    for (int i = 0; i < kBlock; ++i) send_one<dev_queue_xmit>(cpu, d);
    auto t1 = clk::now();
    for (int i = 0; i < kBlock; ++i) send_one<dev_queue_xmit_nohook>(cpu, d);
    auto t2 = clk::now();
    ns_a += std::chrono::duration<double, std::nano>(t1 - t0).count();
    ns_b += std::chrono::duration<double, std::nano>(t2 - t1).count();
    n += kBlock;
  }
  state.SetItemsProcessed(static_cast<int64_t>(n * 2));
  state.counters["ns_hookpoint"] = ns_a / static_cast<double>(n);
  state.counters["ns_nohookpoint"] = ns_b / static_cast<double>(n);
  state.counters["ratio_a_over_b"] = ns_a / ns_b;
}

BENCHMARK(HookPoint_empty);
BENCHMARK(NoHookPoint);
BENCHMARK(NftAcceptAll);
BENCHMARK(ClsactBpfDa_jit);
BENCHMARK(ClsactBpfDa_threaded);
BENCHMARK(ClsactBpfDa_jit_plus_nft);
BENCHMARK(HookPointAB);

}  // namespace
}  // namespace pktpath

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  pktpath::Env env;
  pktpath::g_env = &env;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
