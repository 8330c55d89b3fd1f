// police (net/sched/act_police.c).
#include "sched/act_police.h"

#include <algorithm>

namespace pktpath::tc {

void PschedRate::precompute(uint64_t bytes_ps) {
  rate_bytes_ps = bytes_ps;
  mult = 1;
  shift = 0;
  if (bytes_ps == 0) return;
  uint64_t factor = 1000000000ull;
  for (;;) {
    mult = static_cast<uint32_t>(factor / bytes_ps);
    if ((mult & (1u << 31)) || (factor & (1ull << 63))) break;
    factor <<= 1;
    ++shift;
  }
}

namespace {
constexpr double kTicksPerUsec = 1000.0 / 64.0;  // tick_in_usec from /proc/net/psched
}

// tc_calc_xmittime: microseconds truncated, then ticks truncated (tc_core_time2tick).
uint32_t tc_calc_xmittime(uint64_t rate, uint32_t size) {
  if (rate == 0) return 0;
  const auto usec = static_cast<uint32_t>(1e6 * (static_cast<double>(size) / static_cast<double>(rate)));
  return static_cast<uint32_t>(usec * kTicksPerUsec);
}

uint32_t tc_core_tick2time(uint32_t ticks) { return static_cast<uint32_t>(ticks / kTicksPerUsec); }

// tc_calc_xmitsize: ticks to microseconds truncated (tc_core_tick2time), then bytes
// truncated.
uint32_t tc_calc_xmitsize(uint64_t rate, uint32_t ticks) {
  return static_cast<uint32_t>(static_cast<double>(rate) * tc_core_tick2time(ticks) / 1e6);
}

// mirrors tcf_police_init for what pktpath takes
PoliceAction::PoliceAction(const PoliceOptions& o) : o_(o), peak_present_(o.peak_bytes_ps != 0) {
  rate_.precompute(o.rate_bytes_ps);
  if (peak_present_) peak_.precompute(o.peak_bytes_ps);
  // tc sends a 2047-byte rate table when no mtu is given: cell_log 3, so mtu 255 << 3.
  uint32_t cell_log = 0;
  while ((2047u >> cell_log) > 255) ++cell_log;
  mtu_ = o.mtu ? o.mtu : 255u << cell_log;
  burst_ns_ = static_cast<int64_t>(tc_calc_xmittime(o.rate_bytes_ps, o.burst)) << kPschedShift;
  b_.toks = burst_ns_;
  if (peak_present_) {
    mtu_ptoks_ = static_cast<int64_t>(peak_.l2t_ns(mtu_));
    b_.ptoks = mtu_ptoks_;
  }
}

// mirrors tcf_police_act (6.1): bstats per Cpu, the buckets under tcfp_lock, then
// overlimits/drops per Cpu. qdisc_pkt_len: the whole frame on egress, without the
// Ethernet header on ingress (the kernel's skb->len there).
int PoliceAction::act(const TcContext& ctx, Packet* p, TcResult&) {
  TcStats::Slot& s = stats.at(ctx.cpu);
  const uint32_t len = tc_skb_len(ctx, p);
  s.packets.add();
  s.bytes.add(len);
  int ret = o_.exceed;
  if (len <= mtu_) {
    const auto now = static_cast<int64_t>(ctx.cpu.clock().now_ns());
    b_.lock.lock();
    int64_t toks = std::min<int64_t>(now - b_.t_c, burst_ns_);
    int64_t ptoks = 0;
    if (peak_present_) {
      ptoks = std::min<int64_t>(toks + b_.ptoks, mtu_ptoks_);
      ptoks -= static_cast<int64_t>(peak_.l2t_ns(len));
    }
    toks = std::min<int64_t>(toks + b_.toks, burst_ns_);
    toks -= static_cast<int64_t>(rate_.l2t_ns(len));
    if ((toks | ptoks) >= 0) {
      b_.t_c = now;
      b_.toks = toks;
      b_.ptoks = ptoks;
      b_.lock.unlock();
      ret = o_.conform;
      if (ret == TC_ACT_SHOT) s.drops.add();
      return ret;
    }
    b_.lock.unlock();
  }
  s.overlimits.add();
  if (ret == TC_ACT_SHOT) s.drops.add();
  return ret;
}

ActionOptions PoliceAction::dump() const {
  PoliceOptions o = o_;
  o.mtu = mtu_;
  o.burst = tc_calc_xmitsize(o_.rate_bytes_ps, static_cast<uint32_t>(burst_ns_ >> kPschedShift));
  o.index = index;
  return o;
}

namespace {

Result<std::shared_ptr<TcAction>> police_init(const ActionOptions& opts, DeviceTable&) {
  const auto* o = opts.get<PoliceOptions>();
  if (!o) return unexpected("police: bad options");
  if (o->rate_bytes_ps == 0 || o->burst == 0) return unexpected("police: needs rate and burst");
  return std::shared_ptr<TcAction>(std::make_shared<PoliceAction>(*o));
}

const ActionRegistrar kPolice{{"police", police_init}};  // act_police_ops

}  // namespace
}  // namespace pktpath::tc
