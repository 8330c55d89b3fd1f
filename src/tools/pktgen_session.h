// Running a parsed `pktgen` line: repeats, the A/B alternation, progress on a terminal,
// Ctrl-C, and the report (pktgen's Result lines or JSON).
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/dev_table.h"
#include "core/packet_pool.h"
#include "tools/pktgen.h"
#include "tools/pktgen_args.h"

namespace pktpath {

// What an A/B setting may change for one run besides global switches.
struct PktgenKnobs {
  bool defer_free = true;
};

// A named switch `--ab NAME=A|B` can flip between runs: pktgen's own defer_free, or any
// setting a subsystem registered in core (core/settings.h: bypass, bpf_engine,
// egress_hooks, nf_hook_point). apply() returns an error for a value it does not know.
struct AbSetting {
  std::string name;
  std::string values;  // for messages, e.g. "on|off"
  std::function<std::optional<std::string>(const std::string& value, PktgenKnobs& knobs)> apply;
};
std::optional<AbSetting> find_ab_setting(const std::string& name);
std::string ab_setting_names();

struct PktgenSessionResult {
  std::vector<PktgenResult> runs;      // in the order they ran
  std::vector<std::string> run_labels;  // "A"/"B" with --ab, else empty
};

// Runs the command on `dev` (already looked up by the caller). Writes the report to
// `out` (text, or one JSON document with cmd.json). Returns 0, or 1 with *err set.
int run_pktgen(const PktgenCommand& cmd, NetDevice& dev, PacketPool& pool, std::FILE* out,
               std::string* err, PktgenSessionResult* result = nullptr);

double median(std::vector<double> v);

}  // namespace pktpath
