// sfq: stochastic fairness queuing (net/sched/sch_sfq.c). Packets hash (keyed by the
// perturbation) to one of `divisor` buckets, each bucket to one of `flows` slots; active
// slots form a ring served by deficit round robin in quantum units scaled by 8. Slots
// are also on per-depth lists (dep[d]: slots holding d packets) so that on overflow the
// longest slot loses a packet (its tail, or its head with headdrop) in O(1). Tables are
// allocated at init. The perturbation comes from a fixed-seed generator, so runs repeat;
// it changes every `perturb` seconds of the Cpu's clock, checked on enqueue instead of a
// timer, and queued packets are rehashed then as the kernel does. Locked.
#include "sched/sch_sfq.h"

#include <algorithm>
#include <memory>
#include <string>

#include "core/flow_dissector.h"
#include "core/netdevice.h"
#include "sched/peek_dequeued.h"
#include "sched/qdisc.h"

namespace pktpath {

namespace {

inline constexpr uint32_t kEthHeaderLen = 14;
inline constexpr uint32_t kSfqMaxDepth = 127;  // packets per flow
inline constexpr uint32_t kSfqDefaultFlows = 128;
inline constexpr uint32_t kSfqMaxFlows = 0x10000 - kSfqMaxDepth - 1;
inline constexpr uint16_t kSfqEmptySlot = 0xffff;
inline constexpr uint32_t kSfqDefaultDivisor = 1024;
inline constexpr unsigned kSfqAllotShift = 3;
inline constexpr uint64_t kNsPerSec = 1000000000ull;
inline constexpr uint64_t kPerturbSeed = 0x5f3759df9e3779b9ull;

// SFQ_ALLOT_SIZE: bytes in units of 8, rounded up.
inline int32_t allot_size(uint32_t x) {
  return static_cast<int32_t>((x + (1u << kSfqAllotShift) - 1) >> kSfqAllotShift);
}

// splitmix64: the perturbation sequence (prandom_u32's place), one state per qdisc.
inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

using sfq_index = uint16_t;

// Indices below kSfqMaxFlows are slots; kSfqMaxFlows + d is dep[d].
struct SfqHead {
  sfq_index next;
  sfq_index prev;
};

struct SfqSlot {
  Packet* head = nullptr;  // skblist_next
  Packet* tail = nullptr;  // skblist_prev
  sfq_index qlen = 0;
  sfq_index next = 0;  // next slot in the round-robin ring
  SfqHead dep{};
  uint16_t hash = 0;  // the bucket (index in ht)
  int16_t allot = 0;  // credit, in units of 8 bytes
  uint32_t backlog = 0;
};

// skb->prev for a slot's list, kept in the control block (slots drop from the tail).
inline Packet* prev_of(const Packet* p) { return reinterpret_cast<Packet*>(p->cb[1]); }
inline void set_prev(Packet* p, Packet* prev) { p->cb[1] = reinterpret_cast<uintptr_t>(prev); }

class SfqQdisc final : public PeekDequeuedQdisc {
 public:
  SfqQdisc() : PeekDequeuedQdisc("sfq", 0) {}

  // mirrors sfq_enqueue (no filters, no RED)
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    if (PP_UNLIKELY(perturb_ns_ != 0)) maybe_perturb(cpu);
    const uint32_t hash = classify(*p);
    sfq_index x = ht_[hash];
    SfqSlot* slot;
    if (x == kSfqEmptySlot) {
      x = dep_[0].next;  // a free slot
      if (x >= kSfqMaxFlows) return qdisc_drop(cpu, p, to_free);
      ht_[hash] = x;
      slot = &slots_[x];
      slot->hash = static_cast<uint16_t>(hash);
      slot->backlog = 0;
    } else {
      slot = &slots_[x];
      if (slot->qlen >= maxdepth_) {
        if (!headdrop_) return qdisc_drop(cpu, p, to_free);
        // Full flow with headdrop: the oldest packet of the flow goes instead.
        Packet* head = slot_dequeue_head(*slot);
        const int32_t delta = static_cast<int32_t>(head->len) - static_cast<int32_t>(p->len);
        backlog_ -= delta;
        slot->backlog -= delta;
        st(cpu).backlog.add(static_cast<uint64_t>(-int64_t{delta}));
        qdisc_drop(cpu, head, to_free);
        slot_queue_add(*slot, p);
        tree_reduce_backlog(cpu, 0, delta);
        return NET_XMIT_CN;
      }
    }
    const uint32_t len = p->len;
    slot->backlog += len;
    slot_queue_add(*slot, p);
    sfq_inc(x);
    if (slot->qlen == 1) {  // a new flow joins the end of the ring
      if (tail_ == nullptr) {
        slot->next = x;
      } else {
        slot->next = tail_->next;
        tail_->next = x;
      }
      tail_ = slot;
      slot->allot = static_cast<int16_t>(scaled_quantum_);
    }
    join(cpu, p);
    if (qlen_ <= limit_) return NET_XMIT_SUCCESS;

