// pfifo / bfifo's options (struct tc_fifo_qopt).
#pragma once

#include <cstdint>

#include "sched/qdisc_options.h"

namespace pktpath {

// limit in packets (pfifo) or bytes (bfifo). Unset: the device's tx_queue_len (times the
// MTU for bfifo), as fifo_init does.
struct FifoOptions : KindOptionsBase {
  uint32_t limit = 0;
  bool limit_set = false;
};

}  // namespace pktpath
