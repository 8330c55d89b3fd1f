// Reference figures, benchmark only: DPDK's rte_mempool (per-lcore cache) and
// rte_pktmbuf_alloc/free beside pktpath's Cpu cache, in one process and one run.
// Built only when Debian's libdpdk-dev is installed (scripts/install-bench-deps).
//   build/bench/dpdk/bench_dpdk_mempool
#include <benchmark/benchmark.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdio>
#include <cstdlib>

#include "core/cpu.h"
#include "core/packet_pool.h"

namespace {

rte_mempool* g_pool = nullptr;
rte_mempool* g_mbuf_pool = nullptr;

void BM_RteMempoolGetPut(benchmark::State& state) {
  void* obj;
  for (auto _ : state) {
    if (rte_mempool_get(g_pool, &obj) != 0) std::abort();
    benchmark::DoNotOptimize(obj);
    rte_mempool_put(g_pool, obj);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RteMempoolGetPut);

void BM_RteMempoolGetPutBulk32(benchmark::State& state) {
  void* objs[32];
  for (auto _ : state) {
    if (rte_mempool_get_bulk(g_pool, objs, 32) != 0) std::abort();
    benchmark::DoNotOptimize(objs[0]);
    rte_mempool_put_bulk(g_pool, objs, 32);
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_RteMempoolGetPutBulk32);

void BM_RtePktmbufAllocFree(benchmark::State& state) {
  for (auto _ : state) {
    rte_mbuf* m = rte_pktmbuf_alloc(g_mbuf_pool);
    benchmark::DoNotOptimize(m);
    rte_pktmbuf_free(m);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RtePktmbufAllocFree);

void BM_PktpathAllocFree(benchmark::State& state) {
  pktpath::PacketPool pool(pktpath::PacketPool::Options{.capacity = 4096});
  pktpath::Cpu cpu(pool);
  for (auto _ : state) {
    pktpath::Packet* p = cpu.alloc();
    benchmark::DoNotOptimize(p);
    cpu.free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PktpathAllocFree);

void BM_PktpathCacheGetPutBulk32(benchmark::State& state) {
  pktpath::PacketPool pool(pktpath::PacketPool::Options{.capacity = 4096});
  pktpath::Cpu cpu(pool);
  pktpath::Packet* ps[32];
  for (auto _ : state) {
    cpu.cache_get_bulk(ps, 32);
    benchmark::DoNotOptimize(ps[0]);
    cpu.cache_put_bulk(ps, 32);
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_PktpathCacheGetPutBulk32);

}  // namespace

int main(int argc, char** argv) {
  char arg0[] = "bench", a1[] = "--no-huge", a2[] = "--no-pci", a3[] = "-l", a4[] = "0",
       a5[] = "-m", a6[] = "256", a7[] = "--log-level=1", a8[] = "--no-shconf";
  char* eal_argv[] = {arg0, a1, a2, a3, a4, a5, a6, a7, a8};
  if (rte_eal_init(9, eal_argv) < 0) {
    std::fprintf(stderr, "bench_dpdk_mempool: rte_eal_init failed\n");
    return 1;
  }
  g_pool = rte_mempool_create("pp_ref", 8191, 2048, 256, 0, nullptr, nullptr, nullptr, nullptr,
                              SOCKET_ID_ANY, 0);
  g_mbuf_pool = rte_pktmbuf_pool_create("pp_mbuf", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                        SOCKET_ID_ANY);
  if (!g_pool || !g_mbuf_pool) {
    std::fprintf(stderr, "bench_dpdk_mempool: pool create failed\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rte_eal_cleanup();
  return 0;
}
