// fq: fair queue with per-flow pacing (net/sched/sch_fq.c). Every packet belongs to a
// flow; flows take turns by deficit round robin with `quantum` bytes of credit per turn
// (a new flow starts with `initial_quantum`), new flows before old ones. A flow whose
// next packet may not leave yet (its time_to_send, an EDT timestamp in Packet::tstamp_ns,
// or the pacing delay `maxrate` imposes) is throttled: it leaves the round robin for the
// delayed set, ordered by time_next_packet, and the qdisc watchdog reschedules the qdisc
// when the first of them is due. Priority TC_PRIO_CONTROL packets skip all of it through
// the internal (highprio) fifo. Locked.
//
// pktpath has no sockets: every packet is what the kernel calls orphaned, and its flow
// key is the flow hash under orphan_mask, made odd ((hash & mask) << 1 | 1) as
// fq_classify does. So there is no per-socket sk_pacing_rate: pacing comes from
// `maxrate` and from EDT timestamps only.
//
// Flows are allocated when first seen (as the kernel's kmem_cache_zalloc) from blocks
// kept by the qdisc, and freed back to it by the garbage collection of flows detached
// for more than 3 s. Where the kernel has an rb-tree per hash bucket and per flow, this
// keeps a chain sorted by key per bucket (a bucket holds a few flows: the key space is
// orphan_mask + 1) and a flow's packets sorted by time_to_send (O(1) when timestamps
// rise, as they do unless EDT stamps go backwards); the delayed set is a binary heap,
// ties in insertion order as in the kernel's rb-tree.
#include "sched/sch_fq.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/flow_dissector.h"
#include "core/inet_ecn.h"
#include "core/netdevice.h"
#include "sched/peek_dequeued.h"
#include "sched/qdisc.h"
#include "sched/qdisc_watchdog.h"

namespace pktpath {

namespace {

inline constexpr uint32_t kEthHeaderLen = 14;
inline constexpr uint64_t kNsPerSec = 1'000'000'000ull;
inline constexpr uint64_t kNsPerUsec = 1000;
inline constexpr uint64_t kNoRate = ~uint64_t{0};   // flow_max_rate ~0UL
inline constexpr uint64_t kNoTime = ~uint64_t{0};   // time_next_delayed_flow when none
inline constexpr uint64_t kGcAgeNs = 3 * kNsPerSec;  // FQ_GC_AGE (3 * HZ)
inline constexpr unsigned kGcMax = 8;                // FQ_GC_MAX
inline constexpr uint32_t kTcPrioControl = 7;        // TC_PRIO_CONTROL
inline constexpr uint32_t kTcPrioMax = 15;           // TC_PRIO_MAX
inline constexpr uint32_t kMaxBucketsLog = 18;       // ilog2(256 * 1024)
inline constexpr uint32_t kFlowsPerBlock = 64;

// fq_skb_cb: the packet's time_to_send while it is queued here.
uint64_t& time_to_send(Packet* p) { return p->cb[0]; }

// mirrors hash_ptr (hash_64 with GOLDEN_RATIO_64) on the flow key.
uint32_t hash_key(uint64_t key, uint32_t bits) {
  return static_cast<uint32_t>((key * 0x61C8864680B583EBull) >> (64 - bits));
}

struct FqFlow {
  Packet* head = nullptr;  // packets by time_to_send
  Packet* tail = nullptr;
  FqFlow* next = nullptr;         // next in the new/old list (fq_flow->next)
  FqFlow* bucket_next = nullptr;  // next in its bucket's chain (fq_node)
  uint64_t key = 0;               // fq_flow->sk
  uint64_t age_ns = 0;            // when it was detached (fq_flow->age)
  uint64_t time_next_packet = 0;
  uint64_t throttle_seq = 0;  // order among equal time_next_packet in the delayed set
  int32_t qlen = 0;
  int32_t credit = 0;
  bool detached = false;   // on no list, waiting for a packet or the gc
  bool throttled = false;  // in the delayed set (f->next == &throttled)
};

struct FlowHead {  // fq_flow_head
  FqFlow* first = nullptr;
  FqFlow* last = nullptr;
  // mirrors fq_flow_add_tail
  void add_tail(FqFlow* f) {
    if (first)
      last->next = f;
    else
      first = f;
    last = f;
    f->next = nullptr;
  }
};

class FqQdisc final : public PeekDequeuedQdisc {
 public:
  FqQdisc() : PeekDequeuedQdisc("fq", 0) {}

