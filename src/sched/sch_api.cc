// The qdisc registry (register_qdisc / qdisc_lookup_ops) and qdisc_create. The built-in
// disciplines are listed here, as pktsched_init registers them: a static library would
// drop a discipline file that only registers itself.
#include "sched/sch_api.h"

#include <cstdio>
#include <string>

#include "core/netdevice.h"
#include "sched/qdisc.h"
#include "sched/sch_generic.h"

namespace pktpath {

std::unique_ptr<Qdisc> create_noqueue_qdisc();
std::unique_ptr<Qdisc> create_pfifo_qdisc();
std::unique_ptr<Qdisc> create_bfifo_qdisc();
std::unique_ptr<Qdisc> create_pfifo_fast_qdisc();
std::unique_ptr<Qdisc> create_mq_qdisc();
std::unique_ptr<Qdisc> create_prio_qdisc();
std::unique_ptr<Qdisc> create_tbf_qdisc();

const std::vector<QdiscKind>& qdisc_kinds() {
  static const std::vector<QdiscKind> kinds = {
      {"noqueue", create_noqueue_qdisc, false},
      {"pfifo", create_pfifo_qdisc, false},
      {"bfifo", create_bfifo_qdisc, false},
      {"pfifo_fast", create_pfifo_fast_qdisc, false},
      {"mq", create_mq_qdisc, true},
      {"prio", create_prio_qdisc, true},
      {"tbf", create_tbf_qdisc, true},
  };
  return kinds;
}

const QdiscKind* qdisc_lookup_kind(std::string_view id) {
  for (const QdiscKind& k : qdisc_kinds())
    if (id == k.id) return &k;
  return nullptr;
}

std::unique_ptr<Qdisc> qdisc_create(NetDevice& dev, std::string_view kind, const QdiscOptions& opts,
                                    std::string& err) {
  const QdiscKind* k = qdisc_lookup_kind(kind);
  if (!k) {
    err = "unknown qdisc kind \"" + std::string(kind) + "\"";
    return nullptr;
  }
  std::unique_ptr<Qdisc> q = k->create();
  q->set_dev_queue(&dev, &dev.txq(0));
  if (!q->init(dev, opts, err)) return nullptr;
  return q;
}

}  // namespace pktpath

