// htb's options (struct tc_htb_glob with TCA_HTB_DIRECT_QLEN), its class options
// (struct tc_htb_opt with TCA_HTB_RATE64/CEIL64) and a class's xstats (tc_htb_xstats).
#pragma once

#include <cstdint>

#include "sched/qdisc_options.h"

namespace pktpath {

inline constexpr int kHtbMaxDepth = 8;  // TC_HTB_MAXDEPTH
inline constexpr int kHtbNumPrio = 8;   // TC_HTB_NUMPRIO

struct HtbOptions : KindOptionsBase {
  uint32_t defcls = 0;         // minor of the default class; 0: none (direct queue)
  uint32_t rate2quantum = 10;  // r2q
  uint32_t direct_qlen = 0;    // 0 with !direct_qlen_set: the device's txqueuelen
  bool direct_qlen_set = false;
  uint32_t direct_pkts = 0;    // in a dump: direct_packets_stat
};

// Rates in bytes/s; buffer and cbuffer are psched ticks (64 ns) as tc sends them
// (tc_calc_xmittime of the burst at the rate).
struct HtbClassOptions : KindOptionsBase {
  uint64_t rate_bytes_ps = 0;
  uint64_t ceil_bytes_ps = 0;
  uint32_t buffer = 0;
  uint32_t cbuffer = 0;
  uint32_t quantum = 0;  // 0: rate / r2q, clamped to 1000..200000
  uint32_t prio = 0;
  uint32_t level = 0;    // in a dump
};

struct HtbClassXstats : KindOptionsBase {
  uint32_t lends = 0, borrows = 0, giants = 0;
  int32_t tokens = 0, ctokens = 0;  // psched ticks
};

}  // namespace pktpath
