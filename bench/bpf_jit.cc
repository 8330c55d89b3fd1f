// The BPF JIT table without DPDK: `build/bench/bpf_jit [packets] [runs] [distinct]`.
// (bench/dpdk/bench_dpdk_bpf prints the same table with DPDK's rte_bpf columns.)
#include <cstdlib>

#include "bpf_jit_table.h"

int main(int argc, char** argv) {
  uint64_t packets = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  size_t distinct = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4096;
  return pktpath::bench::print_jit_table(packets, runs, distinct, {});
}
