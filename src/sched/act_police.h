// police: a token bucket (with an optional peak-rate bucket) that sorts packets into
// conforming and exceeding ones (net/sched/act_police.c).
#pragma once

#include <cstdint>

#include "core/spinlock.h"
#include "sched/act_api.h"

namespace pktpath::tc {

// mirrors struct psched_ratecfg: a rate as the multiply-shift that psched_l2t_ns uses.
struct PschedRate {
  uint64_t rate_bytes_ps = 0;
  uint32_t mult = 1;
  uint8_t shift = 0;
  // mirrors psched_ratecfg_precompute (no overhead, Ethernet link layer)
  void precompute(uint64_t bytes_ps);
  // mirrors psched_l2t_ns: nanoseconds to send len bytes at this rate
  uint64_t l2t_ns(uint32_t len) const { return (static_cast<uint64_t>(len) * mult) >> shift; }
};

// tc's conversions between a size and its send time in psched ticks (64 ns), as tc
// hands the kernel the burst (tc_calc_xmittime / tc_calc_xmitsize, with /proc/net/psched
// at 1000/64: 15.625 ticks per microsecond).
uint32_t tc_calc_xmittime(uint64_t rate_bytes_ps, uint32_t size);
uint32_t tc_calc_xmitsize(uint64_t rate_bytes_ps, uint32_t ticks);
uint32_t tc_core_tick2time(uint32_t ticks);  // microseconds, truncated
inline constexpr int kPschedShift = 6;  // PSCHED_SHIFT: a tick is 64 ns

// `police rate R burst B [mtu M] [peakrate P] conform-exceed EXCEED[/CONFORM]`.
struct PoliceOptions : KindOptionsBase {
  uint64_t rate_bytes_ps = 0;
  uint32_t burst = 0;        // bytes (tc turns it into ticks at the rate)
  uint32_t mtu = 0;          // 0: 255 << cell_log of a 2047-byte table (2040)
  uint64_t peak_bytes_ps = 0;  // 0: no peak bucket
  int exceed = TC_ACT_RECLASSIFY;  // tcf_action (tc's default: reclassify)
  int conform = TC_ACT_OK;         // tcfp_result
  uint32_t index = 0;              // in a dump: the action's index
};

// mirrors tcf_police_act (Linux 6.1): counters per Cpu without a lock, the bucket under
// its spinlock (tcfp_lock); time from the Cpu's Clock, so a VirtualClock gives exact runs.
class PoliceAction final : public TcAction {
 public:
  explicit PoliceAction(const PoliceOptions& o);
  int act(const TcContext& ctx, Packet* p, TcResult& res) override;
  const char* kind() const override { return "police"; }
  ActionOptions dump() const override;

 private:
  // The bucket state that tcfp_lock guards, on its own cache line.
  struct alignas(kCacheLine) Bucket {
    SpinLock lock;
    int64_t t_c = 0;  // 0: as if made at time 0 (the buckets start full either way)
    int64_t toks = 0;
    int64_t ptoks = 0;
  };
  PoliceOptions o_;
  PschedRate rate_, peak_;
  bool peak_present_;
  uint32_t mtu_;
  int64_t burst_ns_;
  int64_t mtu_ptoks_ = 0;
  Bucket b_;
};

}  // namespace pktpath::tc
