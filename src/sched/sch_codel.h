// codel's options (TCA_CODEL_*) and extra statistics (struct tc_codel_xstats).
#pragma once

#include <cstdint>
#include <optional>

#include "sched/qdisc_options.h"

namespace pktpath {

// Times in microseconds, as on the wire; unset fields keep the qdisc's value. A dump has
// every field set except ce_threshold when disabled.
struct CodelOptions : KindOptionsBase {
  std::optional<uint32_t> limit, target_us, interval_us, ce_threshold_us;
  std::optional<bool> ecn;
};

struct CodelXstats : KindOptionsBase {
  uint32_t maxpacket = 0, count = 0, lastcount = 0, ldelay_us = 0;
  int32_t drop_next_us = 0;
  uint32_t drop_overlimit = 0, ecn_mark = 0, ce_mark = 0;
  bool dropping = false;
};

}  // namespace pktpath
