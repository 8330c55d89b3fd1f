// ns/packet of dev_queue_xmit -> dummy (fresh packet per send, as pktgen's queue_xmit
// mode with clone_skb 0): noqueue; pfifo_fast with and without the bypass (document
// 001's A/B); mq of pfifo_fast. And 2 threads: mq with 2 tx queues (a queue each,
// uncontended) vs a single-queue pfifo_fast device (contended), bypass on and off.
//
//   build/bench/bench_xmit --benchmark_repetitions=1
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "core/cpu.h"
#include "core/net.h"
#include "core/dev_table.h"
#include "core/dev_xmit.h"
#include "core/packet_pool.h"
#include "sched/sch_api.h"

namespace pktpath {
namespace {

struct Env {
  PacketPool pool{PacketPool::Options{.capacity = 1u << 16, .buf_size = 512, .headroom = 128}};
  Cpu control{pool};
  Net net{control};
  DeviceTable& table = net.devices();
  NetDevice* noqueue = nullptr;  // dummy, default noqueue
  NetDevice* pfifo = nullptr;    // dummy, root pfifo_fast, 1 tx queue
  NetDevice* mq = nullptr;       // dummy, 2 tx queues, root mq of pfifo_fast
  // One Cpu per benchmark thread index, alive for the whole program: a thread may free
  // packets another thread's Cpu allocated (they go back through its defer list).
  std::unique_ptr<Cpu> cpus[2];

  NetDevice* dev(const char* name, uint16_t queues, const char* root) {
    NetDevice::Config cfg;
    cfg.name = name;
    cfg.num_tx_queues = queues;
    NetDevice* d = table.add(cfg, "dummy").value_or(nullptr);
    (void)table.set_up(*d, true);
    if (root) {
      QdiscRequest r;
      r.op = QdiscOp::Replace;
      r.kind = root;
      if (!tc_qdisc_modify(table, *d, r)) std::abort();
    }
    return d;
  }
  Env() {
    control.bind();
    noqueue = dev("nq0", 1, nullptr);
    pfifo = dev("pf0", 1, "pfifo_fast");
    mq = dev("mq0", 2, "mq");
    for (auto& c : cpus) c = std::make_unique<Cpu>(pool);
  }
};

Env* g_env;

// Each benchmark thread binds its own Cpu, as each datapath thread has its own.
PP_NOINLINE void run_xmit(benchmark::State& state, NetDevice* dev, bool bypass) {
  Cpu& cpu = *g_env->cpus[state.thread_index()];
  cpu.bind();
  if (state.thread_index() == 0) dev->net().xmit_config().bypass.store(bypass);
  // Steer each thread to its own tx queue on mq (flow hash -> queue index).
  const uint32_t hash = state.thread_index() ? 0xC0000000u : 0x10000000u;
  uint64_t n = 0;
  for (auto _ : state) {
    Packet* p = cpu.alloc();
    p->len = 60;
    p->tail_off += 60;
    p->dev = dev;
    p->hash = hash;
    dev_queue_xmit(cpu, p);
    ++n;
  }
  while (cpu.has_pending()) cpu.run_pending();
  state.SetItemsProcessed(static_cast<int64_t>(n));
}

void BM_Xmit_Noqueue(benchmark::State& s) { run_xmit(s, g_env->noqueue, true); }
void BM_Xmit_PfifoFast_Bypass(benchmark::State& s) { run_xmit(s, g_env->pfifo, true); }
void BM_Xmit_PfifoFast_NoBypass(benchmark::State& s) { run_xmit(s, g_env->pfifo, false); }
void BM_Xmit_MqPfifoFast_Bypass(benchmark::State& s) { run_xmit(s, g_env->mq, true); }
void BM_Xmit_MqPfifoFast_NoBypass(benchmark::State& s) { run_xmit(s, g_env->mq, false); }

BENCHMARK(BM_Xmit_Noqueue);
BENCHMARK(BM_Xmit_PfifoFast_Bypass);
BENCHMARK(BM_Xmit_PfifoFast_NoBypass);
BENCHMARK(BM_Xmit_MqPfifoFast_Bypass);
BENCHMARK(BM_Xmit_MqPfifoFast_NoBypass);
// Document 001's two tables: a 2-queue device under mq (uncontended) and a single-queue
// device (contended), 2 threads, bypass on and off. items_per_second is the total.
BENCHMARK(BM_Xmit_MqPfifoFast_Bypass)->Threads(2)->UseRealTime();
BENCHMARK(BM_Xmit_MqPfifoFast_NoBypass)->Threads(2)->UseRealTime();
BENCHMARK(BM_Xmit_PfifoFast_Bypass)->Threads(2)->UseRealTime();
BENCHMARK(BM_Xmit_PfifoFast_NoBypass)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace pktpath

int main(int argc, char** argv) {
  pktpath::Env env;
  pktpath::g_env = &env;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  env.control.run_pending();
  return 0;
}
