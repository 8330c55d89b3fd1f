// pfifo, bfifo and pfifo_head_drop: one FIFO limited in packets or in bytes
// (net/sched/sch_fifo.c); pfifo and bfifo drop the newcomer, pfifo_head_drop the oldest.
// Locked qdiscs: every op runs under the root lock.
#include <string>

#include "core/netdevice.h"
#include "sched/qdisc.h"
#include "sched/sch_fifo.h"

namespace pktpath {

namespace {

inline constexpr uint32_t kEthHeaderLen = 14;

enum class FifoKind { Packets, Bytes, HeadDrop };

const char* fifo_name(FifoKind k) {
  return k == FifoKind::Bytes ? "bfifo" : k == FifoKind::Packets ? "pfifo" : "pfifo_head_drop";
}

class FifoQdisc final : public Qdisc {
 public:
  explicit FifoQdisc(FifoKind k)
      : Qdisc(fifo_name(k), 0), bytes_(k == FifoKind::Bytes), head_drop_(k == FifoKind::HeadDrop) {}

  // mirrors bfifo_enqueue / pfifo_enqueue / pfifo_tail_enqueue: over the limit the
  // newcomer is dropped, or for pfifo_head_drop the head (limit 0 drops the newcomer, as
  // the kernel's fix for an empty head-drop queue does).
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    const bool fits = bytes_ ? backlog_ + p->len <= limit_ : count_ < limit_;
    if (PP_UNLIKELY(!fits)) {
      if (head_drop_ && limit_ > 0) return head_drop_enqueue(cpu, p, to_free);
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
    Packet* p = pop_head();
    if (p) stats_dequeued(cpu, p);
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
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    uint64_t limit;
    const auto* f = opts.get<FifoOptions>();
    if (f && f->limit_set) {
      limit = f->limit;
    } else if (opts.empty() || f) {
      limit = dev.tx_queue_len();
      if (bytes_) limit *= dev.mtu() + kEthHeaderLen;
    } else {
      return unexpected(std::string("bad options for ") + kind());
    }
    if (limit > UINT32_MAX) limit = UINT32_MAX;
    limit_ = static_cast<uint32_t>(limit);
    const bool bypass = bytes_ ? limit_ >= dev.mtu() + kEthHeaderLen : limit_ >= 1;
    set_flags(bypass ? (flags() | TCQ_F_CAN_BYPASS) : (flags() & ~TCQ_F_CAN_BYPASS));
    return {};
  }
  // mirrors fifo_dump
  QdiscOptions dump() const override {
    FifoOptions o;
    o.limit = limit_;
    o.limit_set = true;
    return o;
  }

 private:
  Packet* pop_head() {
    Packet* p = q_.pop_front();
    if (p) {
      --count_;
      backlog_ -= p->len;
    }
    return p;
  }
  // mirrors pfifo_tail_enqueue when full: the head goes (a drop, __qdisc_queue_drop_head),
  // the newcomer is queued, and NET_XMIT_CN tells the parents one packet is gone.
  int head_drop_enqueue(Cpu& cpu, Packet* p, PacketList& to_free) {
    Packet* old = pop_head();
    QdiscStatsBlock& s = st(cpu);
    s.qlen.add(~uint64_t{0});
    s.backlog.add(-uint64_t{old->len});
    s.drops.add(1);
    to_free.push_back(old);
    const int32_t delta = static_cast<int32_t>(old->len) - static_cast<int32_t>(p->len);
    q_.push_back(p);
    ++count_;
    backlog_ += p->len;
    stats_enqueued(cpu, p);
    tree_reduce_backlog(cpu, 0, delta);
    return NET_XMIT_CN;
  }

  PacketList q_;
  uint32_t count_ = 0;
  uint64_t backlog_ = 0;
  uint32_t limit_ = 0;
  bool bytes_;
  bool head_drop_;
};

}  // namespace

// pfifo_qdisc_ops, bfifo_qdisc_ops
const QdiscRegistrar kPfifo{
    {"pfifo", [] { return std::unique_ptr<Qdisc>(new FifoQdisc(FifoKind::Packets)); }}};
const QdiscRegistrar kBfifo{
    {"bfifo", [] { return std::unique_ptr<Qdisc>(new FifoQdisc(FifoKind::Bytes)); }}};
// pfifo_head_drop_qdisc_ops
const QdiscRegistrar kPfifoHeadDrop{
    {"pfifo_head_drop", [] { return std::unique_ptr<Qdisc>(new FifoQdisc(FifoKind::HeadDrop)); }}};

}  // namespace pktpath
