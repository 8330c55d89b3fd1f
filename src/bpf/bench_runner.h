// Timing an engine over a set of packets: what `pktpath bpf bench` and the benchmark
// programs report. A run processes `packets` packets cycling through the views; the
// figures are per packet, min/median/max over runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bpf/program.h"

namespace pktpath::bpf {

struct BenchResult {
  std::string engine;
  uint64_t packets = 0;        // per run
  int runs = 0;
  double ns_per_packet = 0;    // median run
  double min_ns = 0, max_ns = 0;
  double mpps = 0;             // from the median
  uint64_t accepted = 0;       // packets with a non-zero result in one pass over the views
};

// Times prog (any engine) or, with prog == nullptr, libpcap's bpf_filter on `insns`.
BenchResult bench_engine(const Program* prog, const Insns& insns, const std::vector<PacketView>& views,
                         uint64_t packets, int runs);

}  // namespace pktpath::bpf
