// fq_codel's options (TCA_FQ_CODEL_*) and extra statistics (struct tc_fq_codel_xstats).
#pragma once

#include <cstdint>
#include <optional>

#include "sched/qdisc_options.h"

namespace pktpath {

// Times in microseconds, as on the wire. Unset fields keep the qdisc's value (its
// default at init). A dump has every field set except ce_threshold when disabled.
struct FqCodelOptions : KindOptionsBase {
  std::optional<uint32_t> limit, flows, quantum, target_us, interval_us, ce_threshold_us;
  std::optional<uint32_t> memory_limit, drop_batch;
  std::optional<bool> ecn;
};

struct FqCodelXstats : KindOptionsBase {
  uint32_t maxpacket = 0, drop_overlimit = 0, ecn_mark = 0, new_flow_count = 0;
  uint32_t new_flows_len = 0, old_flows_len = 0, ce_mark = 0, memory_usage = 0, drop_overmemory = 0;
};

}  // namespace pktpath