  // mirrors fq_enqueue (6.1: the packet limit, the horizon, the per-flow limit)
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    if (PP_UNLIKELY(qlen_ >= limit_)) return drop(cpu, p, to_free);
    const uint64_t now = cpu.clock().now_ns();
    if (!p->tstamp_ns) {
      time_to_send(p) = now;
    } else {
      // fq_packet_beyond_horizon: a timestamp too far in the future.
      if (PP_UNLIKELY(static_cast<int64_t>(p->tstamp_ns) > static_cast<int64_t>(now + horizon_ns_))) {
        if (horizon_drop_) {
          ++stat_horizon_drops_;
          return drop(cpu, p, to_free);
        }
        ++stat_horizon_caps_;
        p->tstamp_ns = now + horizon_ns_;
      }
      time_to_send(p) = p->tstamp_ns;
    }
    FqFlow* f = classify(*p, now);
    if (PP_UNLIKELY(f != &internal_ && f->qlen >= static_cast<int32_t>(flow_plimit_))) {
      ++stat_flows_plimit_;
      return drop(cpu, p, to_free);
    }
    ++f->qlen;
    if (f->detached) {
      f->detached = false;
      new_flows_.add_tail(f);
      if (now > f->age_ns + flow_refill_delay_ns_)
        f->credit = std::max(f->credit, static_cast<int32_t>(quantum_));
      --inactive_flows_;
    }
    queue_add(*f, p);
    if (PP_UNLIKELY(f == &internal_)) ++stat_internal_packets_;
    join(cpu, p);
    return NET_XMIT_SUCCESS;
  }

  // mirrors fq_reset
  void reset(Cpu& cpu) override {
    reset_counters(cpu);
    purge(internal_, cpu);
    for (FqFlow*& chain : buckets_) {
      while (FqFlow* f = chain) {
        chain = f->bucket_next;
        purge(*f, cpu);
        free_flow(f);
      }
    }
    new_flows_ = {};
    old_flows_ = {};
    delayed_.clear();
    flows_ = inactive_flows_ = throttled_flows_ = 0;
    time_next_delayed_flow_ = kNoTime;
    watchdog_.cancel();
  }

  // mirrors fq_init: the defaults, then the options.
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    const uint32_t mtu = dev.mtu() + kEthHeaderLen;  // psched_mtu
    limit_ = 10000;
    flow_plimit_ = 100;
    quantum_ = 2 * mtu;
    initial_quantum_ = 10 * mtu;
    flow_refill_delay_ns_ = 40'000'000;  // msecs_to_jiffies(40)
    flow_max_rate_ = kNoRate;
    rate_enable_ = true;
    trees_log_ = 10;  // ilog2(1024)
    orphan_mask_ = 1024 - 1;
    low_rate_threshold_ = 550000 / 8;
    timer_slack_ns_ = 10 * kNsPerUsec;
    horizon_ns_ = 10 * kNsPerSec;
    horizon_drop_ = true;
    ce_threshold_ns_ = kNsPerUsec * ~0u;  // 4294 s: off
    if (Status st = change(dev, opts); !st) return st;
    if (buckets_.empty()) buckets_.assign(size_t{1} << trees_log_, nullptr);
    delayed_.reserve(1024);
    return {};
  }

