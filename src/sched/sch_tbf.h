// tbf's options (struct tc_tbf_qopt with TCA_TBF_RATE64/BURST).
#pragma once

#include <cstdint>

#include "sched/qdisc_options.h"

namespace pktpath {

// Rate in bytes/s, bucket size (burst) in bytes, and either a byte limit or a latency
// from which the limit is derived (tc computes limit = rate * latency + burst). A dump
// has the limit set.
struct TbfOptions : KindOptionsBase {
  uint64_t rate_bytes_ps = 0;
  uint32_t burst = 0;
  uint32_t limit = 0;
  uint64_t latency_ns = 0;
  bool limit_set = false;
  bool latency_set = false;
};

}  // namespace pktpath
