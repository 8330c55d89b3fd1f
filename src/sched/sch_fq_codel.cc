// fq_codel: fair queuing with CoDel per flow (net/sched/sch_fq_codel.c). Packets hash to
// one of `flows` queues; flows take turns by deficit round robin, new flows (new_flows)
// before old ones (old_flows); each flow's head is judged by CoDel on dequeue. Over the
// packet or memory limit, the fattest flow loses up to half its backlog (drop_batch at
// most). Flow tables are allocated at init; nothing is allocated per packet. Locked.
#include "sched/sch_fq_codel.h"

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>

#include "core/flow_dissector.h"
#include "core/netdevice.h"
#include "sched/codel.h"
#include "sched/peek_dequeued.h"
#include "sched/qdisc.h"

namespace pktpath {

namespace {

inline constexpr uint32_t kEthHeaderLen = 14;
inline constexpr uint32_t kMaxFlows = 65536;

// An intrusive circular list (struct list_head): a node alone is linked to itself.
struct ListHead {
  ListHead() = default;
  ListHead(const ListHead&) = delete;
  ListHead& operator=(const ListHead&) = delete;
  ListHead* prev = this;
  ListHead* next = this;
  bool empty() const { return next == this; }
  void unlink() {
    prev->next = next;
    next->prev = prev;
    prev = next = this;
  }
  void add_tail(ListHead& h) {  // list_add_tail(this, &h)
    prev = h.prev;
    next = &h;
    h.prev->next = this;
    h.prev = this;
  }
  void move_tail(ListHead& h) {
    unlink();
    add_tail(h);
  }
  uint32_t length() const {
    uint32_t n = 0;
    for (const ListHead* l = next; l != this; l = l->next) ++n;
    return n;
  }
};

struct Flow {
  ListHead chain;  // first member: a ListHead* on a flow list is its Flow
  Packet* head = nullptr;
  Packet* tail = nullptr;
  int32_t deficit = 0;
  CodelVars cvars;
};
static_assert(std::is_standard_layout_v<Flow>);

Flow& flow_of(ListHead* l) { return *reinterpret_cast<Flow*>(l); }

// skb->truesize: the packet's slot, header and buffer.
uint32_t truesize(const Packet& p) { return static_cast<uint32_t>(sizeof(Packet)) + p.end_off; }

class FqCodelQdisc final : public PeekDequeuedQdisc {
 public:
  FqCodelQdisc() : PeekDequeuedQdisc("fq_codel", 0) {}

  // mirrors fq_codel_enqueue
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    const uint32_t idx = classify(*p);
    const uint32_t pkt_len = p->len;
    codel_set_enqueue_time(*p, codel_time_from_ns(cpu.clock().now_ns()));
    Flow& flow = flows_[idx];
    p->next = nullptr;
    if (flow.head == nullptr)
      flow.head = p;
    else
      flow.tail->next = p;
    flow.tail = p;
    backlogs_[idx] += pkt_len;
    if (flow.chain.empty()) {
      flow.chain.add_tail(new_flows_);
      ++new_flow_count_;
      flow.deficit = static_cast<int32_t>(quantum_);
    }
    const uint32_t mem = truesize(*p);
    codel_set_mem_usage(*p, mem);
    memory_usage_ += mem;
    const bool memory_limited = memory_usage_ > memory_limit_;
    join(cpu, p);
    if (qlen_ <= limit_ && !memory_limited) return NET_XMIT_SUCCESS;

    const uint32_t prev_backlog = backlog_;
    const uint32_t prev_qlen = qlen_;
    // Dropping one packet would mean a linear search per packet: drop up to half the
    // fat flow's backlog (at most drop_batch packets) instead.
    const uint32_t ret = drop(cpu, drop_batch_, to_free);
    const uint32_t dropped = prev_qlen - qlen_;
    const uint32_t dropped_len = prev_backlog - backlog_;
    drop_overlimit_ += dropped;
    if (memory_limited) drop_overmemory_ += dropped;
    // This flow lost packets: NET_XMIT_CN, and the parents count this one as the drop.
    if (ret == idx) {
      tree_reduce_backlog(cpu, static_cast<int32_t>(dropped - 1),
                          static_cast<int32_t>(dropped_len - pkt_len));
      return NET_XMIT_CN;
    }
    tree_reduce_backlog(cpu, static_cast<int32_t>(dropped), static_cast<int32_t>(dropped_len));
    return NET_XMIT_SUCCESS;
  }

