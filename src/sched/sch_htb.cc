// htb: hierarchical token bucket (net/sched/sch_htb.c of Linux 6.1).
//
// Classes form a tree; each has a rate bucket (tokens, up to `buffer`) and a ceil bucket
// (ctokens, up to `cbuffer`), both in nanoseconds of send time. A class whose ceil bucket
// is empty CANT_SEND; with ctokens but no tokens it MAY_BORROW from its parent; with
// both it CAN_SEND. Leaves hold a child qdisc (pfifo by default). Dequeue walks levels
// 0..7 (leaves are level 0, a top class level 7, inner classes one less than their
// parent), and at each level priorities 0..7, taking from CAN_SEND classes of that level
// ("the row") and, through them, from MAY_BORROW descendants hanging in their feeds,
// round robin by classid with a deficit per leaf and level (DRR, quantum bytes). What is
// sent is charged to the leaf and every ancestor (ceil always, rate at and above the
// level it was sent from). Classes that will change mode wait in a per-level event queue;
// the watchdog (a Cpu timer) reschedules the qdisc at the nearest event.
//
// Data structures: the kernel keeps each row, feed and wait queue as an rb-tree; pktpath
// keeps membership bits in the class and scans the classes in classid order (the trees'
// order), and the wait queue by (key, insertion order) as the rb-tree orders equal keys,
// so dequeue order and charges are the kernel's. Nothing is allocated per packet. Locked:
// everything under the root lock; classes change on the control thread with no traffic.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>
#include <vector>

#include "core/netdevice.h"
#include "sched/act_police.h"
#include "sched/class_hash_order.h"
#include "sched/clsact.h"
#include "sched/peek_dequeued.h"
#include "sched/qdisc.h"
#include "sched/qdisc_watchdog.h"
#include "sched/sch_htb.h"

namespace pktpath {

namespace {

using tc::PschedRate;
inline constexpr int64_t kNsPerSec = 1000000000;
inline constexpr uint32_t kHtbRoot = 0xffffffffu;  // TC_H_ROOT

enum class HtbMode : uint8_t { CantSend, MayBorrow, CanSend };

// struct htb_class
struct HtbClass {
  uint32_t classid = 0;
  HtbClass* parent = nullptr;
  std::vector<HtbClass*> children;  // by classid
  int level = 0;
  HtbClassOptions opts;  // as configured (rates, ticks, prio, quantum given)
  uint32_t prio = 0;
  int32_t quantum = 0;
  PschedRate rate, ceil;
  int64_t buffer = 0, cbuffer = 0, mbuffer = 60 * kNsPerSec;
  int64_t tokens = 0, ctokens = 0, t_c = 0;
  HtbMode cmode = HtbMode::CanSend;
  uint32_t prio_activity = 0;
  // Membership of the rb-trees node[prio] sits in: its level's row (CAN_SEND) or its
  // parent's feed (MAY_BORROW), one bit per prio.
  uint32_t in_row = 0, in_feed = 0;
  bool in_wait = false;  // pq_node in its level's wait queue
  int64_t pq_key = 0;
  uint64_t pq_seq = 0;
  std::unique_ptr<Qdisc> leaf;  // level 0 only
  int32_t deficit[kHtbMaxDepth] = {};
  // Inner class: each prio's feed position (clprio[prio].ptr / last_ptr_id).
  HtbClass* ptr[kHtbNumPrio] = {};
  uint32_t last_ptr_id[kHtbNumPrio] = {};
  // Statistics (root lock): bstats, drops, overlimits, xstats.
  uint64_t packets = 0, bytes = 0, drops = 0, overlimits = 0;
  uint32_t lends = 0, borrows = 0;
  // Filters at `parent` this class: an inner class a filter or skb->priority chose
  // continues classification with them (cl->filter_list).
  tc::FilterBlock block;
};

// struct htb_level's row part (the wait queue is the classes' in_wait bits).
struct HtbLevel {
  uint32_t row_mask = 0;
  HtbClass* ptr[kHtbNumPrio] = {};
  uint32_t last_ptr_id[kHtbNumPrio] = {};
  int64_t near_ev_cache = 0;
};

// One of the rb-trees: the row of (level, prio), or the feed of `owner` at prio.
struct Tree {
  const std::vector<HtbClass*>* pool;  // all classes, or owner's children (by classid)
  HtbClass* owner;                     // nullptr for a row
  int level;
  int prio;
  bool has(const HtbClass* c) const {
    const uint32_t bit = 1u << prio;
    return owner ? (c->in_feed & bit) != 0 : c->level == level && (c->in_row & bit) != 0;
  }
  // The first member with classid >= id (htb_id_find_next_upper), nullptr past the end.
  HtbClass* upper(uint64_t id) const {
    for (HtbClass* c : *pool)
      if (c->classid >= id && has(c)) return c;
    return nullptr;
  }
  HtbClass* first() const { return upper(0); }
  HtbClass* next(const HtbClass* c) const { return upper(uint64_t{c->classid} + 1); }  // rb_next
};

class HtbQdisc final : public PeekDequeuedQdisc {
 public:
  HtbQdisc() : PeekDequeuedQdisc("htb", 0) {}

