// netem: network emulator (net/sched/sch_netem.c). Packets wait in a time-ordered fifo
// (the tfifo) until their time_to_send: delay with jitter from a distribution table,
// optionally spaced by a rate and released in slots; loss (random, 4-state or
// Gilbert-Elliot), duplication, corruption and reordering on the way in. Randomness
// comes from one seeded generator per qdisc (prandom_u32_state), so a run repeats. A
// Cpu timer (the watchdog) reschedules the qdisc when the head's time comes. Leaf only
// (no child qdisc). Locked: everything under the root lock.
#include "sched/sch_netem.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/netdevice.h"
#include "core/packet_copy.h"
#include "sched/peek_dequeued.h"
#include "sched/qdisc.h"
#include "sched/qdisc_watchdog.h"

namespace pktpath {

namespace {

inline constexpr uint64_t kNsPerSec = 1000000000ull;

// The inverse-CDF tables of iproute2's generators: TABLESIZE steps of the normal CDF
// sampled at x += 0.00005 over [-10, 10.05), every 4th entry kept, scaled by
// NETEM_DIST_SCALE. Pareto (a = 3) is sampled directly; paretonormal is (n + 3p) / 4.
constexpr int kTableSize = 16384;

std::vector<double> normal_inverse() {
  std::vector<double> t(kTableSize + 1, 0.0);
  for (double x = -10.0; x < 10.05; x += .00005) {
    const double cdf = .5 + .5 * std::erf(x / std::sqrt(2.0));
    const long i = std::lrint(kTableSize * cdf);
    t[static_cast<size_t>(i)] = x;
  }
  return t;
}
int pareto_value(int i) {  // i in 1..65536 of 65536
  double d = static_cast<double>(i) / 65536.0;
  d = 1.0 / std::pow(d, 1.0 / 3.0);
  d -= 1.5;
  d *= (4.0 / 3.0) * static_cast<double>(kNetemDistScale);
  if (d > 32767) d = 32767;
  return static_cast<int>(std::rint(d));
}
int16_t clamp_s16(int v) { return static_cast<int16_t>(std::clamp(v, SHRT_MIN, SHRT_MAX)); }

// mirrors prandom_u32_state / prandom_seed_state: L'Ecuyer's four-component Tausworthe
// generator (lfsr113).
struct Prng {
  uint32_t s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  void seed(uint64_t seed) {
    const uint32_t i = static_cast<uint32_t>((seed >> 32) ^ (seed << 10) ^ seed);
    auto lift = [](uint32_t x, uint32_t m) { return x < m ? x + m : x; };
    s1 = lift(i, 2u);
    s2 = lift(i, 8u);
    s3 = lift(i, 16u);
    s4 = lift(i, 128u);
  }
  uint32_t next() {
    auto step = [](uint32_t s, unsigned a, unsigned b, uint32_t c, unsigned d) {
      return ((s & c) << d) ^ (((s << a) ^ s) >> b);
    };
    s1 = step(s1, 6, 13, 4294967294u, 18);
    s2 = step(s2, 2, 27, 4294967288u, 2);
    s3 = step(s3, 13, 21, 4294967280u, 7);
    s4 = step(s4, 3, 12, 4294967168u, 13);
    return s1 ^ s2 ^ s3 ^ s4;
  }
  // mirrors prandom_u32_max: uniform in [0, n).
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((static_cast<uint64_t>(next()) * n) >> 32); }
};

struct Crnd {  // struct crndstate
  uint32_t last = 0;
  uint32_t rho = 0;
};

// Per-packet scratch while queued here (netem_skb_cb): time_to_send in cb[0], an
// insertion number in cb[1] so that equal times leave in arrival order as in the rbtree.
uint64_t& time_to_send(Packet* p) { return p->cb[0]; }
uint64_t& seqno(Packet* p) { return p->cb[1]; }

// The tfifo's out-of-order part (6.1's rbtree): a binary min-heap on (time_to_send,
// seqno) over storage sized at change, so inserting allocates nothing.
class TimeHeap {
 public:
  void reserve(size_t n) { v_.reserve(n); }
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  Packet* first() const { return v_.empty() ? nullptr : v_.front(); }
  uint64_t last_time() const { return last_; }  // skb_rb_last's time_to_send
  void push(Packet* p) {
    if (v_.empty() || time_to_send(p) > last_) last_ = time_to_send(p);
    v_.push_back(p);
    std::push_heap(v_.begin(), v_.end(), later);
  }
  Packet* pop() {
    std::pop_heap(v_.begin(), v_.end(), later);
    Packet* p = v_.back();
    v_.pop_back();
    return p;
  }