    const sfq_index qlen = slot->qlen;
    const uint32_t dropped = drop(cpu, to_free);
    // NET_XMIT_CN only if the drop hit this flow.
    if (qlen != slot->qlen) {
      tree_reduce_backlog(cpu, 0, static_cast<int32_t>(dropped - len));
      return NET_XMIT_CN;
    }
    tree_reduce_backlog(cpu, 1, static_cast<int32_t>(dropped));
    return NET_XMIT_SUCCESS;
  }

  // sfq_reset dequeues everything; here the packets are dropped (QDISC_DROP) without
  // counting them as sent, and the tables start over.
  void reset(Cpu& cpu) override {
    reset_counters(cpu);
    for (uint32_t i = 0; i < maxflows_; ++i)
      while (slots_[i].qlen)
        cpu.free_reason(slot_dequeue_head_counted(static_cast<sfq_index>(i)),
                        DropReason::QDISC_DROP);
    init_tables();
  }

  // mirrors sfq_init (+ sfq_change's checks on the options)
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    limit_ = kSfqMaxDepth;
    maxdepth_ = kSfqMaxDepth;
    divisor_ = kSfqDefaultDivisor;
    maxflows_ = kSfqDefaultFlows;
    quantum_ = dev.mtu() + kEthHeaderLen;
    perturb_period_ = 0;
    headdrop_ = false;
    rng_ = kPerturbSeed;
    perturbation_ = splitmix64(rng_);
    if (const auto* o = opts.get<SfqOptions>()) {
      if (o->divisor && ((o->divisor & (o->divisor - 1)) != 0 || o->divisor > 65536)) {
        return unexpected("sfq: divisor must be a power of 2, at most 65536");
      }
      if (static_cast<int32_t>(o->quantum) < 0) return unexpected("sfq: invalid quantum");
      if (o->perturb_period < 0) return unexpected("sfq: invalid perturb");
      if (o->quantum) quantum_ = o->quantum;
      perturb_period_ = o->perturb_period;
      if (o->flows) maxflows_ = std::min(o->flows, kSfqMaxFlows);
      if (o->divisor) {
        divisor_ = o->divisor;
        maxflows_ = std::min(maxflows_, divisor_);
      }
      if (o->depth) maxdepth_ = std::min(o->depth, kSfqMaxDepth);
      headdrop_ = o->headdrop;
      if (o->limit) {
        limit_ = std::min(o->limit, maxdepth_ * maxflows_);
        maxflows_ = std::min(maxflows_, limit_);
      }
    } else if (!opts.empty()) {
      return unexpected("bad options for sfq");
    }
    scaled_quantum_ = allot_size(quantum_);
    perturb_ns_ = static_cast<uint64_t>(perturb_period_) * kNsPerSec;
    next_perturb_ns_ = 0;  // armed by the first enqueue
    ht_ = std::make_unique<sfq_index[]>(divisor_);
    slots_ = std::make_unique<SfqSlot[]>(maxflows_);
    init_tables();
    set_flags(limit_ >= 1 ? (flags() | TCQ_F_CAN_BYPASS) : (flags() & ~TCQ_F_CAN_BYPASS));
    return {};
  }
  // sfq has no change op in Linux 6.1 (tc qdisc change answers EOPNOTSUPP).
  Status change(NetDevice&, const QdiscOptions&) override {
    return unexpected("sfq: change is not supported (delete it and add it again)");
  }

  // mirrors sfq_dump
  QdiscOptions dump() const override {
    SfqOptions o;
    o.quantum = quantum_;
    o.perturb_period = perturb_period_;
    o.limit = limit_;
    o.divisor = divisor_;
    o.flows = maxflows_;
    o.depth = maxdepth_;
    o.headdrop = headdrop_;
    return o;
  }

 private:
  SfqHead& dep_head(sfq_index v) {
    return v < kSfqMaxFlows ? slots_[v].dep : dep_[v - kSfqMaxFlows];
  }

  // mirrors sfq_classify without filters
  uint32_t classify(const Packet& p) const {
    if ((p.priority & 0xffff0000u) == handle() && (p.priority & 0xffffu) > 0 &&
        (p.priority & 0xffffu) <= divisor_)
      return (p.priority & 0xffffu) - 1;
    return skb_get_hash_perturb(p, perturbation_) & (divisor_ - 1);  // sfq_hash
  }

