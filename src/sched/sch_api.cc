// The qdisc kind registry (register_qdisc / qdisc_lookup_ops), qdisc_create and
// tc_modify_qdisc.
#include "sched/sch_api.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/netdevice.h"
#include "sched/clsact.h"
#include "sched/qdisc.h"
#include "sched/sch_generic.h"

namespace pktpath {

namespace {

// qdisc_base: written only while static initialisers run, read-only afterwards.
std::vector<QdiscOps>& qdisc_base() {
  static std::vector<QdiscOps> ops;
  return ops;
}

}  // namespace

void register_qdisc(const QdiscOps& ops) {
  if (qdisc_lookup_ops(ops.id)) {
    std::fprintf(stderr, "pktpath: qdisc kind \"%s\" registered twice\n", ops.id);
    std::abort();
  }
  qdisc_base().push_back(ops);
}

const QdiscOps* qdisc_lookup_ops(std::string_view id) {
  for (const QdiscOps& k : qdisc_base())
    if (id == k.id) return &k;
  return nullptr;
}

std::vector<const QdiscOps*> qdisc_ops_list() {
  std::vector<const QdiscOps*> out;
  for (const QdiscOps& k : qdisc_base()) out.push_back(&k);
  return out;
}

Result<std::unique_ptr<Qdisc>> qdisc_create(NetDevice& dev, std::string_view kind, const QdiscOptions& opts,
                                            uint32_t handle) {
  const QdiscOps* ops = qdisc_lookup_ops(kind);
  if (!ops || !ops->create) return unexpected("Specified qdisc kind is unknown (\"" + std::string(kind) + "\")");
  std::unique_ptr<Qdisc> q = ops->create();
  q->set_handle(handle);
  q->set_dev_queue(&dev, &dev.txq(0));
  if (Status st = q->init(dev, opts); !st) return unexpected(st.error());
  return q;
}

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
    if (Qdisc* f = lookup_in(q->child_at(i), maj)) return f;
  return nullptr;
}

Qdisc* qdisc_lookup(NetDevice& dev, uint32_t handle) {
  return lookup_in(dev.qdisc(), handle & 0xffff0000u);
}

namespace {

std::string wrong_kind(const char* have, const std::string& want) {
  return "Invalid qdisc name: must match existing qdisc (" + std::string(have) + ", not " + want + ")";
}

// clsact / ingress (parent ffff:fff1, handle ffff:): the device's tc filter lists, not a
// tree qdisc. mirrors the TC_H_INGRESS branch of tc_modify_qdisc and qdisc_graft.
Status ingress_modify(NetDevice& dev, const QdiscRequest& req) {
  const char* have = tc::ingress_qdisc_kind(dev);
  if (req.handle_set && req.handle != kIngressHandle)
    return unexpected("the " + (req.kind.empty() ? std::string("clsact") : req.kind) + " qdisc's handle is ffff:");
  if (req.op == QdiscOp::Del) {
    if (!have) return unexpected("Cannot find specified qdisc on specified device (no clsact or ingress on " + dev.name() + ")");
    if (!req.kind.empty() && req.kind != have) return unexpected(wrong_kind(have, req.kind));
    return tc::clsact_del(dev);
  }
  if (have) {
    if (req.op == QdiscOp::Add)
      return unexpected("Exclusivity flag on, cannot modify (" + std::string(have) + " already present on " +
                        dev.name() + ")");
    if (req.kind != have) return unexpected(wrong_kind(have, req.kind));
    return {};  // replace/change with the same kind: nothing to change
  }
  if (req.op == QdiscOp::Change) return unexpected("no qdisc to change");
  return tc::clsact_add(dev, req.kind == "ingress");
}

}  // namespace