  // mirrors htb_enqueue
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    int verdict = 0;
    bool direct = false;
    HtbClass* cl = classify(cpu, p, &direct, &verdict);
    if (direct) {
      if (direct_.count < direct_qlen_) {
        direct_.push_back(p);
        ++direct_pkts_;
      } else {
        stats_dropped(cpu);
        to_free.push_back(p);
        return NET_XMIT_DROP;
      }
    } else if (!cl) {
      if (verdict == tc::TC_ACT_SHOT) {
        stats_dropped(cpu);
        to_free.push_back(p);
        return NET_XMIT_SUCCESS | NET_XMIT_BYPASS_BIT;
      }
      cpu.free(p);  // stolen, queued or trapped by an action: consumed, not a drop
      return NET_XMIT_SUCCESS | NET_XMIT_STOLEN_BIT;
    } else {
      const uint32_t len = p->len;
      p->tc_class = static_cast<uint16_t>(cl->classid);  // the trace's class (minor)
      const int rc = cl->leaf->enqueue(cpu, p, to_free);
      if (rc != NET_XMIT_SUCCESS) {
        if (net_xmit_drop_count(rc)) {
          stats_dropped(cpu);
          ++cl->drops;
        }
        return rc;
      }
      activate(*cl);
      ++qlen_;
      backlog_ += len;
      QdiscStatsBlock& s = st(cpu);
      s.qlen.add(1);
      s.backlog.add(len);
      return NET_XMIT_SUCCESS;
    }
    join(cpu, p);
    return NET_XMIT_SUCCESS;
  }

  void reset(Cpu& cpu) override {
    // mirrors htb_reset
    for (HtbClass* cl : by_id_) {
      if (cl->leaf) {
        cl->leaf->reset(cpu);
        cl->leaf->reset_requeued(cpu);
      }
      std::fill(std::begin(cl->ptr), std::end(cl->ptr), nullptr);
      std::fill(std::begin(cl->last_ptr_id), std::end(cl->last_ptr_id), 0u);
      cl->prio_activity = 0;
      cl->in_row = cl->in_feed = 0;
      cl->in_wait = false;
      cl->cmode = HtbMode::CanSend;
    }
    watchdog_.cancel();
    while (Packet* p = direct_.pop_front()) cpu.free_reason(p, DropReason::QDISC_DROP);
    for (HtbLevel& l : levels_) l = HtbLevel{};
    reset_counters(cpu);
  }

  // mirrors htb_init: r2q, default, direct_qlen (the device's txqueuelen unless given).
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    HtbOptions o;
    if (const auto* h = opts.get<HtbOptions>())
      o = *h;
    else if (!opts.empty()) {
      return unexpected("bad options for htb");
    }
    if (o.rate2quantum == 0) o.rate2quantum = 1;
    opts_ = o;
    direct_qlen_ = o.direct_qlen_set ? o.direct_qlen : dev.tx_queue_len();
    return {};
  }
  Status change(NetDevice&, const QdiscOptions&) override {
    return unexpected("htb: change of the qdisc's options is not supported (delete and add)");
  }
  // mirrors htb_dump
  QdiscOptions dump() const override {
    HtbOptions o = opts_;
    o.direct_qlen = direct_qlen_;
    o.direct_qlen_set = true;
    o.direct_pkts = direct_pkts_;
    return o;
  }
  QdiscStats stats() const override {
    QdiscStats s = own_stats();
    s.overlimits = overlimits_;  // htb_dump: sch->qstats.overlimits = q->overlimits
    return s;
  }