  // mirrors fq_change. Lowering the limit below what is queued is refused (the kernel
  // drops the excess; no traffic runs while the control thread changes a qdisc).
  Status change(NetDevice&, const QdiscOptions& opts) override {
    const auto* o = opts.get<FqOptions>();
    if (!o) {
      if (opts.empty()) return {};
      return unexpected("bad options for fq");
    }
    if (o->buckets_log && (*o->buckets_log < 1 || *o->buckets_log > kMaxBucketsLog)) {
      return unexpected("fq: buckets must be 2..262144");
    }
    if (o->quantum && (*o->quantum == 0 || *o->quantum > (1u << 20))) return unexpected("fq: invalid quantum");
    if (o->initial_quantum && *o->initial_quantum > static_cast<uint32_t>(INT32_MAX)) {
      return unexpected("fq: invalid initial_quantum");
    }
    if (o->limit && *o->limit < qlen_) return unexpected("fq: limit below the current queue length");
    if (o->limit) limit_ = *o->limit;
    if (o->flow_limit) flow_plimit_ = *o->flow_limit;
    if (o->quantum) quantum_ = *o->quantum;
    if (o->initial_quantum) initial_quantum_ = *o->initial_quantum;
    if (o->maxrate) flow_max_rate_ = *o->maxrate == ~0u ? kNoRate : *o->maxrate;
    if (o->low_rate_threshold) low_rate_threshold_ = *o->low_rate_threshold;
    if (o->pacing) rate_enable_ = *o->pacing;
    if (o->refill_delay_us) flow_refill_delay_ns_ = uint64_t{*o->refill_delay_us} * kNsPerUsec;
    if (o->orphan_mask) orphan_mask_ = *o->orphan_mask;
    if (o->ce_threshold_us) ce_threshold_ns_ = uint64_t{*o->ce_threshold_us} * kNsPerUsec;
    if (o->timer_slack_ns) timer_slack_ns_ = *o->timer_slack_ns;
    if (o->horizon_us) horizon_ns_ = uint64_t{*o->horizon_us} * kNsPerUsec;
    if (o->horizon_drop) horizon_drop_ = *o->horizon_drop;
    if (o->buckets_log) resize(*o->buckets_log);
    return {};
  }

  // mirrors fq_dump
  QdiscOptions dump() const override {
    FqOptions o;
    o.limit = limit_;
    o.flow_limit = flow_plimit_;
    o.quantum = quantum_;
    o.initial_quantum = initial_quantum_;
    o.pacing = rate_enable_;
    o.maxrate = static_cast<uint32_t>(std::min<uint64_t>(flow_max_rate_, ~0u));
    o.refill_delay_us = static_cast<uint32_t>(flow_refill_delay_ns_ / kNsPerUsec);
    o.orphan_mask = orphan_mask_;
    o.low_rate_threshold = low_rate_threshold_;
    o.ce_threshold_us = static_cast<uint32_t>(ce_threshold_ns_ / kNsPerUsec);
    o.buckets_log = trees_log_;
    o.timer_slack_ns = timer_slack_ns_;
    o.horizon_us = static_cast<uint32_t>(horizon_ns_ / kNsPerUsec);
    o.horizon_drop = horizon_drop_;
    return o;
  }

  // mirrors fq_dump_stats
  QdiscXstats xstats(uint64_t now_ns) const override {
    FqXstats x;
    x.gc_flows = stat_gc_flows_;
    x.highprio_packets = stat_internal_packets_;
    x.throttled = stat_throttled_;
    x.flows_plimit = stat_flows_plimit_;
    x.pkts_too_long = stat_pkts_too_long_;
    x.allocation_errors = 0;  // a flow allocation that fails throws here
    // With no delayed flow the kernel's arithmetic wraps negative, which tc does not
    // print; 0 says the same without depending on the clock's origin.
    x.time_next_delayed_flow = time_next_delayed_flow_ == kNoTime
                                   ? 0
                                   : static_cast<int64_t>(time_next_delayed_flow_ + timer_slack_ns_ - now_ns);
    x.flows = flows_;
    x.inactive_flows = inactive_flows_;
    x.throttled_flows = throttled_flows_;
    x.unthrottle_latency_ns = static_cast<uint32_t>(std::min<uint64_t>(unthrottle_latency_ns_, ~0u));
    x.ce_mark = stat_ce_mark_;
    x.horizon_drops = stat_horizon_drops_;
    x.horizon_caps = stat_horizon_caps_;
    return x;
  }