// mirrors tc_modify_qdisc / tc_get_qdisc(RTM_DELQDISC) / qdisc_graft
Status tc_qdisc_modify(DeviceTable& table, NetDevice& dev, const QdiscRequest& req) {
  const QdiscOps* ops = req.kind.empty() ? nullptr : qdisc_lookup_ops(req.kind);
  if (!req.kind.empty() && !ops) return unexpected("Specified qdisc kind is unknown (\"" + req.kind + "\")");
  if (req.parent == TC_H_INGRESS || (ops && ops->ingress_hook)) {
    if (req.parent != TC_H_INGRESS && req.parent != TC_H_ROOT)
      return unexpected("qdisc " + req.kind + " attaches at parent ffff:fff1 only");
    if (ops && !ops->ingress_hook) return unexpected("qdisc " + req.kind + " cannot be attached at ffff:fff1");
    return ingress_modify(dev, req);
  }

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
    if (!parent_q)
      return unexpected("Failed to find specified qdisc (parent " + tc_handle_str(req.parent) + " on " + dev.name() + ")");
    existing = parent_q->child(minor);
    if (!existing) return unexpected("Specified class not found (parent " + tc_handle_str(req.parent) + ")");
    // A default child (handle 0) is replaced by add, like a default root.
    if (existing->handle() == 0 && req.op != QdiscOp::Del) existing = nullptr;
  }

  if (req.op == QdiscOp::Del) {
    if (!existing || existing->handle() == 0 || (req.parent == TC_H_ROOT && dev.root_is_default()))
      return unexpected("cannot delete a qdisc with handle of zero (the default)");
    if (!req.kind.empty() && req.kind != existing->kind()) return unexpected(wrong_kind(existing->kind(), req.kind));
    if (req.handle_set && req.handle != existing->handle())
      return unexpected("no qdisc with handle " + tc_handle_str(req.handle));
    if (req.parent == TC_H_ROOT) {
      table.retire(dev.graft_root(nullptr));
      if (dev.is_up())
        dev_activate(dev);  // no root: the default comes back
      else
        dev.set_root_is_default(true);
    } else {
      auto dflt = qdisc_create(dev, "pfifo", QdiscOptions{});
      if (!dflt) return unexpected(dflt.error());
      auto old = parent_q->graft(dev, minor, std::move(*dflt));
      if (!old) return unexpected(old.error());
      table.retire(std::move(*old));
    }
    return {};
  }

  if (req.op == QdiscOp::Change ||
      (req.op == QdiscOp::Replace && existing && req.kind == existing->kind() &&
       (!req.handle_set || req.handle == existing->handle()))) {
    if (!existing) return unexpected("Qdisc not found. To create specify NLM_F_CREATE flag (none configured there)");
    if (req.kind != existing->kind()) return unexpected(wrong_kind(existing->kind(), req.kind));
    if (req.handle_set && req.handle != existing->handle())
      return unexpected("no qdisc with handle " + tc_handle_str(req.handle));
    return existing->change(dev, req.opts);
  }

  if (req.op == QdiscOp::Add && existing) {
    if (req.handle_set && req.handle != existing->handle())
      return unexpected("NLM_F_REPLACE needed to override (" + tc_handle_str(existing->handle()) + " is attached there)");
    return unexpected("Exclusivity flag on, cannot modify (" + tc_handle_str(existing->handle()) + " is attached there)");
  }
  uint32_t handle = req.handle;
  if (req.handle_set) {
    if (qdisc_lookup(dev, handle) && !(existing && existing->handle() == handle))
      return unexpected("Cannot move an existing qdisc to a different parent (handle " + tc_handle_str(handle) +
                        " is in use)");
  } else {
    handle = table.alloc_handle(dev);
  }
  auto created = qdisc_create(dev, req.kind, req.opts, handle);
  if (!created) return unexpected(created.error());
  std::unique_ptr<Qdisc> q = std::move(*created);
  if (req.parent == TC_H_ROOT) {
    q->set_parent(TC_H_ROOT);
    table.retire(dev.graft_root(std::move(q)));
  } else {
    if (q->flags() & TCQ_F_MQROOT) return unexpected("mq can only be the root qdisc");
    Qdisc* const grafted = q.get();
    auto old = parent_q->graft(dev, minor, std::move(q));
    if (!old) return unexpected(old.error());
    grafted->set_parent(req.parent);  // as written: qdisc_create's parentid is the clid
    table.retire(std::move(*old));
  }
  return {};
}

namespace {
// Whether a filter of the qdisc's own block names `classid` (tcf_bind_filter's count).
bool class_bound(NetDevice& dev, Qdisc& q, uint32_t classid) {
  tc::FilterBlock* b = q.filter_block();
  bool bound = false;
  if (b)
    tc::block_filter_walk(dev, *b, [&](const tc::TcFilter& f) {
      bound = bound || (f.spec_base().classid_set && f.spec_base().classid == classid);
    });
  return bound;
}
}  // namespace

// mirrors tc_ctl_tclass: the qdisc from the majors of the parent and the classid (which
// must agree), else the root qdisc; then the class. The kernel gives no extack for these
// refusals, so tc prints the errno's text.
Status tc_class_modify(DeviceTable& table, NetDevice& dev, const ClassRequest& req, std::string* warn) {
  uint32_t qid = req.classid & 0xffff0000u;
  const uint32_t qid1 = req.parent & 0xffff0000u;
  if (req.parent != TC_H_ROOT && qid && qid1 && qid != qid1)
    return unexpected("RTNETLINK answers: Invalid argument (class " + tc_handle_str(req.classid) +
                      " is not of the parent's qdisc " + tc_handle_str(qid1) + ")");
  if (req.parent != TC_H_ROOT && qid1) qid = qid1;
  if (!qid) qid = dev.qdisc() ? dev.qdisc()->handle() : 0;
  Qdisc* q = qid ? qdisc_lookup(dev, qid) : nullptr;
  if (!q)
    return unexpected("RTNETLINK answers: No such file or directory (no qdisc " + tc_handle_str(qid) + " on " +
                      dev.name() + ")");
  if (!req.kind.empty() && req.kind != q->kind()) return unexpected(wrong_kind(q->kind(), req.kind));
  uint32_t parent = req.parent;
  if (parent != 0 && parent != TC_H_ROOT) parent = qid | (parent & 0xffff);  // TC_H_MAKE(qid, portid)
  if (parent != 0 && parent != TC_H_ROOT && (parent & 0xffff) == 0) parent = TC_H_ROOT;
  const uint32_t classid = qid | (req.classid & 0xffff);
  std::string w;
  const bool exists = (classid & 0xffff) && q->class_find(classid);
  const auto no_class = [&] {
    return unexpected("RTNETLINK answers: No such file or directory (no class " + tc_handle_str(classid) + ")");
  };
  if (req.op == ClassOp::Del) {
    if (!exists) return no_class();
    if (class_bound(dev, *q, classid))  // qdisc_class_in_use: a filter's classid names it
      return unexpected(std::string(q->kind() == std::string_view("htb") ? "HTB class" : "Class") + " in use (a filter's classid is " +
                        tc_handle_str(classid) + ")");
    return q->class_delete(dev, table.control_cpu(), classid);
  }
  if (req.op == ClassOp::Add && exists)
    return unexpected("RTNETLINK answers: File exists (class " + tc_handle_str(classid) + ")");
  if (req.op == ClassOp::Change && !exists) return no_class();
  if (!(classid & 0xffff))
    return unexpected("RTNETLINK answers: Invalid argument (classid " + tc_handle_str(classid) + " names no class)");
  if (Status st = q->class_change(dev, table.control_cpu(), parent, classid, req.opts, w); !st) return st;
  if (warn) *warn = w;
  return {};
}

}  // namespace pktpath
