// prio: N bands, each a child qdisc (default pfifo), band by priomap[priority], lower
// band dequeued first (net/sched/sch_prio.c). Locked: children run under prio's root lock.
#include <string>
#include <vector>

#include "core/netdevice.h"
#include "sched/qdisc.h"
#include "sched/sch_prio.h"

namespace pktpath {

namespace {

inline constexpr uint32_t kPrioMaxBands = 16;

class PrioQdisc final : public Qdisc {
 public:
  PrioQdisc() : Qdisc("prio", 0) {}

  // mirrors prio_enqueue (without filters: the priomap classifies)
  int enqueue(Cpu& cpu, Packet* p, PacketList& to_free) override {
    Qdisc& c = *bands_[opts_.priomap[p->priority & kTcPrioMax]];
    const uint32_t len = p->len;
    const int rc = c.enqueue(cpu, p, to_free);
    if (PP_UNLIKELY(rc != NET_XMIT_SUCCESS)) {
      if (net_xmit_drop_count(rc)) stats_dropped(cpu);
      return rc;
    }
    QdiscStatsBlock& s = st(cpu);
    s.qlen.add(1);
    s.backlog.add(len);
    return NET_XMIT_SUCCESS;
  }
  // mirrors prio_dequeue
  Packet* dequeue(Cpu& cpu) override {
    for (auto& c : bands_) {
      if (Packet* p = c->dequeue(cpu)) {
        stats_dequeued(cpu, p);
        return p;
      }
    }
    return nullptr;
  }
  Packet* peek(Cpu& cpu) override {
    for (auto& c : bands_)
      if (Packet* p = c->peek(cpu)) return p;
    return nullptr;
  }
  void reset(Cpu& cpu) override {
    for (auto& c : bands_) {
      c->reset(cpu);
      c->reset_requeued(cpu);
    }
    zero_backlog();
  }

  // mirrors prio_tune: bands 2..16, every priomap entry < bands. New bands get a pfifo;
  // bands that go away must be empty here (the control thread changes with no traffic).
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    PrioOptions o;
    if (const auto* po = opts.get<PrioOptions>())
      o = *po;
    else if (!opts.empty()) {
      return unexpected("bad options for prio");
    }
    if (o.bands < 2 || o.bands > kPrioMaxBands) return unexpected("prio: bands must be 2..16");
    for (uint8_t b : o.priomap)
      if (b >= o.bands) {
        return unexpected("prio: priomap entry " + std::to_string(b) + " is not a band (bands " +
              std::to_string(o.bands) + ")");
      }
    std::vector<std::unique_ptr<Qdisc>> fresh;
    for (uint32_t i = static_cast<uint32_t>(bands_.size()); i < o.bands; ++i) {
      auto c = qdisc_create(dev, "pfifo", QdiscOptions{});
      if (!c) return unexpected(c.error().msg);
      fresh.push_back(std::move(*c));
    }
    if (bands_.size() > o.bands) {
      for (size_t i = o.bands; i < bands_.size(); ++i)
        if (bands_[i]->qlen() != 0) return unexpected("prio: cannot remove a band that holds packets");
      bands_.resize(o.bands);
    }
    for (auto& c : fresh) bands_.push_back(std::move(c));
    for (uint32_t i = 0; i < bands_.size(); ++i) {
      bands_[i]->set_parent((handle() & 0xffff0000u) | (i + 1));
      bands_[i]->set_parent_qdisc(this);
    }
    opts_ = o;
    return {};
  }

  Qdisc* child(uint32_t minor) const override {
    return minor >= 1 && minor <= bands_.size() ? bands_[minor - 1].get() : nullptr;
  }
  unsigned num_children() const override { return static_cast<unsigned>(bands_.size()); }
  Result<std::unique_ptr<Qdisc>> graft(NetDevice& dev, uint32_t minor, std::unique_ptr<Qdisc> q) override {
    if (minor < 1 || minor > bands_.size()) return unexpected("prio has no class :" + std::to_string(minor));
    q->set_dev_queue(&dev, &dev.txq(0));
    q->set_parent((handle() & 0xffff0000u) | minor);
    q->set_parent_qdisc(this);
    std::unique_ptr<Qdisc> old = std::move(bands_[minor - 1]);
    // The old band's packets leave the tree with it (qdisc_tree_flush_backlog).
    QdiscStats os = old->stats();
    QdiscStatsBlock& s = base_stats();
    s.qlen.add(-os.qlen);
    s.backlog.add(-os.backlog);
    bands_[minor - 1] = std::move(q);
    old->set_parent_qdisc(nullptr);
    return old;
  }

  // mirrors prio_dump
  QdiscOptions dump() const override { return opts_; }

 private:
  PrioOptions opts_;
  std::vector<std::unique_ptr<Qdisc>> bands_;
};

}  // namespace

const QdiscRegistrar kPrio{{"prio", [] { return std::unique_ptr<Qdisc>(new PrioQdisc); }, true}};  // prio_qdisc_ops

}  // namespace pktpath