 private:
  int drop(Cpu& cpu, Packet* p, PacketList& to_free) {  // qdisc_drop
    stats_dropped(cpu);
    to_free.push_back(p);
    return NET_XMIT_DROP;
  }

  // mirrors fq_flow_purge: free what the flow holds, counted on `cpu` as QDISC_DROP.
  static void purge(FqFlow& f, Cpu& cpu) {
    while (Packet* p = f.head) {
      f.head = p->next;
      p->next = nullptr;
      cpu.free_reason(p, DropReason::QDISC_DROP);
    }
    f.tail = nullptr;
    f.qlen = 0;
  }

  FqFlow* alloc_flow() {
    if (!free_flows_) {
      blocks_.push_back(std::make_unique<FqFlow[]>(kFlowsPerBlock));
      FqFlow* b = blocks_.back().get();
      for (uint32_t i = 0; i < kFlowsPerBlock; ++i) {
        b[i].next = free_flows_;
        free_flows_ = &b[i];
      }
    }
    FqFlow* f = free_flows_;
    free_flows_ = f->next;
    *f = FqFlow{};  // kmem_cache_zalloc
    return f;
  }
  void free_flow(FqFlow* f) {
    f->next = free_flows_;
    free_flows_ = f;
  }

  // mirrors fq_gc: on the way to `key` in its bucket, free up to FQ_GC_MAX flows detached
  // for more than FQ_GC_AGE.
  void gc(FqFlow*& chain, uint64_t key, uint64_t now) {
    FqFlow* tofree[kGcMax];
    unsigned fcnt = 0;
    for (FqFlow* f = chain; f && f->key != key; f = f->bucket_next) {
      if (f->detached && now > f->age_ns + kGcAgeNs) {
        tofree[fcnt++] = f;
        if (fcnt == kGcMax) break;
      }
    }
    if (!fcnt) return;
    for (unsigned i = 0; i < fcnt; ++i) {
      FqFlow** pp = &chain;
      while (*pp != tofree[i]) pp = &(*pp)->bucket_next;
      *pp = tofree[i]->bucket_next;
      free_flow(tofree[i]);
    }
    flows_ -= fcnt;
    inactive_flows_ -= fcnt;
    stat_gc_flows_ += fcnt;
  }

  // mirrors fq_classify for packets without a socket: control priority to the internal
  // fifo, else the flow of ((hash & orphan_mask) << 1) | 1, created detached with
  // initial_quantum of credit when new.
  FqFlow* classify(Packet& p, uint64_t now) {
    if (PP_UNLIKELY((p.priority & kTcPrioMax) == kTcPrioControl)) return &internal_;
    const uint64_t key = (uint64_t{skb_get_hash(p) & orphan_mask_} << 1) | 1;
    FqFlow*& chain = buckets_[hash_key(key, trees_log_)];
    if (flows_ >= (2u << trees_log_) && inactive_flows_ > flows_ / 2) gc(chain, key, now);
    FqFlow** pp = &chain;
    for (; *pp && (*pp)->key < key; pp = &(*pp)->bucket_next) {
    }
    if (*pp && (*pp)->key == key) return *pp;
    FqFlow* f = alloc_flow();
    f->detached = true;  // fq_flow_set_detached
    f->age_ns = now;
    f->key = key;
    f->credit = static_cast<int32_t>(initial_quantum_);
    f->bucket_next = *pp;
    *pp = f;
    ++flows_;
    ++inactive_flows_;
    return f;
  }

  // mirrors flow_queue_add: in time_to_send order, equal times in arrival order.
  static void queue_add(FqFlow& f, Packet* p) {
    const uint64_t t = time_to_send(p);
    if (!f.head || t >= time_to_send(f.tail)) {
      p->next = nullptr;
      if (!f.head)
        f.head = p;
      else
        f.tail->next = p;
      f.tail = p;
      return;
    }
    Packet** pp = &f.head;
    while (time_to_send(*pp) <= t) pp = &(*pp)->next;
    p->next = *pp;
    *pp = p;
  }

