#include "tools/micro_bench.h"

#include <atomic>
#include <cstdlib>
#include <functional>

#include "core/cpu.h"
#include "core/packet_pool.h"
#include "core/spinlock.h"

namespace pktpath {

namespace {

// Keeps the compiler from deleting or merging loop bodies.
inline void clobber() { asm volatile("" : : : "memory"); }

struct Case {
  const char* name;
  uint64_t loop_div;  // loops = opts.loops / loop_div
  std::function<void(uint64_t)> body;
};

}  // namespace

std::vector<TimeBenchResult> run_micro_benchmarks(const MicroBenchOptions& opts) {
  PacketPool pool(PacketPool::Options{.capacity = 8192});
  Cpu owner(pool);   // allocates: the packets' alloc_cpu
  Cpu remote(pool);  // frees someone else's packets: goes through the defer list
  owner.bind();
  SpinLock lock;
  std::atomic<Packet*> list_head{nullptr};
  Packet* burst[64];

  auto bulk = [&](unsigned n) {
    return [&, n](uint64_t loops) {
      for (uint64_t i = 0; i < loops; i += n) {
        owner.alloc_bulk(burst, n);
        clobber();
        owner.free_bulk(burst, n);
      }
    };
  };

  std::vector<Case> cases = {
      {"for_loop", 1, [](uint64_t loops) {
         for (uint64_t i = 0; i < loops; ++i) clobber();
       }},
      {"pkt_alloc_free", 1, [&](uint64_t loops) {
         for (uint64_t i = 0; i < loops; ++i) {
           Packet* p = owner.alloc();
           clobber();
           owner.free(p);
         }
       }},
      {"pkt_alloc_free_bulk16", 1, bulk(16)},
      // kmem_cache_alloc_bulk/free_bulk on the Cpu cache: raw slots, no reset.
      {"cache_get_put_bulk32", 1, [&](uint64_t loops) {
         for (uint64_t i = 0; i < loops; i += 32) {
           owner.cache_get_bulk(burst, 32);
           clobber();
           owner.cache_put_bulk(burst, 32);
         }
       }},
      {"pkt_alloc_free_bulk32", 1, bulk(32)},
      {"pkt_alloc_free_bulk64", 1, bulk(64)},
      // A packet allocated on `owner`, freed on `remote` (onto owner's defer list under
      // its lock), then flushed by owner in batches of 32: the per-packet cost of the
      // whole skb_attempt_defer_free + skb_defer_free_flush round trip, one thread.
      {"pkt_remote_free_defer", 1, [&](uint64_t loops) {
         for (uint64_t i = 0; i < loops; i += 32) {
           owner.alloc_bulk(burst, 32);
           remote.free_bulk(burst, 32);
           owner.defer_free_flush();
         }
       }},
      {"defer_flush_empty", 1, [&](uint64_t loops) {
         for (uint64_t i = 0; i < loops; ++i) {
           owner.defer_free_flush();
           clobber();
         }
       }},
      // The lock rows of document 002: spin_lock_irq vs spin_lock_irqsave. The irq
      // variant's cli/sti cannot run in ring 3, so it is the plain lock here; the
      // irqsave variant adds the pushf/popf flags save and restore.
      {"spin_lock_unlock", 1, [&](uint64_t loops) {
         for (uint64_t i = 0; i < loops; ++i) {
           lock.lock();
           clobber();
           lock.unlock();
         }
       }},
      {"spin_lock_unlock_irqsave", 1, [&](uint64_t loops) {
         for (uint64_t i = 0; i < loops; ++i) {
           uint64_t f = save_flags();
           lock.lock();
           clobber();
           lock.unlock();
           restore_flags(f);
         }
       }},
      // The lock-free alternative: take the whole list with one atomic exchange.
      {"xchg_list_head", 1, [&](uint64_t loops) {
         for (uint64_t i = 0; i < loops; ++i) {
           Packet* p = list_head.exchange(nullptr, std::memory_order_acq_rel);
           clobber();
           if (p) std::abort();
         }
       }},
      {"malloc_free_2k", 4, [](uint64_t loops) {
         for (uint64_t i = 0; i < loops; ++i) {
           void* p = std::malloc(2048);
           asm volatile("" : : "r"(p) : "memory");  // keep the pair from being elided
           std::free(p);
         }
       }},
  };

  std::vector<TimeBenchResult> out;
  for (Case& c : cases) {
    if (!opts.filter.empty() && std::string(c.name).find(opts.filter) == std::string::npos)
      continue;
    uint64_t loops = opts.loops / c.loop_div;
    loops = loops < 64 ? 64 : loops / 64 * 64;  // whole bursts
    out.push_back(time_bench(c.name, loops, opts.runs, c.body));
  }
  owner.drain_cache();
  remote.drain_cache();
  return out;
}

}  // namespace pktpath