  // mirrors sfq_link: put slot x at the front of dep[its qlen].
  void sfq_link(sfq_index x) {
    SfqSlot& slot = slots_[x];
    const sfq_index p = static_cast<sfq_index>(slot.qlen + kSfqMaxFlows);
    const sfq_index n = dep_[slot.qlen].next;
    slot.dep.next = n;
    slot.dep.prev = p;
    dep_[slot.qlen].next = x;
    dep_head(n).prev = x;
  }
  // sfq_unlink; returns whether x was alone on its depth list.
  bool sfq_unlink(sfq_index x) {
    const sfq_index n = slots_[x].dep.next, p = slots_[x].dep.prev;
    dep_head(p).next = n;
    dep_head(n).prev = p;
    return n == p;
  }
  // mirrors sfq_dec
  void sfq_dec(sfq_index x) {
    const bool alone = sfq_unlink(x);
    const uint32_t d = slots_[x].qlen--;
    if (alone && cur_depth_ == d) cur_depth_--;
    sfq_link(x);
  }
  // mirrors sfq_inc
  void sfq_inc(sfq_index x) {
    sfq_unlink(x);
    const uint32_t d = ++slots_[x].qlen;
    if (cur_depth_ < d) cur_depth_ = d;
    sfq_link(x);
  }

  static Packet* slot_dequeue_tail(SfqSlot& s) {
    Packet* p = s.tail;
    s.tail = prev_of(p);
    if (s.tail)
      s.tail->next = nullptr;
    else
      s.head = nullptr;
    p->next = nullptr;
    return p;
  }
  static Packet* slot_dequeue_head(SfqSlot& s) {
    Packet* p = s.head;
    s.head = p->next;
    if (s.head)
      set_prev(s.head, nullptr);
    else
      s.tail = nullptr;
    p->next = nullptr;
    return p;
  }
  static void slot_queue_add(SfqSlot& s, Packet* p) {
    set_prev(p, s.tail);
    p->next = nullptr;
    if (s.tail)
      s.tail->next = p;
    else
      s.head = p;
    s.tail = p;
  }
  // A slot's head leaves with the depth lists kept right (reset).
  Packet* slot_dequeue_head_counted(sfq_index x) {
    Packet* p = slot_dequeue_head(slots_[x]);
    sfq_dec(x);
    return p;
  }

  // qdisc_drop: counted as a drop, freed by the caller under QDISC_DROP.
  int qdisc_drop(const Cpu& cpu, Packet* p, PacketList& to_free) {
    stats_dropped(cpu);
    to_free.push_back(p);
    return NET_XMIT_DROP;
  }

  // mirrors sfq_drop: the tail (head with headdrop) of the longest slot.
  uint32_t drop(Cpu& cpu, PacketList& to_free) {
    const uint32_t d = cur_depth_;
    sfq_index x;
    if (d > 1) {
      x = dep_[d].next;
    } else if (d == 1) {
      // Every slot holds one packet: the next in the ring goes, and leaves the ring.
      x = tail_->next;
      tail_->next = slots_[x].next;
      ht_[slots_[x].hash] = kSfqEmptySlot;
    } else {
      return 0;
    }
    SfqSlot& slot = slots_[x];
    Packet* p = headdrop_ ? slot_dequeue_head(slot) : slot_dequeue_tail(slot);
    const uint32_t len = p->len;
    slot.backlog -= len;
    sfq_dec(x);
    leave(cpu, p);
    qdisc_drop(cpu, p, to_free);
    return len;
  }

  // mirrors sfq_dequeue
  Packet* dequeue_inner(Cpu& cpu) override {
    if (tail_ == nullptr) return nullptr;  // no active slot
    sfq_index a;
    SfqSlot* slot;
    for (;;) {
      a = tail_->next;
      slot = &slots_[a];
      if (slot->allot > 0) break;
      tail_ = slot;
      slot->allot = static_cast<int16_t>(slot->allot + scaled_quantum_);
    }
    Packet* p = slot_dequeue_head(*slot);
    sfq_dec(a);
    slot->backlog -= p->len;
    stats_dequeued(cpu, p);
    --qlen_;
    backlog_ -= p->len;
    if (slot->qlen == 0) {  // the slot leaves the ring
      ht_[slot->hash] = kSfqEmptySlot;
      const sfq_index next_a = slot->next;
      if (a == next_a) {
        tail_ = nullptr;  // no more active slots
        return p;
      }
      tail_->next = next_a;
    } else {
      slot->allot = static_cast<int16_t>(slot->allot - allot_size(p->len));
    }
    return p;
  }

