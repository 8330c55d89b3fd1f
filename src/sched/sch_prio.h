// prio's options (struct tc_prio_qopt); pfifo_fast dumps the same structure.
#pragma once

#include <array>
#include <cstdint>

#include "sched/qdisc_options.h"

namespace pktpath {

inline constexpr unsigned kTcPrioMax = 15;  // TC_PRIO_MAX: priomap has 16 entries

// Number of bands (2..16) and the priority -> band map.
struct PrioOptions : KindOptionsBase {
  uint32_t bands = 3;
  std::array<uint8_t, kTcPrioMax + 1> priomap = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
};

}  // namespace pktpath