namespace pktpath {

std::string tc_handle_str(uint32_t h) {
  char buf[32];
  const uint32_t maj = h >> 16, min = h & 0xffff;
  if (min == 0)
    std::snprintf(buf, sizeof buf, "%x:", maj);
  else if (maj == 0)
    std::snprintf(buf, sizeof buf, ":%x", min);
  else
    std::snprintf(buf, sizeof buf, "%x:%x", maj, min);
  return buf;
}

static Qdisc* lookup_in(Qdisc* q, uint32_t maj) {
  if (!q) return nullptr;
  if ((q->handle() & 0xffff0000u) == maj && maj != 0) return q;
  for (unsigned i = 0; i < q->num_children(); ++i)
    if (Qdisc* f = lookup_in(q->child(i + 1), maj)) return f;
  return nullptr;
}

Qdisc* qdisc_lookup(NetDevice& dev, uint32_t handle) {
  return lookup_in(dev.qdisc(), handle & 0xffff0000u);
}

static bool handle_in_use(NetDevice& dev, uint32_t handle) {
  return qdisc_lookup(dev, handle) != nullptr;
}

// mirrors tc_modify_qdisc / tc_get_qdisc(RTM_DELQDISC) / qdisc_graft
bool tc_qdisc_modify(DeviceTable& table, NetDevice& dev, const QdiscRequest& req,
                     std::string& err) {
  // The qdisc the request addresses (current occupant of the slot), and its owner.
  Qdisc* parent_q = nullptr;
  uint32_t minor = 0;
  Qdisc* existing = nullptr;
  if (req.parent == TC_H_ROOT) {
    existing = dev.qdisc();
    // A default qdisc (handle 0) is not "there" for add: it is simply replaced.
    if (existing && existing->handle() == 0 && dev.root_is_default() && req.op != QdiscOp::Del)
      existing = nullptr;
  } else {
    parent_q = qdisc_lookup(dev, req.parent);
    minor = req.parent & 0xffff;
    if (!parent_q || minor == 0) {
      err = "parent " + tc_handle_str(req.parent) + " not found";
      return false;
    }
    existing = parent_q->child(minor);
    if (!existing) {
      err = "parent " + tc_handle_str(req.parent) + " has no such class";
      return false;
    }
    // A default child (handle 0) is replaced by add, like a default root.
    if (existing->handle() == 0 && req.op != QdiscOp::Del) existing = nullptr;
  }

  if (req.op == QdiscOp::Del) {
    if (!existing || existing->handle() == 0 ||
        (req.parent == TC_H_ROOT && dev.root_is_default())) {
      err = "cannot delete a qdisc with handle of zero (the default)";
      return false;
    }
    if (!req.kind.empty() && req.kind != existing->kind()) {
      err = "qdisc kind is " + std::string(existing->kind()) + ", not " + req.kind;
      return false;
    }
    if (req.handle_set && req.handle != existing->handle()) {
      err = "no qdisc with handle " + tc_handle_str(req.handle);
      return false;
    }
    if (req.parent == TC_H_ROOT) {
      table.retire(dev.graft_root(nullptr));
      if (dev.is_up())
        dev_activate(dev);  // no root: the default comes back
      else
        dev.set_root_is_default(true);
    } else {
      std::unique_ptr<Qdisc> dflt = qdisc_create(dev, "pfifo", QdiscOptions{}, err);
      if (!dflt) return false;
      std::unique_ptr<Qdisc> old = parent_q->graft(dev, minor, std::move(dflt), err);
      if (!old) return false;
      table.retire(std::move(old));
    }
    return true;
  }

  if (req.op == QdiscOp::Change ||
      (req.op == QdiscOp::Replace && existing && req.kind == existing->kind() &&
       (!req.handle_set || req.handle == existing->handle()))) {
    if (!existing) {
      err = "no qdisc to change";
      return false;
    }
    if (req.kind != existing->kind()) {
      err = "qdisc kind is " + std::string(existing->kind()) + ", not " + req.kind;
      return false;
    }
    if (req.handle_set && req.handle != existing->handle()) {
      err = "no qdisc with handle " + tc_handle_str(req.handle);
      return false;
    }
    return existing->change(dev, req.opts, err);
  }

  if (req.op == QdiscOp::Add && existing) {
    err = "exclusivity flag on, cannot modify: a qdisc is already attached there";
    return false;
  }
  uint32_t handle = req.handle;
  if (req.handle_set) {
    if (handle_in_use(dev, handle) && !(existing && existing->handle() == handle)) {
      err = "handle " + tc_handle_str(handle) + " is already in use";
      return false;
    }
  } else {
    handle = table.alloc_handle(dev);
  }
  // init may look at the handle (children's parent ids): set it before init.
  const QdiscKind* k = qdisc_lookup_kind(req.kind);
  if (!k) {
    err = "unknown qdisc kind \"" + req.kind + "\"";
    return false;
  }
  std::unique_ptr<Qdisc> q = k->create();
  q->set_handle(handle);
  q->set_dev_queue(&dev, &dev.txq(0));
  if (!q->init(dev, req.opts, err)) return false;
  if (req.parent == TC_H_ROOT) {
    q->set_parent(TC_H_ROOT);
    table.retire(dev.graft_root(std::move(q)));
  } else {
    if (q->flags() & TCQ_F_MQROOT) {
      err = "mq can only be the root qdisc";
      return false;
    }
    q->set_parent(req.parent);
    std::unique_ptr<Qdisc> old = parent_q->graft(dev, minor, std::move(q), err);
    if (!old) return false;
    table.retire(std::move(old));
  }
  return true;
}

}  // namespace pktpath