 private:
  static bool later(Packet* a, Packet* b) {
    const uint64_t ta = time_to_send(a), tb = time_to_send(b);
    return ta != tb ? ta > tb : seqno(a) > seqno(b);
  }
  std::vector<Packet*> v_;
  uint64_t last_ = 0;  // the greatest time in the heap: only the least leaves
};

class NetemQdisc final : public PeekDequeuedQdisc {
 public:
  NetemQdisc() : PeekDequeuedQdisc("netem", 0) {}

  // mirrors netem_enqueue (no ecn, no GSO segmentation)
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    int count = 1;
    if (duplicate_ && duplicate_ >= get_crandom(&dup_cor_)) ++count;
    if (loss_event()) --count;
    if (count == 0) {
      ++x_.lost;
      stats_dropped(cpu);
      to_free.push_back(p);
      return NET_XMIT_SUCCESS | NET_XMIT_BYPASS_BIT;  // a parent queues nothing, counts a drop
    }
    Packet* dup = nullptr;
    if (count > 1) {
      dup = packet_copy(cpu, p);
      if (dup) dup->dev = p->dev;
    }
    if (corrupt_ && corrupt_ >= get_crandom(&corrupt_cor_)) {
      if (p->is_shared()) {  // skb_unshare
        Packet* c = packet_copy(cpu, p);
        if (!c) {
          stats_dropped(cpu);
          to_free.push_back(p);
          if (dup) to_free.push_back(dup);
          return NET_XMIT_DROP;
        }
        c->dev = p->dev;
        cpu.free(p);
        p = c;
      }
      if (const uint32_t hl = p->headlen()) {
        p->data()[prng_.below(hl)] ^= static_cast<uint8_t>(1u << prng_.below(8));
        ++x_.corrupted;
      }
    }
    if (PP_UNLIKELY(qlen_ >= limit_)) {
      ++x_.limit_drops;
      stats_dropped(cpu);  // qdisc_drop_all
      to_free.push_back(p);
      if (dup) to_free.push_back(dup);  // __qdisc_drop: freed, not counted here
      return NET_XMIT_DROP;
    }
    if (dup) {  // the kernel enqueues the clone at the root; pktpath here
      const uint32_t save = duplicate_;
      duplicate_ = 0;
      ++x_.duplicated;
      enqueue(cpu, dup, to_free);
      duplicate_ = save;
    }
    join(cpu, p);
    const uint64_t now = cpu.clock().now_ns();
    if (gap_ == 0 || counter_ < gap_ - 1 || reorder_ < get_crandom(&reorder_cor_)) {
      int64_t delay = tabledist(latency_, jitter_, &delay_cor_, delay_dist_.get());
      uint64_t base = now;
      if (rate_) {
        const uint64_t* last = nullptr;
        uint64_t head_last = 0;
        if (q_.tail_) last = &time_to_send(q_.tail_);
        if (!heap_.empty() && (!last || heap_.last_time() > *last)) {
          head_last = heap_.last_time();
          last = &head_last;
        }
        if (t_tail_ && (!last || time_to_send(t_tail_) > *last)) last = &time_to_send(t_tail_);
        if (last) {
          // The last queued packet is the reference: its wait is a bonus off the delay.
          delay -= static_cast<int64_t>(*last - base);
          delay = std::max<int64_t>(0, delay);
          base = *last;
        }
        delay += static_cast<int64_t>(packet_time_ns(p->len));
      }
      time_to_send(p) = base + static_cast<uint64_t>(delay);
      ++counter_;
      tfifo_enqueue(p);
    } else {
      // Reorder: this one goes out first, now.
      time_to_send(p) = now;
      counter_ = 0;
      p->next = q_.head;
      q_.head = p;
      if (!q_.tail_) q_.tail_ = p;
      ++q_.count;
      ++x_.reordered;
      st(cpu).requeues.add();
    }
    return NET_XMIT_SUCCESS;
  }