  // ---- classes.
  bool class_find(uint32_t classid) const override { return find(classid) != nullptr; }

  // mirrors htb_change_class
  Status class_change(NetDevice& dev, Cpu& cpu, uint32_t parentid, uint32_t classid, const KindOptions& kopts, std::string& warn) override {
    const auto* o = kopts.get<HtbClassOptions>();
    if (!o || o->rate_bytes_ps == 0 || o->ceil_bytes_ps == 0) return unexpected("htb: class needs rate and ceil");
    HtbClass* cl = find(classid);
    // A parent that names no class makes a root class, as in the kernel.
    HtbClass* parent = parentid == kHtbRoot || parentid == 0 ? nullptr : find(parentid);
    const int64_t now = static_cast<int64_t>(cpu.clock().now_ns());
    if (!cl) {
      if ((classid & 0xffff0000u) != (handle() & 0xffff0000u) || (classid & 0xffff) == 0) {
        return unexpected("htb: classid " + handle_str(classid) + " is not a class of qdisc " + handle_str(handle()));
      }
      if (parent && parent->parent && parent->parent->level < 2) return unexpected("htb: tree is too deep");
      auto leaf = qdisc_create(dev, "pfifo", QdiscOptions{});
      if (!leaf) return unexpected(leaf.error().msg);
      auto fresh = std::make_unique<HtbClass>();
      cl = fresh.get();
      cl->classid = classid;
      cl->block.filters.share_commons(block_.filters);  // u32 numbers its tables per qdisc
      cl->leaf = std::move(*leaf);
      link_leaf(*cl);
      if (parent && parent->level == 0) parent_to_inner(cpu, *parent);
      cl->parent = parent;
      if (parent) insert_sorted(parent->children, cl);
      insert_sorted(by_id_, cl);
      dump_order_.insert(classid);
      owned_.push_back(std::move(fresh));
      cl->t_c = now;
      cl->cmode = HtbMode::CanSend;
      set_params(*cl, *o, warn);
      cl->tokens = cl->buffer;
      cl->ctokens = cl->cbuffer;
      return {};
    }
    // An existing class keeps its parent whatever the line names (htb_change_class).
    // A new prio moves an active leaf between rows: take it out first and put it back.
    const bool active = cl->prio_activity != 0;
    if (active) deactivate(*cl);
    set_params(*cl, *o, warn);
    if (active && cl->leaf && cl->leaf->qlen() != 0) activate(*cl);
    return {};
  }

  // mirrors htb_delete
  Status class_delete(NetDevice&, Cpu& cpu, uint32_t classid) override {
    HtbClass* cl = find(classid);
    if (!cl) return unexpected("htb: class " + handle_str(classid) + " not found");
    if (!cl->children.empty()) return unexpected("HTB class in use (class " + handle_str(classid) + " has children)");
    HtbClass* parent = cl->parent;
    const bool last_child = parent && parent->children.size() == 1;
    if (cl->leaf) purge(cpu, *cl->leaf);
    if (cl->prio_activity) deactivate(*cl);
    cl->in_wait = false;
    if (parent) std::erase(parent->children, cl);
    std::erase(by_id_, cl);
    dump_order_.remove(classid);
    if (last_child) parent_to_leaf(cpu, *parent);
    std::erase_if(owned_, [cl](const std::unique_ptr<HtbClass>& c) { return c.get() == cl; });
    return {};
  }

  // mirrors htb_dump_class / htb_dump_class_stats
  std::vector<QdiscClassInfo> class_dump(uint64_t) const override {
    std::vector<QdiscClassInfo> out;
    for (const uint32_t id : dump_order_.order()) {  // htb_walk over the class hash
      const HtbClass* cl = find(id);
      QdiscClassInfo ci;
      ci.classid = cl->classid;
      ci.parent = cl->parent ? cl->parent->classid : kHtbRoot;
      HtbClassOptions o = cl->opts;
      o.buffer = static_cast<uint32_t>(cl->buffer >> tc::kPschedShift);
      o.cbuffer = static_cast<uint32_t>(cl->cbuffer >> tc::kPschedShift);
      o.quantum = static_cast<uint32_t>(cl->quantum);
      o.prio = cl->prio;
      o.level = static_cast<uint32_t>(cl->level);
      ci.opts = o;
      ci.stats.packets = cl->packets;
      ci.stats.bytes = cl->bytes;
      ci.stats.drops = cl->drops;
      ci.stats.overlimits = cl->overlimits;
      if (cl->leaf) {
        ci.leaf_handle = cl->leaf->handle();
        const QdiscStats ls = cl->leaf->stats();
        ci.stats.qlen = ls.qlen;
        ci.stats.backlog = ls.backlog;
      }
      HtbClassXstats x;
      x.lends = cl->lends;
      x.borrows = cl->borrows;
      x.tokens = clamp_ticks(cl->tokens);
      x.ctokens = clamp_ticks(cl->ctokens);
      ci.xstats = x;
      out.push_back(std::move(ci));
    }
    return out;
  }

