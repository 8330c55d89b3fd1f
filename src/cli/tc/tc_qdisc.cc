// `tc qdisc add|replace|change|del ...` and `tc [-s] [-j] qdisc show [dev D]` (iproute2's
// tc/tc_qdisc.c: tc_qdisc_modify, print_qdisc). The kind's words are parsed and
// printed by its q_<kind>.cc.
#include <algorithm>
#include <cstdio>

#include "cli/script_exec.h"
#include "cli/tc/tc.h"
#include "cli/tc/tc_util.h"
#include "sched/clsact.h"
#include "sched/sch_api.h"
#include "sched/sch_generic.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

struct QdiscLine final : ExtLine {
  std::string dev;
  QdiscRequest req;
  std::string kind_word;  // what errors name

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = find_settled_device(r, dev, err);
    if (!d) return false;
    auto st = tc_qdisc_modify(r.table(), *d, req);
    if (!st) return fail(err, kind_word.empty() ? dev : kind_word, st.error().msg);
    return true;
  }
};

// Which qdiscs show lists: the root, then children that are not invisible defaults (a
// default child has handle 0, except mq's, which tc shows).
void collect(Qdisc* q, bool is_root, bool parent_is_mq, std::vector<std::pair<Qdisc*, bool>>& out) {
  if (!q) return;
  if (is_root || q->handle() != 0 || parent_is_mq) out.emplace_back(q, is_root);
  const bool mq = q->flags() & TCQ_F_MQROOT;
  for (unsigned i = 0; i < q->num_children(); ++i) collect(q->child_at(i), false, mq, out);
}

// mirrors tc_dump_qdisc_root's order: the root, then the device's qdisc hash walked
// (hash_for_each over 16 buckets keyed by handle, hash_32; a bucket's newest first,
// taken here as the later in the tree).
void dump_order(std::vector<std::pair<Qdisc*, bool>>& qs) {
  if (qs.size() < 3) return;
  auto bucket = [](const Qdisc* q) { return (q->handle() * 0x61C88647u) >> 28; };
  std::vector<std::pair<Qdisc*, bool>> rest(qs.rbegin(), qs.rend() - 1);  // newest first
  std::stable_sort(rest.begin(), rest.end(), [&](const auto& a, const auto& b) { return bucket(a.first) < bucket(b.first); });
  std::copy(rest.begin(), rest.end(), qs.begin() + 1);
}

// One row of the show: what print_qdisc prints for one qdisc.
struct QdiscRow {
  std::string kind;
  uint32_t handle = 0;
  bool is_root = false;
  uint32_t parent = 0;
  QdiscOptions opts;
  QdiscStats stats;
  QdiscXstats xstats;
  bool mq_root = false;  // TCQ_F_MQROOT
};

struct QdiscShowLine final : ExtLine {
  enum class Only { All, Root, Ingress };  // `root`, `ingress` / `clsact`: that qdisc alone
  std::string dev;  // empty: all
  Only only = Only::All;
  TcFlags flags;

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    std::vector<NetDevice*> devs;
    if (!dev.empty()) {
      NetDevice* d = r.table().find(dev);
      if (!d) return fail(err, dev, "Cannot find device \"" + dev + "\"");
      devs.push_back(d);
    } else {
      devs = r.table().list();
    }
    r.drain_pending();
    PrintSink out(flags.json || r.json());
    out.stats = flags.stats;
    out.details = flags.details;
    const uint64_t now_ns = r.control_cpu().clock().now_ns();
    for (NetDevice* d : devs)
      for (const QdiscRow& row : rows(*d, now_ns)) {
        if (only == Only::Root && !row.is_root) continue;
        if (only == Only::Ingress && row.parent != TC_H_INGRESS) continue;
        print(row, *d, out);
      }
    if (out.is_json())
      std::fprintf(r.out(), "%s\n", out.json_text().c_str());
    else
      std::fputs(out.take_text().c_str(), r.out());
    return true;
  }

  static std::vector<QdiscRow> rows(NetDevice& d, uint64_t now_ns) {
    std::vector<std::pair<Qdisc*, bool>> qs;
    if (d.is_up() || !d.root_is_default()) collect(d.qdisc(), true, false, qs);
    dump_order(qs);
    // A down device with no configured qdisc shows noop, as the kernel does.
    if (qs.empty()) qs.emplace_back(&noop_qdisc(), true);
    std::vector<QdiscRow> out;
    for (auto [q, is_root] : qs)
      out.push_back(QdiscRow{q->kind(), q->handle(), is_root, q->parent(), q->dump(), q->stats(),
                             q->xstats(now_ns), (q->flags() & TCQ_F_MQROOT) != 0});
    // clsact / ingress: listed after the tree, at parent ffff:fff1.
    if (const char* k = ktc::ingress_qdisc_kind(d)) {
      QdiscRow row{k, kIngressHandle, false, TC_H_INGRESS, {}, {}, {}};
      for (ktc::Dir dir : {ktc::Dir::Egress, ktc::Dir::Ingress}) {
        const auto s = ktc::clsact_stats(d, dir);
        row.stats.bytes += s.bytes;
        row.stats.packets += s.packets;
        row.stats.drops += s.drops;
        row.stats.overlimits += s.overlimits;
      }
      out.push_back(std::move(row));
    }
    return out;
  }

  // mirrors print_qdisc
  void print(const QdiscRow& q, NetDevice& d, PrintSink& out) const {
    const QdiscUtil* u = get_qdisc_util(q.kind);
    out.open_object(nullptr);
    out.print_string(PRINT_ANY, "kind", "qdisc %s", q.kind);
    out.print_string(PRINT_ANY, "handle", " %s", tc_handle_str(q.handle));
    out.print_string(PRINT_FP, nullptr, " ", "");
    if (dev.empty()) {
      out.print_string(PRINT_FP, nullptr, "dev ", "");
      out.print_string(PRINT_ANY, "dev", "%s ", d.name());
    }
    if (q.is_root) {
      out.print_bool(PRINT_ANY, "root", "root ", true);
      // tcm_info, printed when not 1: the tx queues hold a root, not an mq root (they
      // hold its children).
      if (!q.mq_root) out.print_uint(PRINT_ANY, "refcnt", "refcnt %u ", 2);
    } else {
      out.print_string(PRINT_ANY, "parent", "parent %s ", tc_handle_str(q.parent));
    }
    out.open_object("options");
    if (u && u->print_qopt) u->print_qopt(q.opts, out);  // print_qdisc keeps the space each field ends with
    out.close_object();
    out.print_nl();
    if (flags.stats) {
      print_tcstats(out, q.stats, " ");
      out.print_nl();
      if (u && u->print_xstats && !q.xstats.empty()) {
        u->print_xstats(q.xstats, out);
        out.print_nl();
      }
    }
    out.close_object();
  }
};

