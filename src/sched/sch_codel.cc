// codel: one FIFO under CoDel (net/sched/sch_codel.c): tail drop at `limit` packets,
// CoDel's drops (or CE marks with ecn) at the head on dequeue. Locked.
#include "sched/sch_codel.h"

#include <memory>
#include <string>

#include "core/netdevice.h"
#include "sched/codel.h"
#include "sched/peek_dequeued.h"
#include "sched/qdisc.h"

namespace pktpath {

namespace {

inline constexpr uint32_t kEthHeaderLen = 14;

class CodelQdisc final : public PeekDequeuedQdisc {
 public:
  CodelQdisc() : PeekDequeuedQdisc("codel", 0) {}

  // mirrors codel_qdisc_enqueue
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    if (PP_LIKELY(qlen_ < limit_)) {
      codel_set_enqueue_time(*p, codel_time_from_ns(cpu.clock().now_ns()));
      q_.push_back(p);
      join(cpu, p);
      return NET_XMIT_SUCCESS;
    }
    ++drop_overlimit_;
    stats_dropped(cpu);
    to_free.push_back(p);
    return NET_XMIT_DROP;
  }

  // mirrors qdisc_reset_queue + codel_reset's vars
  void reset(Cpu& cpu) override {
    reset_counters(cpu);
    while (Packet* p = q_.pop_front()) cpu.free_reason(p, DropReason::QDISC_DROP);
    vars_ = CodelVars{};
  }

  // mirrors codel_init
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    limit_ = 1000;  // DEFAULT_CODEL_LIMIT
    params_ = CodelParams{};
    params_.mtu = dev.mtu() + kEthHeaderLen;
    if (Status st = change(dev, opts); !st) return st;
    set_flags(limit_ >= 1 ? (flags() | TCQ_F_CAN_BYPASS) : (flags() & ~TCQ_F_CAN_BYPASS));
    return {};
  }

  // mirrors codel_change; a limit below what is queued is refused (see fq_codel).
  Status change(NetDevice&, const QdiscOptions& opts) override {
    const auto* o = opts.get<CodelOptions>();
    if (!o) {
      if (opts.empty()) return {};
      return unexpected("bad options for codel");
    }
    if (o->limit && *o->limit < qlen_) return unexpected("codel: limit below the current queue length");
    if (o->target_us) params_.target = codel_time_from_us(*o->target_us);
    if (o->ce_threshold_us) params_.ce_threshold = codel_time_from_us(*o->ce_threshold_us);
    if (o->interval_us) params_.interval = codel_time_from_us(*o->interval_us);
    if (o->limit) limit_ = *o->limit;
    if (o->ecn) params_.ecn = *o->ecn;
    return {};
  }

  // mirrors codel_dump
  QdiscOptions dump() const override {
    CodelOptions o;
    o.target_us = codel_time_to_us(params_.target);
    o.limit = limit_;
    o.interval_us = codel_time_to_us(params_.interval);
    o.ecn = params_.ecn;
    if (params_.ce_threshold != kCodelDisabledThreshold)
      o.ce_threshold_us = codel_time_to_us(params_.ce_threshold);
    return o;
  }

  // mirrors codel_dump_stats: drop_next relative to the reader's now.
  QdiscXstats xstats(uint64_t now_ns) const override {
    CodelXstats x;
    x.maxpacket = cstats_.maxpacket;
    x.count = vars_.count;
    x.lastcount = vars_.lastcount;
    x.drop_overlimit = drop_overlimit_;
    x.ldelay_us = codel_time_to_us(vars_.ldelay);
    x.dropping = vars_.dropping;
    x.ecn_mark = cstats_.ecn_mark;
    x.ce_mark = cstats_.ce_mark;
    if (vars_.dropping) {
      const codel_tdiff_t delta =
          static_cast<codel_tdiff_t>(vars_.drop_next - codel_time_from_ns(now_ns));
      x.drop_next_us =
          delta >= 0 ? static_cast<int32_t>(codel_time_to_us(static_cast<codel_time_t>(delta)))
                     : -static_cast<int32_t>(codel_time_to_us(static_cast<codel_time_t>(-delta)));
    }
    return x;
  }

 private:
  struct CodelCtx {
    CodelQdisc& q;
    Cpu& cpu;
    Packet* dequeue(CodelVars&) {  // mirrors dequeue_func
      Packet* p = q.q_.pop_front();
      if (p) q.leave(cpu, p);
      return p;
    }
    void drop(Packet* p) {  // mirrors drop_func
      cpu.free_reason(p, DropReason::QDISC_DROP);
      q.stats_dropped(cpu);
    }
  };

  // mirrors codel_qdisc_dequeue
  Packet* dequeue_inner(Cpu& cpu) override {
    CodelCtx ctx{*this, cpu};
    Packet* p = codel_dequeue(ctx, backlog_, params_, vars_, cstats_, cpu.clock());
    codel_dequeue_done(*this, cpu, cstats_, p);
    return p;
  }

  PacketList q_;
  uint32_t limit_ = 0;
  uint32_t drop_overlimit_ = 0;
  CodelParams params_;
  CodelVars vars_;
  CodelStats cstats_;
};

}  // namespace

const QdiscRegistrar kCodel{
    {"codel", [] { return std::unique_ptr<Qdisc>(new CodelQdisc); }}};  // codel_qdisc_ops

}  // namespace pktpath