  tc::FilterBlock* filter_block() override { return &block_; }
  tc::FilterBlock* class_filter_block(uint32_t classid) override {
    HtbClass* cl = find(classid);
    return cl ? &cl->block : nullptr;
  }

  // Leaves' qdiscs: by class minor for grafting, in classid order for walks.
  Qdisc* child(uint32_t minor) const override {
    const HtbClass* cl = find((handle() & 0xffff0000u) | minor);
    return cl && cl->leaf ? cl->leaf.get() : nullptr;
  }
  unsigned num_children() const override {
    return static_cast<unsigned>(std::count_if(by_id_.begin(), by_id_.end(), [](auto* c) { return c->leaf != nullptr; }));
  }
  Qdisc* child_at(unsigned i) const override {
    for (const HtbClass* cl : by_id_)
      if (cl->leaf && i-- == 0) return cl->leaf.get();
    return nullptr;
  }
  // mirrors htb_graft: a leaf's qdisc is replaced; the old one's packets leave the tree.
  Result<std::unique_ptr<Qdisc>> graft(NetDevice& dev, uint32_t minor, std::unique_ptr<Qdisc> q) override {
    HtbClass* cl = find((handle() & 0xffff0000u) | minor);
    if (!cl || !cl->leaf) {
      return unexpected("htb: " + handle_str((handle() & 0xffff0000u) | minor) + " is not a leaf class");
    }
    std::unique_ptr<Qdisc> old = std::move(cl->leaf);
    const QdiscStats os = old->stats();
    QdiscStatsBlock& s = base_stats();
    s.qlen.add(-os.qlen);
    s.backlog.add(-os.backlog);
    s.drops.add(os.qlen);
    qlen_ -= static_cast<uint32_t>(os.qlen);
    backlog_ -= static_cast<uint32_t>(os.backlog);
    old->set_parent_qdisc(nullptr);
    q->set_dev_queue(&dev, &dev.txq(0));
    cl->leaf = std::move(q);
    link_leaf(*cl);
    return old;
  }

 private:
  static std::string handle_str(uint32_t h) {
    char b[24];
    std::snprintf(b, sizeof b, "%x:%x", h >> 16, h & 0xffff);
    return b;
  }
  static int32_t clamp_ticks(int64_t ns) {
    return static_cast<int32_t>(std::clamp<int64_t>(ns >> tc::kPschedShift, INT32_MIN, INT32_MAX));
  }
  static void insert_sorted(std::vector<HtbClass*>& v, HtbClass* c) {
    v.insert(std::upper_bound(v.begin(), v.end(), c, [](auto* a, auto* b) { return a->classid < b->classid; }), c);
  }
  HtbClass* find(uint32_t classid) const {
    auto it = std::lower_bound(by_id_.begin(), by_id_.end(), classid,
                               [](const HtbClass* c, uint32_t id) { return c->classid < id; });
    return it != by_id_.end() && (*it)->classid == classid ? *it : nullptr;
  }
  void link_leaf(HtbClass& cl) {
    cl.leaf->set_parent(cl.classid);
    cl.leaf->set_parent_qdisc(this);
  }