  // mirrors netem_reset
  void reset(Cpu& cpu) override {
    reset_counters(cpu);
    free_all(cpu);
    watchdog_.cancel();
  }

  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    if (opts.empty()) return change(dev, QdiscOptions(NetemOptions{}));
    return change(dev, opts);
  }

  // mirrors netem_change: every field from the options (tc sends them all); the
  // generator reseeded, the correlated generators restarted from it.
  Status change(NetDevice&, const QdiscOptions& opts) override {
    const auto* o = opts.get<NetemOptions>();
    if (!o) return unexpected("bad options for netem");
    if (o->delay_dist && (o->delay_dist->empty() || o->delay_dist->size() > kNetemDistMax)) {
      return unexpected("netem: distribution table size out of range");  // get_dist_table
    }
    if (o->slot_min_ns < 0 || o->slot_max_ns < 0) {  // validate_slot
      return unexpected("netem: negative slot delay");
    }
    if (o->slot_min_ns > o->slot_max_ns) return unexpected("netem: slot min delay greater than max delay");
    if (o->slot_packets < 0 || o->slot_bytes < 0) return unexpected("netem: negative slot limit");
    opts_ = *o;
    opts_.seed = o->seed.value_or(kNetemDefaultSeed);
    prng_.seed(*opts_.seed);
    heap_.reserve(std::min<size_t>(static_cast<size_t>(o->limit) + 1, size_t{1} << 16));
    limit_ = o->limit;
    latency_ = o->latency_ns;
    jitter_ = std::min<int64_t>(o->jitter_ns < 0 ? -o->jitter_ns : o->jitter_ns, INT_MAX);
    gap_ = o->gap;
    counter_ = 0;
    loss_ = o->loss;
    duplicate_ = o->duplicate;
    reorder_ = gap_ ? ~0u : 0;  // a gap alone means reorder 100%
    if (o->reorder || o->reorder_corr) reorder_ = o->reorder;
    corrupt_ = o->corrupt;
    init_crandom(&delay_cor_, o->delay_corr);
    init_crandom(&loss_cor_, o->loss_corr);
    init_crandom(&dup_cor_, o->dup_corr);
    init_crandom(&reorder_cor_, o->reorder_corr);
    init_crandom(&corrupt_cor_, o->corrupt_corr);
    rate_ = o->rate;
    packet_overhead_ = o->packet_overhead;
    cell_size_ = o->cell_size;
    cell_overhead_ = o->cell_overhead;
    loss_model_ = o->loss_model;
    clg_state_ = 1;  // TX_IN_GAP_PERIOD / GOOD_STATE
    if (loss_model_ == NetemLossModel::State) {
      a1_ = o->p13, a2_ = o->p31, a3_ = o->p32, a4_ = o->p14, a5_ = o->p23;
    } else {
      a1_ = o->ge_p, a2_ = o->ge_r, a3_ = o->ge_h, a4_ = o->ge_k1, a5_ = 0;
    }
    delay_dist_ = o->delay_dist;
    // get_slot
    slot_packets_max_ = o->slot_packets ? o->slot_packets : INT_MAX;
    slot_bytes_max_ = o->slot_bytes ? o->slot_bytes : INT_MAX;
    slot_packets_left_ = slot_packets_max_;
    slot_bytes_left_ = slot_bytes_max_;
    slot_next_ = (o->slot_min_ns | o->slot_max_ns) ? now_ns() : 0;
    return {};
  }

  // mirrors netem_dump
  QdiscOptions dump() const override { return opts_; }
  QdiscXstats xstats(uint64_t) const override { return x_; }

 private:
  // mirrors init_crandom
  void init_crandom(Crnd* s, uint32_t rho) {
    s->rho = rho;
    s->last = prng_.next();
  }
  // mirrors get_crandom: rho scales how much of the last value carries over.
  uint32_t get_crandom(Crnd* s) {
    if (!s || s->rho == 0) return prng_.next();
    const uint64_t value = prng_.next();
    const uint64_t rho = static_cast<uint64_t>(s->rho) + 1;
    const uint32_t answer =
        static_cast<uint32_t>((value * ((1ull << 32) - rho) + static_cast<uint64_t>(s->last) * rho) >> 32);
    s->last = answer;
    return answer;
  }
  // mirrors loss_4state. States: 1 sent in a gap, 2 sent in a burst, 3 lost in a burst,
  // 4 an isolated loss in a gap.
  bool loss_4state() {
    const uint32_t rnd = prng_.next();
    switch (clg_state_) {
      case 1:
        if (rnd < a4_) {
          clg_state_ = 4;
          return true;
        } else if (rnd < a1_ + a4_) {
          clg_state_ = 3;
          return true;
        }
        clg_state_ = 1;
        break;
      case 2:
        if (rnd < a5_) {
          clg_state_ = 3;
          return true;
        }
        clg_state_ = 2;
        break;
      case 3:
        if (rnd < a3_) {
          clg_state_ = 2;
        } else if (rnd < a2_ + a3_) {
          clg_state_ = 1;
        } else {
          clg_state_ = 3;
          return true;
        }
        break;
      case 4:
        clg_state_ = 1;
        break;
    }
    return false;
  }
  // mirrors loss_gilb_ell: a transition draw, then a loss draw for the state.
  bool loss_gilb_ell() {
    switch (clg_state_) {
      case 1:
        if (prng_.next() < a1_) clg_state_ = 2;
        if (prng_.next() < a4_) return true;
        break;
      case 2:
        if (prng_.next() < a2_) clg_state_ = 1;
        if (prng_.next() > a3_) return true;
        break;
    }
    return false;
  }
  // mirrors loss_event
  bool loss_event() {
    switch (loss_model_) {
      case NetemLossModel::Random:
        return loss_ && loss_ >= get_crandom(&loss_cor_);
      case NetemLossModel::State:
        return loss_4state();
      case NetemLossModel::GeModel:
        return loss_gilb_ell();
    }
    return false;
  }
  // mirrors tabledist: mu + sigma * table[rnd] / NETEM_DIST_SCALE, rounded; uniform in
  // [mu - sigma, mu + sigma) without a table.
  int64_t tabledist(int64_t mu, int64_t sigma, Crnd* state, const std::vector<int16_t>* dist) {
    if (sigma == 0) return mu;
    const uint32_t rnd = get_crandom(state);
    if (!dist) return static_cast<int64_t>(rnd % (2 * static_cast<uint32_t>(sigma))) + mu - sigma;
    const int64_t t = (*dist)[rnd % dist->size()];
    int64_t x = (sigma % kNetemDistScale) * t;
    if (x >= 0)
      x += kNetemDistScale / 2;
    else
      x -= kNetemDistScale / 2;
    return x / kNetemDistScale + (sigma / kNetemDistScale) * t + mu;
  }
  // mirrors packet_time_ns: transmit time at rate, with per-packet overhead and cells.
  uint64_t packet_time_ns(uint64_t len) const {
    len += static_cast<uint64_t>(static_cast<int64_t>(packet_overhead_));
    if (cell_size_) {
      uint64_t cells = static_cast<uint32_t>(len) / cell_size_;
      if (len > cells * cell_size_) ++cells;
      len = cells * static_cast<uint64_t>(static_cast<int64_t>(cell_size_) + cell_overhead_);
    }
    return static_cast<uint64_t>(static_cast<unsigned __int128>(len) * kNsPerSec / rate_);
  }
  // mirrors tfifo_enqueue: in time order at the tail is the common case (a list), the
  // rest go to the heap.
  void tfifo_enqueue(Packet* p) {
    seqno(p) = next_seq_++;
    if (!t_tail_ || time_to_send(p) >= time_to_send(t_tail_)) {
      p->next = nullptr;
      if (t_tail_)
        t_tail_->next = p;
      else
        t_head_ = p;
      t_tail_ = p;
    } else {
      heap_.push(p);
    }
  }
  // mirrors netem_peek: the earlier of the heap's first and the list's head (ties: the
  // list).
  Packet* tfifo_peek() const {
    Packet* h = heap_.first();
    if (!h) return t_head_;
    if (!t_head_) return h;
    return time_to_send(h) < time_to_send(t_head_) ? h : t_head_;
  }
  // mirrors netem_erase_head
  void tfifo_erase(Packet* p) {
    if (p == t_head_) {
      t_head_ = p->next;
      if (!t_head_) t_tail_ = nullptr;
    } else {
      heap_.pop();
    }
    p->next = nullptr;
  }
  // mirrors get_slot_next: the next slot opens MIN..MAX after now with fresh budgets.
  void get_slot_next(uint64_t now) {
    const uint64_t span = static_cast<uint64_t>(opts_.slot_max_ns - opts_.slot_min_ns);
    const uint64_t next_delay = static_cast<uint64_t>(opts_.slot_min_ns) +
                                static_cast<uint64_t>((static_cast<unsigned __int128>(span) * prng_.next()) >> 32);
    slot_next_ = now + next_delay;
    slot_packets_left_ = slot_packets_max_;
    slot_bytes_left_ = slot_bytes_max_;
  }

  // mirrors netem_dequeue (without a child qdisc)
  Packet* dequeue_inner(Cpu& cpu) override {
    Packet* p = q_.pop_front();
    if (!p) {
      p = tfifo_peek();
      if (!p) return nullptr;
      const uint64_t now = cpu.clock().now_ns();
      const uint64_t tts = time_to_send(p);
      if (slot_next_ && slot_next_ < tts) get_slot_next(now);
      if (!(tts <= now && slot_next_ <= now)) {
        watchdog_.schedule_ns(cpu, std::max(tts, slot_next_));
        return nullptr;
      }
      tfifo_erase(p);
      if (slot_next_) {
        --slot_packets_left_;
        slot_bytes_left_ -= static_cast<int32_t>(p->len);
        if (slot_packets_left_ <= 0 || slot_bytes_left_ <= 0) get_slot_next(now);
      }
    }
    leave(cpu, p);
    QdiscStatsBlock& s = st(cpu);
    s.packets.add(1);
    s.bytes.add(p->len);
    return p;
  }

  // tfifo_reset + qdisc_reset_queue: every held packet dropped, counted on `cpu`.
  void free_all(Cpu& cpu) {
    auto drop = [&cpu](Packet* p) { cpu.free_reason(p, DropReason::QDISC_DROP); };
    while (Packet* p = q_.pop_front()) drop(p);
    while (!heap_.empty()) drop(heap_.pop());
    while (Packet* p = t_head_) {
      t_head_ = p->next;
      drop(p);
    }
    t_tail_ = nullptr;
  }
  // ktime_get_ns for the control path: the calling thread's Cpu clock (a test's
  // virtual one), else real time; never 0, which would mean "no slots".
  static uint64_t now_ns() {
    Cpu* c = Cpu::current();
    return std::max<uint64_t>(1, c ? c->clock().now_ns() : MonotonicClock::instance().now_ns());
  }

  NetemOptions opts_;
  Prng prng_;
  PacketList q_;  // sch->q: reordered packets, sent first
  Packet* t_head_ = nullptr;
  Packet* t_tail_ = nullptr;
  TimeHeap heap_;
  uint64_t next_seq_ = 0;
  QdiscWatchdog watchdog_{this};  // netem_destroy cancels it
  int64_t latency_ = 0, jitter_ = 0;
  uint32_t limit_ = 1000, loss_ = 0, counter_ = 0, gap_ = 0;
  uint32_t duplicate_ = 0, reorder_ = 0, corrupt_ = 0;
  uint64_t rate_ = 0;
  int32_t packet_overhead_ = 0, cell_overhead_ = 0;
  uint32_t cell_size_ = 0;
  Crnd delay_cor_, loss_cor_, dup_cor_, reorder_cor_, corrupt_cor_;
  std::shared_ptr<const std::vector<int16_t>> delay_dist_;
  NetemLossModel loss_model_ = NetemLossModel::Random;
  uint8_t clg_state_ = 1;
  uint32_t a1_ = 0, a2_ = 0, a3_ = 0, a4_ = 0, a5_ = 0;
  uint64_t slot_next_ = 0;
  int32_t slot_packets_max_ = INT_MAX, slot_bytes_max_ = INT_MAX;
  int32_t slot_packets_left_ = INT_MAX, slot_bytes_left_ = INT_MAX;
  NetemXstats x_;
};

}  // namespace

std::vector<int16_t> netem_dist_table(std::string_view name) {
  std::vector<int16_t> out;
  if (name == "pareto") {
    for (int i = 65536; i > 0; i -= 16) out.push_back(static_cast<int16_t>(pareto_value(i)));
    return out;
  }
  if (name != "normal" && name != "paretonormal") return out;
  const std::vector<double> inv = normal_inverse();
  for (int i = 0; i < kTableSize; i += 4) {
    const int norm = static_cast<int>(std::rint(inv[static_cast<size_t>(i)] * kNetemDistScale));
    out.push_back(name == "normal" ? clamp_s16(norm) : clamp_s16((norm + 3 * pareto_value(65536 - 4 * i)) / 4));
  }
  return out;
}

const QdiscRegistrar kNetem{{"netem", [] { return std::unique_ptr<Qdisc>(new NetemQdisc); }}};  // netem_qdisc_ops

}  // namespace pktpath