  // mirrors fq_dequeue_skb (the statistics as qdisc_bstats_update at fq_dequeue's end)
  void dequeue_skb(Cpu& cpu, FqFlow& f, Packet* p) {
    f.head = p->next;
    if (!f.head) f.tail = nullptr;
    p->next = nullptr;
    --f.qlen;
    leave(cpu, p);
    QdiscStatsBlock& s = st(cpu);
    s.packets.add(1);
    s.bytes.add(p->len);
  }

  // The delayed set (q->delayed): a min-heap on (time_next_packet, throttle_seq).
  static bool later(const FqFlow* a, const FqFlow* b) {
    return a->time_next_packet != b->time_next_packet ? a->time_next_packet > b->time_next_packet
                                                      : a->throttle_seq > b->throttle_seq;
  }

  // mirrors fq_flow_set_throttled
  void set_throttled(FqFlow* f) {
    f->throttle_seq = throttle_seq_++;
    delayed_.push_back(f);
    std::push_heap(delayed_.begin(), delayed_.end(), later);
    ++throttled_flows_;
    ++stat_throttled_;
    f->throttled = true;
    if (time_next_delayed_flow_ > f->time_next_packet) time_next_delayed_flow_ = f->time_next_packet;
  }

  // mirrors fq_check_throttled: flows now due go back to old_flows.
  void check_throttled(uint64_t now) {
    if (time_next_delayed_flow_ > now) return;
    // Unthrottle latency EWMA: how late the dequeue came.
    const uint64_t sample = now - time_next_delayed_flow_;
    unthrottle_latency_ns_ -= unthrottle_latency_ns_ >> 3;
    unthrottle_latency_ns_ += sample >> 3;
    time_next_delayed_flow_ = kNoTime;
    while (!delayed_.empty()) {
      FqFlow* f = delayed_.front();
      if (f->time_next_packet > now) {
        time_next_delayed_flow_ = f->time_next_packet;
        break;
      }
      std::pop_heap(delayed_.begin(), delayed_.end(), later);
      delayed_.pop_back();
      --throttled_flows_;  // fq_flow_unset_throttled
      f->throttled = false;
      old_flows_.add_tail(f);
    }
  }

  // mirrors fq_dequeue (6.1)
  Packet* dequeue_inner(Cpu& cpu) override {
    if (!qlen_) return nullptr;
    if (Packet* p = internal_.head) {
      dequeue_skb(cpu, internal_, p);
      return p;
    }
    const uint64_t now = cpu.clock().now_ns();
    check_throttled(now);
    Packet* p = nullptr;
    FqFlow* f = nullptr;
    for (;;) {
      FlowHead* head = &new_flows_;
      if (!head->first) {
        head = &old_flows_;
        if (!head->first) {
          if (time_next_delayed_flow_ != kNoTime) watchdog_.schedule_ns(cpu, time_next_delayed_flow_);
          return nullptr;
        }
      }
      f = head->first;
      if (f->credit <= 0) {
        f->credit += static_cast<int32_t>(quantum_);
        head->first = f->next;
        old_flows_.add_tail(f);
        continue;
      }
      p = f->head;
      if (p) {
        const uint64_t time_next_packet = std::max(time_to_send(p), f->time_next_packet);
        if (now < time_next_packet) {
          head->first = f->next;
          f->time_next_packet = time_next_packet;
          set_throttled(f);
          continue;
        }
        if (PP_UNLIKELY(static_cast<int64_t>(now - time_next_packet - ce_threshold_ns_) > 0)) {
          inet_ecn_set_ce(*p);
          ++stat_ce_mark_;
        }
        dequeue_skb(cpu, *f, p);
        break;
      }
      head->first = f->next;
      // Force a pass through old_flows so that new flows cannot starve them.
      if (head == &new_flows_ && old_flows_.first) {
        old_flows_.add_tail(f);
      } else {
        f->detached = true;  // fq_flow_set_detached
        f->age_ns = now;
        ++inactive_flows_;
      }
    }
    uint64_t plen = p->len;
    f->credit -= static_cast<int32_t>(plen);
    if (!rate_enable_) return p;
    const uint64_t rate = flow_max_rate_;  // no socket: no sk_pacing_rate to take the min with
    // With an EDT timestamp the flow's next time moves only when maxrate is enforced.
    if (!p->tstamp_ns) {
      if (rate <= low_rate_threshold_) {
        f->credit = 0;
      } else {
        plen = std::max<uint64_t>(plen, quantum_);
        if (f->credit > 0) return p;
      }
    }
    if (rate != kNoRate) {
      uint64_t len = plen * kNsPerSec;
      if (PP_LIKELY(rate)) len /= rate;
      // The socket's rate can change later: clamp the delay to one second.
      if (PP_UNLIKELY(len > kNsPerSec)) {
        len = kNsPerSec;
        ++stat_pkts_too_long_;
      }
      // Account for timer drift: this dequeue may come late after time_next_packet.
      if (f->time_next_packet) len -= std::min(len / 2, now - f->time_next_packet);
      f->time_next_packet = now + len;
    }
    return p;
  }