  // Rates, buffers, quantum and prio from the options (the common part of
  // htb_change_class); the quantum warning is the kernel's pr_warn.
  void set_params(HtbClass& cl, const HtbClassOptions& o, std::string& warn) {
    cl.opts = o;
    cl.rate.precompute(o.rate_bytes_ps);
    cl.ceil.precompute(o.ceil_bytes_ps);
    if (cl.level == 0) {
      uint64_t quantum = o.rate_bytes_ps / opts_.rate2quantum;
      cl.quantum = static_cast<int32_t>(std::min<uint64_t>(quantum, INT32_MAX));
      int w = 0;
      if (!o.quantum && cl.quantum < 1000) {
        w = -1;
        cl.quantum = 1000;
      }
      if (!o.quantum && cl.quantum > 200000) {
        w = 1;
        cl.quantum = 200000;
      }
      if (o.quantum) cl.quantum = static_cast<int32_t>(o.quantum);
      cl.prio = std::min<uint32_t>(o.prio, kHtbNumPrio - 1);
      if (w) {
        char b[96];
        std::snprintf(b, sizeof b, "HTB: quantum of class %X is %s. Consider r2q change.", cl.classid,
                      w < 0 ? "small" : "big");
        warn = b;
      }
    }
    cl.buffer = int64_t{o.buffer} << tc::kPschedShift;
    cl.cbuffer = int64_t{o.cbuffer} << tc::kPschedShift;
  }

  // qdisc_purge_queue: drop what a leaf holds; this qdisc forgets and counts it.
  void purge(Cpu& cpu, Qdisc& leaf) {
    const QdiscStats ls = leaf.stats();
    leaf.reset(cpu);
    leaf.reset_requeued(cpu);
    QdiscStatsBlock& s = st(cpu);
    s.qlen.add(-ls.qlen);
    s.backlog.add(-ls.backlog);
    s.drops.add(ls.qlen);
    qlen_ -= static_cast<uint32_t>(ls.qlen);
    backlog_ -= static_cast<uint32_t>(ls.backlog);
  }
  // A leaf gets its first child (htb_change_class's "turn parent into inner node").
  void parent_to_inner(Cpu& cpu, HtbClass& p) {
    purge(cpu, *p.leaf);
    retired_leaves_.push_back(std::move(p.leaf));
    if (p.prio_activity) deactivate(p);
    p.in_wait = false;
    p.cmode = HtbMode::CanSend;
    p.level = (p.parent ? p.parent->level : kHtbMaxDepth) - 1;
    std::fill(std::begin(p.ptr), std::end(p.ptr), nullptr);
    std::fill(std::begin(p.last_ptr_id), std::end(p.last_ptr_id), 0u);
  }
  // mirrors htb_parent_to_leaf: the last child went; the parent is a leaf again.
  void parent_to_leaf(Cpu& cpu, HtbClass& p) {
    p.level = 0;
    std::fill(std::begin(p.ptr), std::end(p.ptr), nullptr);
    auto leaf = qdisc_create(*dev(), "pfifo", QdiscOptions{});
    if (leaf) {
      p.leaf = std::move(*leaf);
      link_leaf(p);
    }
    p.tokens = p.buffer;
    p.ctokens = p.cbuffer;
    p.t_c = static_cast<int64_t>(cpu.clock().now_ns());
    p.cmode = HtbMode::CanSend;
  }

  // mirrors htb_classify (6.1): skb->priority naming X:0 or a leaf; else filters, from
  // the qdisc's list (or the inner class skb->priority names), each inner class a filter
  // chooses continuing with its own list, until a leaf; else `default`; else the direct
  // queue. nullptr with *verdict when an action took the packet.
  HtbClass* classify(Cpu& cpu, Packet* p, bool* direct, int* verdict) {
    if (p->priority == handle()) {
      *direct = true;
      return nullptr;
    }
    HtbClass* cl = find(p->priority);
    if (cl && cl->level == 0) return cl;
    const tc::Miniq* mq = (cl ? cl->block : block_).head.load(std::memory_order_acquire);
    // A filter choosing an inner class whose filters lead back would loop: the walk
    // takes at most as many steps as the tree has levels, then uses the default.
    int below = kHtbMaxDepth + 1;
    while (mq && below-- > 0) {
      tc::TcResult res;
      const int r = tc::tcf_classify(tc::TcContext{cpu, false}, p, *mq, res);
      if (r < 0) break;
      if (r == tc::TC_ACT_QUEUED || r == tc::TC_ACT_STOLEN || r == tc::TC_ACT_TRAP || r == tc::TC_ACT_SHOT) {
        *verdict = r;
        return nullptr;
      }
      if (res.classid == handle()) {
        *direct = true;
        return nullptr;
      }
      HtbClass* f = find(res.classid);
      if (!f) break;
      if (f->level == 0) return f;
      mq = f->block.head.load(std::memory_order_acquire);
    }
    cl = find((handle() & 0xffff0000u) | opts_.defcls);
    if (!cl || cl->level) {
      *direct = true;
      return nullptr;
    }
    return cl;
  }

