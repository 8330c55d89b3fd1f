// pfifo_fast: three bands picked by prio2band[priority & TC_PRIO_MAX], band 0 first, each
// band a lockless multi-producer ring sized by the device's tx_queue_len
// (net/sched/sch_generic.c). TCQ_F_NOLOCK | TCQ_F_CAN_BYPASS, per-Cpu statistics.
//
// Concurrency: enqueue from any thread; dequeue/peek only by the seqlock holder.
#include <array>
#include <string>

#include "core/netdevice.h"
#include "sched/mp_ring.h"
#include "sched/pfifo_fast.h"
#include "sched/qdisc.h"

namespace pktpath {

namespace {

inline constexpr unsigned kBands = kPfifoFastBands;

class PfifoFastQdisc final : public Qdisc {
 public:
  PfifoFastQdisc()
      : Qdisc("pfifo_fast", TCQ_F_NOLOCK | TCQ_F_CAN_BYPASS),
        bands_{MpRing(1), MpRing(1), MpRing(1)} {
    enable_cpu_stats();
  }

  // mirrors pfifo_fast_enqueue
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    const unsigned band = kPrio2Band[p->priority & kTcPrioMax];
    const uint32_t len = p->len;  // p belongs to the dequeuer once produced
    if (PP_UNLIKELY(!bands_[band].produce(p))) {
      stats_dropped(cpu);
      to_free.push_back(p);
      return NET_XMIT_DROP;
    }
    QdiscStatsBlock& s = st(cpu);
    s.qlen.add(1);
    s.backlog.add(len);
    return NET_XMIT_SUCCESS;
  }

  // mirrors pfifo_fast_dequeue: if every band looks empty while MISSED/DRAINING says
  // someone enqueued, clear those bits and look once more, so a packet produced during
  // the first look is either seen now or its producer sees the cleared bit and runs.
  Packet* dequeue(Cpu& cpu) override {
    bool retry = true;
    for (;;) {
      for (unsigned b = 0; b < kBands; ++b) {
        if (Packet* p = bands_[b].consume()) {
          stats_dequeued(cpu, p);
          return p;
        }
      }
      if (!retry || nolock_is_empty()) return nullptr;
      state().fetch_and(~QDISC_STATE_NON_EMPTY, std::memory_order_seq_cst);
      retry = false;
    }
  }
  Packet* peek(Cpu&) override {
    for (unsigned b = 0; b < kBands; ++b)
      if (Packet* p = bands_[b].peek()) return p;
    return nullptr;
  }
  void reset(Cpu& cpu) override {
    for (MpRing& r : bands_)
      while (Packet* p = r.consume()) cpu.free_reason(p, DropReason::QDISC_DROP);
    zero_backlog();
  }
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    if (!opts.empty()) return unexpected("qdisc pfifo_fast takes no options");
    // A zero-length ring would drop everything (pfifo_fast_init refuses it too).
    if (dev.tx_queue_len() == 0) return unexpected("pfifo_fast needs txqueuelen > 0");
    for (MpRing& r : bands_) r.resize(dev.tx_queue_len());
    return {};
  }
  // mirrors pfifo_fast_dump: a tc_prio_qopt of the fixed map
  QdiscOptions dump() const override {
    PrioOptions o;
    o.bands = kPfifoFastBands;
    o.priomap = kPrio2Band;
    return o;
  }

 private:
  std::array<MpRing, kBands> bands_;
};

}  // namespace

const QdiscRegistrar kPfifoFast{{"pfifo_fast", [] { return std::unique_ptr<Qdisc>(new PfifoFastQdisc); }}};  // pfifo_fast_ops

}  // namespace pktpath
