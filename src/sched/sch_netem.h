// netem's options (struct tc_netem_qopt and the TCA_NETEM_* attributes) and the
// distribution tables tc loads for `distribution NAME`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/qdisc_options.h"

namespace pktpath {

inline constexpr int32_t kNetemDistScale = 8192;   // NETEM_DIST_SCALE
inline constexpr uint32_t kNetemDistMax = 16384;   // NETEM_DIST_MAX

enum class NetemLossModel : uint8_t {
  Random,   // loss PERCENT (CLG_RANDOM)
  State,    // loss state: the 4-state Markov chain (CLG_4_STATES)
  GeModel,  // loss gemodel: Gilbert-Elliot (CLG_GILB_ELL)
};

// Probabilities and correlations are fractions of UINT32_MAX, as on the wire; times in
// nanoseconds (TCA_NETEM_LATENCY64/JITTER64); rate in bytes/s. A change replaces every
// field; a dump has every field set, seed included.
struct NetemOptions : KindOptionsBase {
  uint32_t limit = 1000;
  int64_t latency_ns = 0;
  int64_t jitter_ns = 0;
  uint32_t loss = 0;  // NetemLossModel::Random
  uint32_t gap = 0;
  uint32_t duplicate = 0;
  uint32_t delay_corr = 0, loss_corr = 0, dup_corr = 0;  // tc_netem_corr
  uint32_t reorder = 0, reorder_corr = 0;                // tc_netem_reorder
  uint32_t corrupt = 0, corrupt_corr = 0;                // tc_netem_corrupt
  uint64_t rate = 0;                                     // tc_netem_rate + RATE64
  int32_t packet_overhead = 0;
  uint32_t cell_size = 0;
  int32_t cell_overhead = 0;
  NetemLossModel loss_model = NetemLossModel::Random;
  uint32_t p13 = 0, p31 = 0, p32 = 0, p23 = 0, p14 = 0;  // tc_netem_gimodel
  uint32_t ge_p = 0, ge_r = 0, ge_h = 0, ge_k1 = 0;      // tc_netem_gemodel (h, not 1-h)
  int64_t slot_min_ns = 0, slot_max_ns = 0;              // tc_netem_slot
  int32_t slot_packets = 0, slot_bytes = 0;              // 0: unlimited
  // TCA_NETEM_DELAY_DIST: the table, and the name tc loaded it by (for printing; the
  // kernel does not keep it). Null: the uniform default.
  std::shared_ptr<const std::vector<int16_t>> delay_dist;
  std::string dist_name;
  // TCA_NETEM_PRNG_SEED; unset: a fixed default, so that runs repeat.
  std::optional<uint64_t> seed;
};

// Counters netem keeps beyond the qdisc's (no kernel xstats): what its models did.
struct NetemXstats : KindOptionsBase {
  uint64_t duplicated = 0;  // copies made and enqueued here
  uint64_t lost = 0;        // loss-model drops
  uint64_t corrupted = 0;
  uint64_t reordered = 0;   // sent at the head (the reorder/gap path)
  uint64_t limit_drops = 0;
};

inline constexpr uint64_t kNetemDefaultSeed = 0x6e6574656dull;  // "netem"

// The table iproute2's netem/<name>.c generates (the .dist file tc reads): "normal",
// "pareto" or "paretonormal", computed with the same formulas; empty for another name.
std::vector<int16_t> netem_dist_table(std::string_view name);

}  // namespace pktpath
