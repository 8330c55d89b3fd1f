// `tc class add|change|replace|del dev D parent P|root classid X:Y [KIND ...]` and
// `tc [-s] [-j] class show dev D` (iproute2's tc/tc_class.c: tc_class_modify,
// print_class). The kind's words are parsed and printed by its q_<kind>.cc.
#include <cstdio>

#include "cli/script_exec.h"
#include "cli/tc/tc.h"
#include "cli/tc/tc_util.h"
#include "sched/sch_api.h"

namespace pktpath::cli::tc {
namespace {

struct ClassLine final : ExtLine {
  std::string dev;
  ClassRequest req;
  std::string at;  // what errors name: the kind, else the classid

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = find_settled_device(r, dev, err);
    if (!d) return false;
    std::string warn;
    auto st = tc_class_modify(r.table(), *d, req, &warn);
    if (!st) return fail(err, at, st.error().msg);
    if (!warn.empty()) std::fprintf(stderr, "%s\n", warn.c_str());  // the kernel's log line
    return true;
  }
};

struct ClassShowLine final : ExtLine {
  std::string dev;
  TcFlags flags;

  // mirrors print_class for every class of every classful qdisc of the device's tree
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = find_settled_device(r, dev, err);
    if (!d) return false;
    PrintSink out(flags.json || r.json());
    out.stats = flags.stats;
    out.details = flags.details;
    const uint64_t now_ns = r.control_cpu().clock().now_ns();
    std::vector<Qdisc*> qs;
    collect(d->qdisc(), qs);
    for (Qdisc* q : qs) {
      const QdiscUtil* u = get_qdisc_util(q->kind());
      for (const QdiscClassInfo& c : q->class_dump(now_ns)) print(*q, u, c, out);
    }
    if (out.is_json())
      std::fprintf(r.out(), "%s\n", out.json_text().c_str());
    else
      std::fputs(out.take_text().c_str(), r.out());
    return true;
  }

  static void collect(Qdisc* q, std::vector<Qdisc*>& out) {
    if (!q) return;
    out.push_back(q);
    for (unsigned i = 0; i < q->num_children(); ++i) collect(q->child_at(i), out);
  }

  // mirrors print_class: iproute2 6.1's text; JSON as 6.2 has it (6.1 prints classes as
  // text under -j), with "leaf" as the qdisc's handle.
  void print(const Qdisc& q, const QdiscUtil* u, const QdiscClassInfo& c, PrintSink& out) const {
    out.open_object(nullptr);
    out.print_string(PRINT_ANY, "class", "class %s ", q.kind());
    out.print_string(PRINT_ANY, "handle", "%s ", tc_handle_str(c.classid));
    if (c.parent == TC_H_ROOT)
      out.print_bool(PRINT_ANY, "root", "root ", true);
    else
      out.print_string(PRINT_ANY, "parent", "parent %s ", tc_handle_str(c.parent));
    if (c.leaf_handle) out.print_string(PRINT_ANY, "leaf", "leaf %s ", tc_handle_str(c.leaf_handle));
    if (u && u->print_copt) u->print_copt(c.opts, out);  // print_class keeps the space each field ends with
    out.print_nl();
    if (flags.stats) {
      // A class without counters still dumps an empty TCA_STATS2: tc prints its newline.
      out.open_object("stats");
      if (c.has_stats) print_tcstats(out, c.stats, " ");
      out.print_nl();
      if (u && u->print_cxstats && !c.xstats.empty()) {
        u->print_cxstats(c.xstats, out);
        out.print_nl();
      }
      out.close_object();
    }
    out.close_object();
  }
};

Result<ExtCommand> parse_class_show(Lexer& lx, const TcFlags& flags) {
  auto line = std::make_shared<ClassShowLine>();
  line->flags = flags;
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k != "dev") return unexpected("unexpected word \"" + k + "\" for tc class show", k);
    auto v = lx.value(k);
    if (!v) return unexpected(v.error());
    line->dev = *v;
  }
  if (line->dev.empty()) return unexpected("tc class show needs \"dev DEV\"", "show");
  return ExtCommand{line};
}

// A classid or parent as tc_class_modify reads it (get_tc_classid).
Result<uint32_t> classid_word(Lexer& lx, const std::string& k) {
  auto v = lx.value(k);
  if (!v) return unexpected(v.error());
  auto id = get_tc_classid(*v);
  if (!id) return unexpected("invalid " + k + " \"" + *v + "\"", *v);
  return *id;
}

}  // namespace

// mirrors tc_class_modify (tc/tc_class.c)
Result<ExtCommand> parse_class(Lexer& lx, const TcFlags& flags) {
  const std::string verb = lx.next();
  if (is_show_verb(verb)) return parse_class_show(lx, flags);
  auto line = std::make_shared<ClassLine>();
  ClassRequest& req = line->req;
  auto op = parse_modify_verb(verb, "class");
  if (!op) return unexpected(op.error());
  req.op = *op;
  bool have_classid = false;
  std::string classid_text;
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k == "dev") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      line->dev = *v;
    } else if (k == "root") {
      if (req.parent) return unexpected("\"root\" given twice or with \"parent\"", k);
      req.parent = TC_H_ROOT;
    } else if (k == "parent") {
      if (req.parent) return unexpected("\"parent\" given twice or with \"root\"", k);
      auto id = classid_word(lx, k);
      if (!id) return unexpected(id.error());
      req.parent = *id;
    } else if (k == "classid") {
      auto id = classid_word(lx, k);
      if (!id) return unexpected(id.error());
      req.classid = *id;
      classid_text = lx.prev();
      have_classid = true;
    } else {
      const QdiscUtil* u = get_qdisc_util(k);
      if (!u) return unexpected("Specified qdisc kind is unknown (\"" + k + "\")", k);
      line->at = k;
      req.kind = k;
      if (req.op == ClassOp::Del) {
        if (!lx.done()) return unexpected("tc class del takes no " + k + " options", lx.peek());
        break;
      }
      if (!u->parse_copt) return unexpected("qdisc " + k + " has no class options", k);
      auto o = u->parse_copt(lx);
      if (!o) return unexpected(o.error());
      req.opts = std::move(*o);
      break;
    }
  }
  if (line->dev.empty()) return unexpected("tc class needs \"dev DEV\"", verb);
  if (!have_classid) return unexpected("tc class needs \"classid X:Y\"", line->at.empty() ? verb : line->at);
  if (line->at.empty()) line->at = classid_text;
  if (req.op != ClassOp::Del && req.kind.empty()) return unexpected("tc class needs a qdisc kind", classid_text);
  return ExtCommand{line};
}

}  // namespace pktpath::cli::tc