  // mirrors fq_resize / fq_rehash: a new bucket array and the flows moved over. The
  // kernel's rehash also frees the flows due for collection; the control path has no
  // clock here, so they wait for the next gc on their bucket.
  void resize(uint32_t log) {
    if (!buckets_.empty() && log == trees_log_) return;
    std::vector<FqFlow*> old = std::move(buckets_);
    buckets_.assign(size_t{1} << log, nullptr);
    trees_log_ = log;
    for (FqFlow* chain : old) {
      while (FqFlow* f = chain) {
        chain = f->bucket_next;
        FqFlow** pp = &buckets_[hash_key(f->key, log)];
        while (*pp && (*pp)->key < f->key) pp = &(*pp)->bucket_next;
        f->bucket_next = *pp;
        *pp = f;
      }
    }
  }

  // Options.
  uint32_t limit_ = 0;
  uint32_t flow_plimit_ = 0;
  uint32_t quantum_ = 0;
  uint32_t initial_quantum_ = 0;
  uint64_t flow_refill_delay_ns_ = 0;
  uint64_t flow_max_rate_ = kNoRate;
  uint64_t ce_threshold_ns_ = 0;
  uint64_t horizon_ns_ = 0;
  uint32_t orphan_mask_ = 0;
  uint32_t low_rate_threshold_ = 0;
  uint32_t timer_slack_ns_ = 0;
  uint32_t trees_log_ = 0;
  bool rate_enable_ = true;
  bool horizon_drop_ = true;
  // State.
  std::vector<FqFlow*> buckets_;  // q->fq_root
  std::vector<std::unique_ptr<FqFlow[]>> blocks_;
  FqFlow* free_flows_ = nullptr;
  FlowHead new_flows_, old_flows_;
  FqFlow internal_;               // the highprio fifo, never detached nor hashed
  std::vector<FqFlow*> delayed_;  // q->delayed
  uint64_t throttle_seq_ = 0;
  uint64_t time_next_delayed_flow_ = kNoTime;
  uint64_t unthrottle_latency_ns_ = 0;
  uint32_t flows_ = 0, inactive_flows_ = 0, throttled_flows_ = 0;
  uint64_t stat_gc_flows_ = 0, stat_internal_packets_ = 0, stat_throttled_ = 0;
  uint64_t stat_flows_plimit_ = 0, stat_pkts_too_long_ = 0, stat_ce_mark_ = 0;
  uint64_t stat_horizon_drops_ = 0, stat_horizon_caps_ = 0;
  QdiscWatchdog watchdog_{this};  // fq_destroy cancels it
};

}  // namespace

const QdiscRegistrar kFq{{"fq", [] { return std::unique_ptr<Qdisc>(new FqQdisc); }}};  // fq_qdisc_ops

}  // namespace pktpath