  Tree row(int level, int prio) const { return Tree{&by_id_, nullptr, level, prio}; }
  Tree feed(HtbClass* owner, int prio) const { return Tree{&owner->children, owner, 0, prio}; }

  // mirrors htb_add_to_wait_tree
  void add_to_wait_tree(HtbClass& cl, int64_t delay) {
    cl.pq_key = now_ + delay;
    if (cl.pq_key == now_) cl.pq_key++;
    HtbLevel& l = levels_[cl.level];
    if (l.near_ev_cache > cl.pq_key) l.near_ev_cache = cl.pq_key;
    cl.in_wait = true;
    cl.pq_seq = ++wait_seq_;
  }
  HtbClass* wait_first(int level) const {
    HtbClass* best = nullptr;
    for (HtbClass* c : by_id_)
      if (c->in_wait && c->level == level &&
          (!best || c->pq_key < best->pq_key || (c->pq_key == best->pq_key && c->pq_seq < best->pq_seq)))
        best = c;
    return best;
  }

  // mirrors htb_add_class_to_row
  void add_class_to_row(HtbClass& cl, uint32_t mask) {
    levels_[cl.level].row_mask |= mask;
    cl.in_row |= mask;
  }
  // mirrors htb_remove_class_from_row
  void remove_class_from_row(HtbClass& cl, uint32_t mask) {
    HtbLevel& l = levels_[cl.level];
    uint32_t m = 0;
    while (mask) {
      const int prio = std::countr_zero(mask);
      mask &= ~(1u << prio);
      const Tree t = row(cl.level, prio);
      if (l.ptr[prio] == &cl) l.ptr[prio] = t.next(&cl);
      cl.in_row &= ~(1u << prio);
      if (!t.first()) m |= 1u << prio;
    }
    l.row_mask &= ~m;
  }
  // mirrors htb_activate_prios
  void activate_prios(HtbClass* cl) {
    HtbClass* p = cl->parent;
    uint32_t mask = cl->prio_activity;
    while (cl->cmode == HtbMode::MayBorrow && p && mask) {
      uint32_t m = mask;
      while (m) {
        const int prio = std::countr_zero(m);
        m &= ~(1u << prio);
        if (feed(p, prio).first()) mask &= ~(1u << prio);  // the parent is active there already
        cl->in_feed |= 1u << prio;
      }
      p->prio_activity |= mask;
      cl = p;
      p = cl->parent;
    }
    if (cl->cmode == HtbMode::CanSend && mask) add_class_to_row(*cl, mask);
  }
  // mirrors htb_deactivate_prios
  void deactivate_prios(HtbClass* cl) {
    HtbClass* p = cl->parent;
    uint32_t mask = cl->prio_activity;
    while (cl->cmode == HtbMode::MayBorrow && p && mask) {
      uint32_t m = mask;
      mask = 0;
      while (m) {
        const int prio = std::countr_zero(m);
        m &= ~(1u << prio);
        if (p->ptr[prio] == cl) {  // forget the pointer, remember the classid
          p->last_ptr_id[prio] = cl->classid;
          p->ptr[prio] = nullptr;
        }
        cl->in_feed &= ~(1u << prio);
        if (!feed(p, prio).first()) mask |= 1u << prio;
      }
      p->prio_activity &= ~mask;
      cl = p;
      p = cl->parent;
    }
    if (cl->cmode == HtbMode::CanSend && mask) remove_class_from_row(*cl, mask);
  }
  // mirrors htb_class_mode (htb_hysteresis off, 6.1's default)
  static HtbMode class_mode(const HtbClass& cl, int64_t* diff) {
    int64_t toks = cl.ctokens + *diff;
    if (toks < 0) {
      *diff = -toks;
      return HtbMode::CantSend;
    }
    toks = cl.tokens + *diff;
    if (toks >= 0) return HtbMode::CanSend;
    *diff = -toks;
    return HtbMode::MayBorrow;
  }
  // mirrors htb_change_class_mode
  void change_class_mode(HtbClass& cl, int64_t* diff) {
    const HtbMode m = class_mode(cl, diff);
    if (m == cl.cmode) return;
    if (m == HtbMode::CantSend) {
      ++cl.overlimits;
      ++overlimits_;
    }
    if (cl.prio_activity) {
      if (cl.cmode != HtbMode::CantSend) deactivate_prios(&cl);
      cl.cmode = m;
      if (m != HtbMode::CantSend) activate_prios(&cl);
    } else {
      cl.cmode = m;
    }
  }
  // mirrors htb_activate / htb_deactivate
  void activate(HtbClass& cl) {
    if (!cl.prio_activity) {
      cl.prio_activity = 1u << cl.prio;
      activate_prios(&cl);
    }
  }
  void deactivate(HtbClass& cl) {
    deactivate_prios(&cl);
    cl.prio_activity = 0;
  }

