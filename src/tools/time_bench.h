// time_bench: a microbenchmark harness in the style of prototype-kernel's time_bench.
// A case runs its body `loops` times per run; each run is timed with the TSC and the
// monotonic clock; the report is the median run's cost per op, plus min and max.
#pragma once

#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pktpath {

struct TimeBenchResult {
  std::string name;
  double ns_per_op = 0;      // median run
  double cycles_per_op = 0;  // median run, TSC cycles
  double min_ns = 0;
  double max_ns = 0;
  int runs = 0;
  uint64_t loops = 0;  // ops per run
};

// TSC ticks per nanosecond, measured once against the monotonic clock (~20 ms).
double tsc_per_ns();

inline uint64_t tsc_begin() {
  _mm_lfence();
  return __rdtsc();
}
inline uint64_t tsc_end() {
  unsigned aux;
  uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}

// Runs body(loops) `runs` times. body must perform exactly `loops` operations.
template <class Body>
TimeBenchResult time_bench(std::string name, uint64_t loops, int runs, Body&& body) {
  std::vector<double> ns(runs), cyc(runs);
  body(loops / 16 + 1);  // warm caches and branch predictors
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t c0 = tsc_begin();
    body(loops);
    uint64_t c1 = tsc_end();
    auto t1 = std::chrono::steady_clock::now();
    ns[r] = std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(loops);
    cyc[r] = static_cast<double>(c1 - c0) / static_cast<double>(loops);
  }
  TimeBenchResult res;
  res.name = std::move(name);
  res.runs = runs;
  res.loops = loops;
  std::vector<double> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  res.min_ns = sorted.front();
  res.max_ns = sorted.back();
  res.ns_per_op = sorted[runs / 2];
  std::sort(cyc.begin(), cyc.end());
  res.cycles_per_op = cyc[runs / 2];
  return res;
}

}  // namespace pktpath
