// mq: the root of a multi-queue device, one child qdisc per tx queue (default
// pfifo_fast), so senders on different queues never share a qdisc (net/sched/sch_mq.c).
// mq itself is never on the datapath: the tx queues point at the children.
#include <string>
#include <vector>

#include "core/netdevice.h"
#include "core/net.h"
#include "sched/qdisc.h"
#include "sched/sch_api.h"

namespace pktpath {

namespace {

class MqQdisc final : public Qdisc {
 public:
  MqQdisc() : Qdisc("mq", TCQ_F_MQROOT) {}

  int enqueue(Cpu&, Packet* p, PacketList& to_free) override {
    to_free.push_back(p);
    return NET_XMIT_DROP;
  }
  Packet* dequeue(Cpu&) override { return nullptr; }
  Packet* peek(Cpu&) override { return nullptr; }
  void reset(Cpu& cpu) override {
    for (auto& c : children_) {
      c->reset(cpu);
      c->reset_requeued(cpu);
    }
  }

  // mirrors mq_init: only for multi-queue devices; a default child per tx queue.
  Status init(NetDevice& dev, const QdiscOptions& opts) override {
    if (!opts.empty()) return unexpected("qdisc mq takes no options");
    if (dev.num_tx_queues() < 2) return unexpected("mq needs a multi-queue device (numtxqueues > 1)");
    children_.clear();
    for (uint16_t i = 0; i < dev.num_tx_queues(); ++i) {
      auto c = qdisc_create(dev, dev.net().default_qdisc(), QdiscOptions{});  // get_default_qdisc_ops
      if (!c) return unexpected(c.error().msg);
      setup_child(dev, **c, i);
      children_.push_back(std::move(*c));
    }
    return {};
  }

  // mq has no ->change (mirrors qdisc_change): `replace` of an mq by an mq keeps it and
  // its children (the tx queues point at them); options cannot be changed.
  Status change(NetDevice&, const QdiscOptions& opts) override {
    if (opts.empty()) return {};
    return unexpected("Change operation not supported by specified qdisc");
  }

  // mirrors mq_attach
  void attach(NetDevice& dev) override {
    set_dev_queue(&dev, &dev.txq(0));
    for (uint16_t i = 0; i < dev.num_tx_queues(); ++i) {
      setup_child(dev, *children_[i], i);
      dev.txq(i).qdisc = children_[i].get();
    }
  }

  Qdisc* child(uint32_t minor) const override {
    return minor >= 1 && minor <= children_.size() ? children_[minor - 1].get() : nullptr;
  }
  unsigned num_children() const override { return static_cast<unsigned>(children_.size()); }

  // mirrors mq_graft
  Result<std::unique_ptr<Qdisc>> graft(NetDevice& dev, uint32_t minor, std::unique_ptr<Qdisc> q) override {
    if (minor < 1 || minor > children_.size()) return unexpected("mq has no class :" + std::to_string(minor));
    setup_child(dev, *q, static_cast<uint16_t>(minor - 1));
    std::unique_ptr<Qdisc> old = std::move(children_[minor - 1]);
    children_[minor - 1] = std::move(q);
    if (dev.is_up()) dev.txq(static_cast<uint16_t>(minor - 1)).qdisc = children_[minor - 1].get();
    return old;
  }

  // mirrors mq_dump_class and mq_dump_class_stats: a class per tx queue at the root,
  // its leaf the queue's qdisc, its counters that qdisc's.
  std::vector<QdiscClassInfo> class_dump(uint64_t) const override {
    std::vector<QdiscClassInfo> out;
    for (size_t i = 0; i < children_.size(); ++i) {
      QdiscClassInfo c;
      c.classid = (handle() & 0xffff0000u) | static_cast<uint32_t>(i + 1);
      c.parent = TC_H_ROOT;
      c.leaf_handle = children_[i]->handle();
      c.stats = children_[i]->stats();
      out.push_back(std::move(c));
    }
    return out;
  }

  // mirrors mq_dump: the root's counters are the sum of its children's.
  QdiscStats stats() const override {
    QdiscStats s;
    for (const auto& c : children_) s += c->stats();
    return s;
  }

 private:
  void setup_child(NetDevice& dev, Qdisc& c, uint16_t i) {
    c.set_dev_queue(&dev, &dev.txq(i));
    c.set_flags(c.flags() | TCQ_F_ONETXQUEUE);
    c.set_parent((handle() & 0xffff0000u) | (i + 1u));
  }

  std::vector<std::unique_ptr<Qdisc>> children_;
};

}  // namespace

const QdiscRegistrar kMq{{"mq", [] { return std::unique_ptr<Qdisc>(new MqQdisc); }, true}};  // mq_qdisc_ops

}  // namespace pktpath
