// The cases of `pktpath bench micro`: packet memory and the lock variants behind
// document 002, each timed with time_bench.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/time_bench.h"

namespace pktpath {

struct MicroBenchOptions {
  uint64_t loops = 2'000'000;  // ops per run for the cheapest cases; others scale down
  int runs = 7;
  std::string filter;  // run only cases whose name contains this
};

std::vector<TimeBenchResult> run_micro_benchmarks(const MicroBenchOptions& opts);

}  // namespace pktpath
