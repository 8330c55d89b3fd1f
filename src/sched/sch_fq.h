// fq's options (TCA_FQ_*) and extra statistics (struct tc_fq_qd_stats).
#pragma once

#include <cstdint>
#include <optional>

#include "sched/qdisc_options.h"

namespace pktpath {

// Units as on the wire: rates in bytes per second (maxrate ~0u: no limit), refill_delay,
// ce_threshold and horizon in microseconds, timer_slack in nanoseconds. Unset fields keep
// the qdisc's value (its default at init); a dump has every field set.
struct FqOptions : KindOptionsBase {
  std::optional<uint32_t> limit, flow_limit, quantum, initial_quantum, maxrate, buckets_log;
  std::optional<uint32_t> refill_delay_us, orphan_mask, low_rate_threshold, ce_threshold_us;
  std::optional<uint32_t> timer_slack_ns, horizon_us;
  std::optional<bool> pacing, horizon_drop;
};

struct FqXstats : KindOptionsBase {
  uint64_t gc_flows = 0, highprio_packets = 0, tcp_retrans = 0, throttled = 0;
  uint64_t flows_plimit = 0, pkts_too_long = 0, allocation_errors = 0;
  int64_t time_next_delayed_flow = 0;  // ns from now until the watchdog; 0 if none
  uint32_t flows = 0, inactive_flows = 0, throttled_flows = 0, unthrottle_latency_ns = 0;
  uint64_t ce_mark = 0, horizon_drops = 0, horizon_caps = 0;
};

}  // namespace pktpath
