// pfifo and bfifo: one tail-drop FIFO limited in packets or in bytes (net/sched/sch_fifo.c).
// Locked qdiscs: every op runs under the root lock.
#include <string>

#include "core/netdevice.h"
#include "sched/qdisc.h"
#include "sched/sch_fifo.h"

namespace pktpath {

namespace {

inline constexpr uint32_t kEthHeaderLen = 14;

class FifoQdisc final : public Qdisc {
 public:
  explicit FifoQdisc(bool bytes) : Qdisc(bytes ? "bfifo" : "pfifo", 0), bytes_(bytes) {}

  // mirrors bfifo_enqueue / pfifo_enqueue: tail drop over the limit.
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    const bool fits = bytes_ ? backlog_ + p->len <= limit_ : count_ < limit_;
    if (PP_UNLIKELY(!fits)) {
      stats_dropped(cpu);
      to_free.push_back(p);
      return NET_XMIT_DROP;
    }
    q_.push_back(p);
    ++count_;
    backlog_ += p->len;
    stats_enqueued(cpu, p);
    return NET_XMIT_SUCCESS;
  }
  Packet* dequeue(Cpu& cpu) override {
    Packet* p = q_.pop_front();
    if (p) {
      --count_;
      backlog_ -= p->len;
      stats_dequeued(cpu, p);
    }
    return p;
  }
  Packet* peek(Cpu&) override { return q_.head; }
  void reset(Cpu& cpu) override {
    while (Packet* p = q_.pop_front()) cpu.free_reason(p, DropReason::QDISC_DROP);
    count_ = 0;
    backlog_ = 0;
    zero_backlog();
  }
  // mirrors __fifo_init
  bool init(NetDevice& dev, const QdiscOptions& opts, std::string& err) override {
    uint64_t limit;
    const auto* f = opts.get<FifoOptions>();
    if (f && f->limit_set) {
      limit = f->limit;
    } else if (opts.empty() || f) {
      limit = dev.tx_queue_len();
      if (bytes_) limit *= dev.mtu() + kEthHeaderLen;
    } else {
      err = std::string("bad options for ") + kind();
      return false;
    }
    if (limit > UINT32_MAX) limit = UINT32_MAX;
    limit_ = static_cast<uint32_t>(limit);
    const bool bypass = bytes_ ? limit_ >= dev.mtu() + kEthHeaderLen : limit_ >= 1;
    set_flags(bypass ? (flags() | TCQ_F_CAN_BYPASS) : (flags() & ~TCQ_F_CAN_BYPASS));
    return true;
  }
  // mirrors fifo_dump
  QdiscOptions dump() const override {
    FifoOptions o;
    o.limit = limit_;
    o.limit_set = true;
    return o;
  }

 private:
  PacketList q_;
  uint32_t count_ = 0;
  uint64_t backlog_ = 0;
  uint32_t limit_ = 0;
  bool bytes_;
};

}  // namespace

// pfifo_qdisc_ops, bfifo_qdisc_ops
const QdiscRegistrar kPfifo{{"pfifo", [] { return std::unique_ptr<Qdisc>(new FifoQdisc(false)); }}};
const QdiscRegistrar kBfifo{{"bfifo", [] { return std::unique_ptr<Qdisc>(new FifoQdisc(true)); }}};

}  // namespace pktpath
