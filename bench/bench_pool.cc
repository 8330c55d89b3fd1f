// Packet memory: pktpath's Cpu cache vs glibc malloc, side by side in one run.
//   build/bench/bench_pool --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "core/cpu.h"
#include "core/packet_pool.h"

namespace {

using pktpath::Cpu;
using pktpath::Packet;
using pktpath::PacketPool;

void BM_PacketAllocFree(benchmark::State& state) {
  PacketPool pool(PacketPool::Options{.capacity = 4096});
  Cpu cpu(pool);
  for (auto _ : state) {
    Packet* p = cpu.alloc();
    benchmark::DoNotOptimize(p);
    cpu.free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PacketAllocFree);

void BM_PacketAllocFreeBulk(benchmark::State& state) {
  const unsigned n = static_cast<unsigned>(state.range(0));
  PacketPool pool(PacketPool::Options{.capacity = 4096});
  Cpu cpu(pool);
  Packet* ps[64];
  for (auto _ : state) {
    cpu.alloc_bulk(ps, n);
    benchmark::DoNotOptimize(ps[0]);
    cpu.free_bulk(ps, n);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_PacketAllocFreeBulk)->Arg(16)->Arg(32)->Arg(64);

// kmem_cache_alloc_bulk analogue: raw slots, no reset (what rte_mempool_get_bulk does).
void BM_CacheGetPutBulk(benchmark::State& state) {
  const unsigned n = static_cast<unsigned>(state.range(0));
  PacketPool pool(PacketPool::Options{.capacity = 4096});
  Cpu cpu(pool);
  Packet* ps[64];
  for (auto _ : state) {
    cpu.cache_get_bulk(ps, n);
    benchmark::DoNotOptimize(ps[0]);
    cpu.cache_put_bulk(ps, n);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_CacheGetPutBulk)->Arg(32);

void BM_MallocFree2K(benchmark::State& state) {
  for (auto _ : state) {
    void* p = std::malloc(2048);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MallocFree2K);

void BM_MallocFree2KBulk32(benchmark::State& state) {
  void* ps[32];
  for (auto _ : state) {
    for (auto& p : ps) p = std::malloc(2048);
    benchmark::DoNotOptimize(ps[0]);
    for (auto* p : ps) std::free(p);
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_MallocFree2KBulk32);

}  // namespace

BENCHMARK_MAIN();