  // sfq_init's table set-up: empty depth lists, empty buckets, every slot on dep[0].
  void init_tables() {
    for (uint32_t i = 0; i <= kSfqMaxDepth; ++i) {
      dep_[i].next = static_cast<sfq_index>(i + kSfqMaxFlows);
      dep_[i].prev = static_cast<sfq_index>(i + kSfqMaxFlows);
    }
    cur_depth_ = 0;
    tail_ = nullptr;
    std::fill_n(ht_.get(), divisor_, kSfqEmptySlot);
    for (uint32_t i = 0; i < maxflows_; ++i) {
      slots_[i] = SfqSlot{};
      sfq_link(static_cast<sfq_index>(i));
    }
  }

  // mirrors sfq_perturbation: a new key every perturb seconds; queued packets rehashed.
  void maybe_perturb(Cpu& cpu) {
    const uint64_t now = cpu.clock().now_ns();
    if (next_perturb_ns_ == 0) next_perturb_ns_ = now + perturb_ns_;
    if (now < next_perturb_ns_) return;
    next_perturb_ns_ = now + perturb_ns_;
    perturbation_ = splitmix64(rng_);
    if (tail_) rehash(cpu);
  }

  // mirrors sfq_rehash: take every packet out, slot by slot, and put it back under the
  // new hash. One that finds no slot or a full one is dropped (QDISC_DROP, counted).
  void rehash(Cpu& cpu) {
    PacketList list;
    for (uint32_t i = 0; i < maxflows_; ++i) {
      SfqSlot& slot = slots_[i];
      if (!slot.qlen) continue;
      while (slot.qlen) list.push_back(slot_dequeue_head_counted(static_cast<sfq_index>(i)));
      slot.backlog = 0;
      ht_[slot.hash] = kSfqEmptySlot;
    }
    tail_ = nullptr;
    uint32_t dropped = 0, drop_len = 0;
    while (Packet* p = list.pop_front()) {
      const uint32_t hash = skb_get_hash_perturb(*p, perturbation_) & (divisor_ - 1);
      sfq_index x = ht_[hash];
      if (x == kSfqEmptySlot) {
        x = dep_[0].next;
        if (x < kSfqMaxFlows) {
          ht_[hash] = x;
          slots_[x].hash = static_cast<uint16_t>(hash);
        }
      }
      if (x >= kSfqMaxFlows || slots_[x].qlen >= maxdepth_) {
        ++dropped;
        drop_len += p->len;
        backlog_ -= p->len;
        cpu.free_reason(p, DropReason::QDISC_DROP);
        continue;
      }
      SfqSlot& slot = slots_[x];
      slot_queue_add(slot, p);
      slot.backlog += p->len;
      sfq_inc(x);
      if (slot.qlen == 1) {
        if (tail_ == nullptr) {
          slot.next = x;
        } else {
          slot.next = tail_->next;
          tail_->next = x;
        }
        tail_ = &slot;
        slot.allot = static_cast<int16_t>(scaled_quantum_);
      }
    }
    if (dropped) {
      qlen_ -= dropped;
      QdiscStatsBlock& s = st(cpu);
      s.qlen.add(-uint64_t{dropped});
      s.backlog.add(-uint64_t{drop_len});
      s.drops.add(dropped);
      tree_reduce_backlog(cpu, static_cast<int32_t>(dropped), static_cast<int32_t>(drop_len));
    }
  }

  uint32_t limit_ = 0;
  uint32_t divisor_ = 0;
  bool headdrop_ = false;
  uint32_t maxdepth_ = 0;
  uint64_t perturbation_ = 0;
  uint32_t cur_depth_ = 0;  // depth of the longest slot
  int32_t scaled_quantum_ = 0;
  std::unique_ptr<sfq_index[]> ht_;
  std::unique_ptr<SfqSlot[]> slots_;
  SfqSlot* tail_ = nullptr;  // current slot in the round
  SfqHead dep_[kSfqMaxDepth + 1];
  uint32_t maxflows_ = 0;
  int32_t perturb_period_ = 0;
  uint32_t quantum_ = 0;
  uint64_t perturb_ns_ = 0;
  uint64_t next_perturb_ns_ = 0;
  uint64_t rng_ = 0;
};

}  // namespace

const QdiscRegistrar kSfq{
    {"sfq", [] { return std::unique_ptr<Qdisc>(new SfqQdisc); }}};  // sfq_qdisc_ops

}  // namespace pktpath