  // mirrors fq_codel_reset
  void reset(Cpu& cpu) override {
    reset_counters(cpu);
    new_flows_.unlink();
    old_flows_.unlink();
    for (uint32_t i = 0; i < flows_cnt_; ++i) {
      Flow& f = flows_[i];
      while (Packet* p = f.head) {
        f.head = p->next;
        cpu.free_reason(p, DropReason::QDISC_DROP);
      }
      f.tail = nullptr;
      f.chain.unlink();
      f.cvars = CodelVars{};
      backlogs_[i] = 0;
    }
    memory_usage_ = 0;
  }

  // mirrors fq_codel_init: defaults, then the options, then the flow tables.
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    const uint32_t mtu = dev.mtu() + kEthHeaderLen;  // psched_mtu
    limit_ = 10 * 1024;
    flows_cnt_ = 1024;
    memory_limit_ = 32u << 20;
    drop_batch_ = 64;
    quantum_ = mtu;
    cparams_ = CodelParams{};
    cparams_.ecn = true;
    cparams_.mtu = mtu;
    if (Status st = change(dev, opts); !st) return st;
    flows_ = std::make_unique<Flow[]>(flows_cnt_);
    backlogs_ = std::make_unique<uint32_t[]>(flows_cnt_);
    set_flags(limit_ >= 1 ? (flags() | TCQ_F_CAN_BYPASS) : (flags() & ~TCQ_F_CAN_BYPASS));
    return {};
  }

  // mirrors fq_codel_change: flows only before the tables exist. Lowering the limit
  // below what is queued is refused (the kernel drops the excess; no traffic runs here).
  Status change(NetDevice&, const QdiscOptions& opts) override {
    const auto* o = opts.get<FqCodelOptions>();
    if (!o) {
      if (opts.empty()) return {};
      return unexpected("bad options for fq_codel");
    }
    if (o->flows) {
      if (flows_) return unexpected("fq_codel: flows cannot change");
      if (*o->flows == 0 || *o->flows > kMaxFlows) return unexpected("fq_codel: flows must be 1..65536");
    }
    if (o->limit && *o->limit < qlen_) return unexpected("fq_codel: limit below the current queue length");
    if (o->flows) flows_cnt_ = *o->flows;
    if (o->target_us) cparams_.target = codel_time_from_us(*o->target_us);
    if (o->ce_threshold_us) cparams_.ce_threshold = codel_time_from_us(*o->ce_threshold_us);
    if (o->interval_us) cparams_.interval = codel_time_from_us(*o->interval_us);
    if (o->limit) limit_ = *o->limit;
    if (o->ecn) cparams_.ecn = *o->ecn;
    if (o->quantum) quantum_ = std::max(256u, *o->quantum);
    if (o->drop_batch) drop_batch_ = std::max(1u, *o->drop_batch);
    if (o->memory_limit) memory_limit_ = std::min(1u << 31, *o->memory_limit);
    return {};
  }

  // mirrors fq_codel_dump
  QdiscOptions dump() const override {
    FqCodelOptions o;
    o.target_us = codel_time_to_us(cparams_.target);
    o.limit = limit_;
    o.interval_us = codel_time_to_us(cparams_.interval);
    o.ecn = cparams_.ecn;
    o.quantum = quantum_;
    o.drop_batch = drop_batch_;
    o.memory_limit = memory_limit_;
    o.flows = flows_cnt_;
    if (cparams_.ce_threshold != kCodelDisabledThreshold)
      o.ce_threshold_us = codel_time_to_us(cparams_.ce_threshold);
    return o;
  }

  // mirrors fq_codel_dump_stats
  QdiscXstats xstats(uint64_t) const override {
    FqCodelXstats x;
    x.maxpacket = cstats_.maxpacket;
    x.drop_overlimit = drop_overlimit_;
    x.ecn_mark = cstats_.ecn_mark;
    x.new_flow_count = new_flow_count_;
    x.ce_mark = cstats_.ce_mark;
    x.memory_usage = memory_usage_;
    x.drop_overmemory = drop_overmemory_;
    x.new_flows_len = new_flows_.length();
    x.old_flows_len = old_flows_.length();
    return x;
  }

