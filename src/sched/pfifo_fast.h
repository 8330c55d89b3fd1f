// pfifo_fast's priority map, shared with tests that compare it to Linux's table.
#pragma once

#include <array>
#include <cstdint>

#include "sched/sch_prio.h"

namespace pktpath {

inline constexpr unsigned kPfifoFastBands = 3;
// prio2band: skb->priority (TC_PRIO_*) -> band, band 0 dequeued first.
inline constexpr std::array<uint8_t, kTcPrioMax + 1> kPrio2Band = {1, 2, 2, 2, 1, 2, 0, 0,
                                                                   1, 1, 1, 1, 1, 1, 1, 1};

}  // namespace pktpath