  // mirrors htb_accnt_tokens / htb_accnt_ctokens
  static int64_t accnt(int64_t toks, int64_t diff, int64_t max, const PschedRate& r, uint32_t len, int64_t mbuffer) {
    toks += diff;
    if (toks > max) toks = max;
    toks -= static_cast<int64_t>(r.l2t_ns(len));
    if (toks <= -mbuffer) toks = 1 - mbuffer;
    return toks;
  }
  // mirrors htb_charge_class
  void charge_class(HtbClass* cl, int level, uint32_t len) {
    while (cl) {
      int64_t diff = std::min(now_ - cl->t_c, cl->mbuffer);
      if (cl->level >= level) {
        if (cl->level == level) ++cl->lends;
        cl->tokens = accnt(cl->tokens, diff, cl->buffer, cl->rate, len, cl->mbuffer);
      } else {
        ++cl->borrows;
        cl->tokens += diff;  // t_c moves: keep the tokens it would have had
      }
      cl->ctokens = accnt(cl->ctokens, diff, cl->cbuffer, cl->ceil, len, cl->mbuffer);
      cl->t_c = now_;
      const HtbMode old = cl->cmode;
      diff = 0;
      change_class_mode(*cl, &diff);
      if (old != cl->cmode) {
        if (old != HtbMode::CanSend) cl->in_wait = false;
        if (cl->cmode != HtbMode::CanSend) add_to_wait_tree(*cl, diff);
      }
      if (cl->level) {
        ++cl->packets;
        cl->bytes += len;
      }
      cl = cl->parent;
    }
  }
  // mirrors htb_do_events (without the jiffies budget): 0 when the level's queue is
  // empty, else the time of its next event.
  int64_t do_events(int level) {
    for (;;) {
      HtbClass* cl = wait_first(level);
      if (!cl) return 0;
      if (cl->pq_key > now_) return cl->pq_key;
      cl->in_wait = false;
      int64_t diff = std::min(now_ - cl->t_c, cl->mbuffer);
      change_class_mode(*cl, &diff);
      if (cl->cmode != HtbMode::CanSend) add_to_wait_tree(*cl, diff);
    }
  }