 private:
  // What codel_dequeue works on: the flow being served (dequeue_func, drop_func).
  struct CodelCtx {
    FqCodelQdisc& q;
    Cpu& cpu;
    Flow& flow;
    Packet* dequeue(CodelVars&) {
      Packet* p = flow.head;
      if (!p) return nullptr;
      flow.head = p->next;
      // The flow's next packet waited behind this one and is cold when a deep queue is
      // served: fetched now, it is in cache by this flow's next turn.
      if (flow.head) __builtin_prefetch(flow.head);
      p->next = nullptr;
      q.backlogs_[&flow - q.flows_.get()] -= p->len;
      q.memory_usage_ -= codel_get_mem_usage(*p);
      q.leave(cpu, p);
      return p;
    }
    void drop(Packet* p) {
      cpu.free_reason(p, DropReason::QDISC_DROP);
      q.stats_dropped(cpu);
    }
  };

  // mirrors fq_codel_classify without filters: priority major:minor naming this qdisc
  // and a flow picks it, else the flow hash scaled to the table.
  uint32_t classify(Packet& p) const {
    if ((p.priority & 0xffff0000u) == handle() && (p.priority & 0xffffu) > 0 &&
        (p.priority & 0xffffu) <= flows_cnt_)
      return (p.priority & 0xffffu) - 1;
    return reciprocal_scale(skb_get_hash(p), flows_cnt_);
  }

  // mirrors fq_codel_drop: drop from the head of the flow with the largest backlog.
  uint32_t drop(Cpu& cpu, uint32_t max_packets, PacketList& to_free) {
    uint32_t maxbacklog = 0, idx = 0;
    for (uint32_t i = 0; i < flows_cnt_; ++i)
      if (backlogs_[i] > maxbacklog) {
        maxbacklog = backlogs_[i];
        idx = i;
      }
    const uint32_t threshold = maxbacklog >> 1;  // drop half the fat flow's backlog
    Flow& flow = flows_[idx];
    uint32_t len = 0, mem = 0, i = 0;
    do {
      Packet* p = flow.head;
      flow.head = p->next;
      len += p->len;
      mem += codel_get_mem_usage(*p);
      to_free.push_back(p);
    } while (++i < max_packets && len < threshold);
    flow.cvars.count += i;  // tell CoDel to raise its signal too
    backlogs_[idx] -= len;
    memory_usage_ -= mem;
    QdiscStatsBlock& s = st(cpu);
    s.drops.add(i);
    s.backlog.add(-uint64_t{len});
    s.qlen.add(-uint64_t{i});
    backlog_ -= len;
    qlen_ -= i;
    return idx;
  }

  // mirrors fq_codel_dequeue
  Packet* dequeue_inner(Cpu& cpu) override {
    Packet* p = nullptr;
    for (;;) {
      ListHead* head = &new_flows_;
      if (head->empty()) {
        head = &old_flows_;
        if (head->empty()) break;
      }
      Flow& flow = flow_of(head->next);
      if (flow.deficit <= 0) {
        flow.deficit += static_cast<int32_t>(quantum_);
        flow.chain.move_tail(old_flows_);
        continue;
      }
      CodelCtx ctx{*this, cpu, flow};
      p = codel_dequeue(ctx, backlog_, cparams_, flow.cvars, cstats_, cpu.clock());
      if (!p) {
        // Force a pass through old_flows so new flows cannot starve them.
        if (head == &new_flows_ && !old_flows_.empty())
          flow.chain.move_tail(old_flows_);
        else
          flow.chain.unlink();
        continue;
      }
      flow.deficit -= static_cast<int32_t>(p->len);
      break;
    }
    codel_dequeue_done(*this, cpu, cstats_, p);
    return p;
  }

  std::unique_ptr<Flow[]> flows_;
  std::unique_ptr<uint32_t[]> backlogs_;
  uint32_t flows_cnt_ = 0;
  uint32_t quantum_ = 0;
  uint32_t drop_batch_ = 0;
  uint32_t memory_limit_ = 0;
  uint32_t limit_ = 0;
  CodelParams cparams_;
  CodelStats cstats_;
  uint32_t memory_usage_ = 0;
  uint32_t drop_overmemory_ = 0;
  uint32_t drop_overlimit_ = 0;
  uint32_t new_flow_count_ = 0;
  ListHead new_flows_;
  ListHead old_flows_;
};

}  // namespace

const QdiscRegistrar kFqCodel{
    {"fq_codel", [] { return std::unique_ptr<Qdisc>(new FqCodelQdisc); }}};  // fq_codel_qdisc_ops

}  // namespace pktpath
