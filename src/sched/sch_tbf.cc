// tbf: token bucket filter (net/sched/sch_tbf.c). Tokens are nanoseconds of transmit
// time at `rate`; the bucket holds at most `burst` bytes' worth. A packet leaves when
// the bucket covers it; otherwise a Cpu timer (the qdisc watchdog) reschedules the
// qdisc when enough tokens will have accrued. Never sleeps. The queue is an inner bfifo
// of `limit` bytes. Locked: everything under the root lock.
#include <algorithm>
#include <string>

#include "core/netdevice.h"
#include "sched/peek_dequeued.h"
#include "sched/qdisc.h"
#include "sched/qdisc_watchdog.h"
#include "sched/sch_fifo.h"
#include "sched/sch_tbf.h"

namespace pktpath {

namespace {

inline constexpr uint64_t kNsPerSec = 1000000000ull;

// Its peek is qdisc_peek_dequeued (PeekDequeuedQdisc): a parent peeking a throttled tbf
// sees nothing, as its dequeue would give.
class TbfQdisc final : public PeekDequeuedQdisc {
 public:
  TbfQdisc() : PeekDequeuedQdisc("tbf", 0) {}

  // mirrors tbf_enqueue: a packet larger than the bucket can never leave: drop it.
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    const uint32_t len = p->len;
    if (PP_UNLIKELY(len > max_size_)) {
      stats_dropped(cpu);
      to_free.push_back(p);
      return NET_XMIT_DROP;
    }
    const int rc = child_->enqueue(cpu, p, to_free);
    if (rc != NET_XMIT_SUCCESS) {
      if (net_xmit_drop_count(rc)) stats_dropped(cpu);
      return rc;
    }
    stats_enqueued(cpu, p);
    ++qlen_;
    backlog_ += len;
    return NET_XMIT_SUCCESS;
  }

  // mirrors tbf_dequeue
  Packet* dequeue_inner(Cpu& cpu) override {
    Packet* p = child_->peek(cpu);
    if (!p) return nullptr;
    const int64_t now = static_cast<int64_t>(cpu.clock().now_ns());
    if (PP_UNLIKELY(!started_)) {
      t_c_ = now;
      started_ = true;
    }
    int64_t toks = std::min<int64_t>(now - t_c_, buffer_ns_);
    toks += tokens_;
    if (toks > buffer_ns_) toks = buffer_ns_;
    toks -= len_to_ns(p->len);
    if (toks >= 0) {
      p = child_->dequeue(cpu);  // qdisc_dequeue_peeked
      if (PP_UNLIKELY(!p)) return nullptr;
      t_c_ = now;
      tokens_ = toks;
      stats_dequeued(cpu, p);
      --qlen_;
      backlog_ -= p->len;
      return p;
    }
    watchdog_.schedule_ns(cpu, static_cast<uint64_t>(now - toks));
    st(cpu).overlimits.add();
    return nullptr;
  }
  void reset(Cpu& cpu) override {
    child_->reset(cpu);
    reset_counters(cpu);
    tokens_ = buffer_ns_;
    started_ = false;
    watchdog_.cancel();  // tbf_reset -> qdisc_watchdog_cancel
  }

  // mirrors tbf_change: rate and burst required; limit given or derived from latency.
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    const auto* o = opts.get<TbfOptions>();
    if (!o) return unexpected("tbf: rate and burst are required");
    if (o->rate_bytes_ps == 0 || o->burst == 0) return unexpected("tbf: rate and burst must be > 0");
    if (o->limit_set == o->latency_set) return unexpected("tbf: exactly one of limit or latency is required");
    uint64_t limit = o->limit;
    if (o->latency_set) {
      // tc: limit = rate * latency + burst
      limit = static_cast<uint64_t>(static_cast<unsigned __int128>(o->rate_bytes_ps) *
                                    o->latency_ns / kNsPerSec) +
              o->burst;
      if (limit > UINT32_MAX) limit = UINT32_MAX;
    }
    // The inner qdisc: a bfifo of `limit` bytes, unless one was grafted (then it stays,
    // as tbf_change keeps any child but its own default fifo).
    const bool keep = child_ && !own_fifo_;
    std::unique_ptr<Qdisc> child;
    if (!keep) {
      FifoOptions fo;
      fo.limit = static_cast<uint32_t>(limit);
      fo.limit_set = true;
      auto created = qdisc_create(dev, "bfifo", fo);
      if (!created) return unexpected(created.error().msg);
      child = std::move(*created);
    }
    if (!keep && child_ && child_->qlen() != 0) {
      return unexpected("tbf: change while packets are queued is not supported");
    }
    opts_ = *o;
    opts_.limit = static_cast<uint32_t>(limit);
    opts_.limit_set = true;
    opts_.latency_set = false;
    if (!keep) {
      child_ = std::move(child);
      own_fifo_ = true;
      child_->set_parent(handle() | 1u);
      child_->set_parent_qdisc(this);
    }
    rate_ = o->rate_bytes_ps;
    max_size_ = o->burst;
    buffer_ns_ = len_to_ns(o->burst);
    tokens_ = buffer_ns_;
    started_ = false;
    return {};
  }

  // mirrors tbf_find: every classid names the one class.
  Qdisc* child(uint32_t) const override { return child_.get(); }
  unsigned num_children() const override { return 1; }
  // mirrors tbf_graft: the class takes any qdisc; the old one leaves with its packets.
  Result<std::unique_ptr<Qdisc>> graft(NetDevice& dev, uint32_t, std::unique_ptr<Qdisc> q) override {
    q->set_dev_queue(&dev, &dev.txq(0));
    q->set_parent(handle() | 1u);
    q->set_parent_qdisc(this);
    std::unique_ptr<Qdisc> old = std::move(child_);
    if (old) {
      const QdiscStats os = old->stats();
      QdiscStatsBlock& s = base_stats();
      s.qlen.add(-os.qlen);
      s.backlog.add(-os.backlog);
      qlen_ -= static_cast<uint32_t>(os.qlen);
      backlog_ -= static_cast<uint32_t>(os.backlog);
      old->set_parent_qdisc(nullptr);
    }
    child_ = std::move(q);
    own_fifo_ = false;
    return old;
  }

  // mirrors tbf_dump
  QdiscOptions dump() const override { return opts_; }
  // mirrors tbf_dump_class: its one class, 1, holding the inner qdisc (a default
  // fifo's handle is 0: tc shows no leaf); tbf has no dump_stats for it.
  std::vector<QdiscClassInfo> class_dump(uint64_t) const override {
    QdiscClassInfo c;
    c.classid = handle() | 1u;
    c.parent = handle();
    c.leaf_handle = child_ ? child_->handle() : 0;
    c.has_stats = false;
    return {c};
  }

 private:
  int64_t len_to_ns(uint64_t len) const {
    return static_cast<int64_t>(static_cast<unsigned __int128>(len) * kNsPerSec / rate_);
  }
  TbfOptions opts_;
  std::unique_ptr<Qdisc> child_;
  bool own_fifo_ = false;  // child_ is the bfifo init made (a change remakes it)
  uint64_t rate_ = 1;
  uint32_t max_size_ = 0;
  int64_t buffer_ns_ = 0;
  int64_t tokens_ = 0;
  int64_t t_c_ = 0;
  bool started_ = false;
  QdiscWatchdog watchdog_{this};  // tbf_destroy cancels it
};

}  // namespace

const QdiscRegistrar kTbf{{"tbf", [] { return std::unique_ptr<Qdisc>(new TbfQdisc); }, true}};  // tbf_qdisc_ops

}  // namespace pktpath