  // The tree a stack entry of htb_lookup_leaf walks: the row, or an inner class's feed.
  Tree tree_of(HtbClass* owner, int level, int prio) const { return owner ? feed(owner, prio) : row(level, prio); }
  // mirrors htb_lookup_leaf: from the row's position down the feeds to a leaf, rewinding
  // a tree at its end and advancing the one above.
  HtbClass* lookup_leaf(int level, int prio) {
    struct Entry {
      HtbClass* owner;
      HtbClass** pptr;
      uint32_t* pid;
    } stk[kHtbMaxDepth + 1];
    int sp = 0;
    stk[0] = {nullptr, &levels_[level].ptr[prio], &levels_[level].last_ptr_id[prio]};
    for (int i = 0; i < 65535; ++i) {
      Entry& e = stk[sp];
      const Tree t = tree_of(e.owner, level, prio);
      if (!*e.pptr && *e.pid) *e.pptr = t.upper(*e.pid);  // recover the position by classid
      *e.pid = 0;
      if (!*e.pptr) {  // at the right end: rewind, and go up
        *e.pptr = t.first();
        if (sp > 0) {
          --sp;
          Entry& up = stk[sp];
          if (!*up.pptr) return nullptr;
          *up.pptr = tree_of(up.owner, level, prio).next(*up.pptr);
        }
      } else {
        HtbClass* cl = *e.pptr;
        if (cl->level == 0) return cl;
        if (sp + 1 > kHtbMaxDepth) return nullptr;
        stk[++sp] = {cl, &cl->ptr[prio], &cl->last_ptr_id[prio]};
      }
    }
    return nullptr;
  }
  // The position a leaf sent from advances in (its parent's feed, or level 0's row).
  void advance(HtbClass& cl, int level, int prio) {
    HtbClass** pptr = level ? &cl.parent->ptr[prio] : &levels_[0].ptr[prio];
    if (*pptr) *pptr = (level ? feed(cl.parent, prio) : row(0, prio)).next(*pptr);
  }
  // mirrors htb_dequeue_tree
  Packet* dequeue_tree(Cpu& cpu, int prio, int level) {
    Packet* p = nullptr;
    HtbClass* start = lookup_leaf(level, prio);
    HtbClass* cl = start;
    for (;;) {
      if (!cl) return nullptr;
      if (PP_UNLIKELY(cl->leaf->qlen() == 0)) {
        // Emptied behind our back (a child's own drops, a graft): deactivate, skip.
        deactivate(*cl);
        if (!(levels_[level].row_mask & (1u << prio))) return nullptr;
        HtbClass* next = lookup_leaf(level, prio);
        if (cl == start) start = next;
        cl = next;
        continue;
      }
      p = cl->leaf->dequeue(cpu);
      if (PP_LIKELY(p != nullptr)) break;
      advance(*cl, level, prio);
      cl = lookup_leaf(level, prio);
      if (cl == start) break;
    }
    if (PP_LIKELY(p != nullptr)) {
      const uint32_t len = p->len;
      ++cl->packets;
      cl->bytes += len;
      cl->deficit[level] -= static_cast<int32_t>(len);
      if (cl->deficit[level] < 0) {
        cl->deficit[level] += cl->quantum;
        advance(*cl, level, prio);
      }
      if (cl->leaf->qlen() == 0) deactivate(*cl);
      charge_class(cl, level, len);
    }
    return p;
  }

  // mirrors htb_dequeue (held back for peek by PeekDequeuedQdisc)
  Packet* dequeue_inner(Cpu& cpu) override {
    Packet* p = direct_.pop_front();  // direct packets first, as the kernel does
    if (!p) {
      if (qlen_locked() == 0) return nullptr;
      now_ = static_cast<int64_t>(cpu.clock().now_ns());
      int64_t next_event = now_ + 5 * kNsPerSec;
      for (int level = 0; level < kHtbMaxDepth && !p; ++level) {
        HtbLevel& l = levels_[level];
        int64_t event = l.near_ev_cache;
        if (now_ >= event) {
          event = do_events(level);
          if (!event) event = now_ + kNsPerSec;
          l.near_ev_cache = event;
        }
        if (next_event > event) next_event = event;
        uint32_t m = ~l.row_mask;
        while (m != ~0u && !p) {
          const int prio = std::countr_one(m);
          m |= 1u << prio;
          p = dequeue_tree(cpu, prio, level);
        }
      }
      if (!p) {
        if (next_event > now_)
          watchdog_.schedule_ns(cpu, static_cast<uint64_t>(next_event));
        else
          schedule(cpu);  // htb_work_func: __netif_schedule
        return nullptr;
      }
    }
    leave(cpu, p);
    QdiscStatsBlock& s = st(cpu);
    s.packets.add(1);
    s.bytes.add(p->len);
    return p;
  }

  HtbOptions opts_;
  uint32_t direct_qlen_ = 0;
  uint32_t direct_pkts_ = 0;
  uint64_t overlimits_ = 0;
  PacketList direct_;
  std::vector<std::unique_ptr<HtbClass>> owned_;
  std::vector<HtbClass*> by_id_;  // every class, by classid
  ClassHashOrder dump_order_;     // the kernel's class hash, for the order of dumps
  // A former leaf's qdisc, emptied, kept until the htb goes (it may sit on a tx work list).
  std::vector<std::unique_ptr<Qdisc>> retired_leaves_;
  HtbLevel levels_[kHtbMaxDepth];
  uint64_t wait_seq_ = 0;
  int64_t now_ = 0;
  tc::FilterBlock block_;
  QdiscWatchdog watchdog_{this};
};

}  // namespace

const QdiscRegistrar kHtb{{"htb", [] { return std::unique_ptr<Qdisc>(new HtbQdisc); }, true}};  // htb_qdisc_ops

}  // namespace pktpath
