// Running a parsed `pktgen` line: repeats, the A/B rounds, progress on a terminal,
// Ctrl-C, and the report (pktgen's Result lines or JSON).
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/dev_table.h"
#include "core/packet_pool.h"
#include "tools/ab_schedule.h"
#include "tools/pktgen.h"
#include "tools/pktgen_args.h"

namespace pktpath {

// `--ab NAME=A|B` names a sysctl (core/sysctl.h: net.pktpath.qdisc_bypass, ..., or a
// short alias: bypass, defer_free, egress_hooks, nf_hook_point, bpf_engine) and flips it
// in the Net of the pktgen device between runs: a warm-up run of A (not counted), then
// `--repeat` rounds of one A and one B, AB and BA in turn (tools/ab_schedule.h).
struct PktgenSessionResult {
  std::vector<PktgenResult> runs;      // in the order they ran; with --ab the counted ones
  std::vector<std::string> run_labels;  // "A"/"B" with --ab, else empty
  AbAnalysis ab;                        // with --ab: what the counted runs say
};

// Runs the command on `dev` (already looked up by the caller). Writes the report to
// `out` (text, or one JSON document with cmd.json). Returns 0, or 1 with *err set.
int run_pktgen(const PktgenCommand& cmd, NetDevice& dev, PacketPool& pool, std::FILE* out,
               std::string* err, PktgenSessionResult* result = nullptr);

double median(std::vector<double> v);

}  // namespace pktpath