Result<ExtCommand> parse_show(Lexer& lx, const TcFlags& flags) {
  auto line = std::make_shared<QdiscShowLine>();
  line->flags = flags;
  if (lx.eat("dev")) {
    auto v = lx.value("dev");
    if (!v) return unexpected(v.error());
    line->dev = *v;
  }
  // tc_qdisc_list's selectors: the root alone, or the ingress/clsact qdisc alone.
  if (lx.eat("root")) line->only = QdiscShowLine::Only::Root;
  else if (lx.eat("ingress") || lx.eat("clsact")) line->only = QdiscShowLine::Only::Ingress;
  if (!lx.done()) return unexpected("unexpected \"" + lx.peek() + "\"", lx.peek());
  return ExtCommand{line};
}

}  // namespace

// mirrors tc_qdisc_modify (tc/tc_qdisc.c)
Result<ExtCommand> parse_qdisc(Lexer& lx, const TcFlags& flags) {
  const std::string verb = lx.next();
  if (is_show_verb(verb)) return parse_show(lx, flags);
  auto line = std::make_shared<QdiscLine>();
  QdiscRequest& req = line->req;
  auto op = parse_modify_verb(verb, "qdisc");
  if (!op) return unexpected(op.error());
  req.op = *op;
  bool have_parent = false;
  const QdiscUtil* util = nullptr;
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k == "dev") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      line->dev = *v;
    } else if (k == "root") {
      if (have_parent) return unexpected("\"root\" given twice or with \"parent\"", k);
      req.parent = TC_H_ROOT;
      have_parent = true;
    } else if (k == "parent") {
      if (have_parent) return unexpected("\"parent\" given twice or with \"root\"", k);
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto p = get_tc_classid(*v);
      // `MAJ:` is the qdisc's class 0, which only a kind that takes any class (tbf) has.
      if (!p || *p == 0 || *p == TC_H_ROOT || v->find(':') == std::string::npos)
        return unexpected("bad parent \"" + *v + "\" (want MAJ:MIN)", *v);
      req.parent = *p;
      have_parent = true;
    } else if (k == "handle") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto h = get_qdisc_handle(*v);
      if (!h || *h == 0) return unexpected("argument \"" + *v + "\" is wrong: invalid qdisc ID", *v);
      req.handle = *h;
      req.handle_set = true;
    } else {
      line->kind_word = k;
      util = get_qdisc_util(k);
      if (!util) return unexpected("Specified qdisc kind is unknown (\"" + k + "\")", k);
      req.kind = k;
      if (util->parse_qopt) {
        auto o = util->parse_qopt(lx);
        if (!o) return unexpected(o.error());
        req.opts = std::move(*o);
      } else if (!lx.done()) {
        return unexpected("qdisc " + k + " takes no options", lx.peek());
      }
      break;
    }
  }
  const std::string& at_kind = line->kind_word;
  if (line->dev.empty()) return unexpected("tc qdisc needs \"dev DEV\"", at_kind);
  if (util && util->ingress_hook) {
    if (req.op == QdiscOp::Change) return unexpected("tc qdisc change: " + at_kind + " supports add, replace, del", verb);
    if (have_parent && req.parent != TC_H_ROOT && req.parent != TC_H_INGRESS)
      return unexpected("qdisc " + at_kind + " attaches at parent ffff:fff1", at_kind);
    req.parent = TC_H_INGRESS;
    have_parent = true;
  }
  if (!have_parent) return unexpected("tc qdisc needs \"root\" or \"parent X:Y\"", at_kind);
  if (req.kind.empty() && req.op != QdiscOp::Del) return unexpected("tc qdisc needs a qdisc kind", at_kind);
  return ExtCommand{line};
}

}  // namespace pktpath::cli::tc
