// sfq's options (struct tc_sfq_qopt_v1 without the RED part).
#pragma once

#include <cstdint>

#include "sched/qdisc_options.h"

namespace pktpath {

// 0 leaves a field at its default, as tc_sfq_qopt does. perturb in seconds.
struct SfqOptions : KindOptionsBase {
  uint32_t quantum = 0;
  int32_t perturb_period = 0;
  uint32_t limit = 0;
  uint32_t divisor = 0;
  uint32_t flows = 0;
  uint32_t depth = 0;
  bool headdrop = false;
};

}  // namespace pktpath
