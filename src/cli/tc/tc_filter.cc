// `tc filter add|replace|change|del dev D egress|ingress|parent P ... KIND ...` and
// `tc [-s] [-j] filter show dev D egress|ingress` (iproute2's tc/tc_filter.c). The
// kind's words are parsed and printed by its f_<kind>.cc, actions by m_<kind>.cc.
// Words are checked at parse time (programs compiled, files read); devices are looked
// up when the line runs.
#include <cstdio>
#include <functional>
#include <optional>

#include "cli/script_exec.h"
#include "cli/tc/tc.h"
#include "cli/tc/tc_util.h"
#include "sched/clsact.h"
#include "sched/sch_api.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

// The filter list a line addresses: a clsact side, a classful qdisc's own list
// (`parent MAJ:`) or one of its classes' (`parent MAJ:MIN`), found when the line runs.
struct FilterTarget {
  ktc::Dir dir = ktc::Dir::Egress;
  uint32_t qdisc = 0;  // MAJ:0 of the qdisc; 0: clsact
  uint32_t cls = 0;    // MAJ:MIN of the class; 0: the qdisc's own list

  // The list, or nullptr with *msg (only when `qdisc` is set). mirrors tc_new_tfilter's
  // lookups (qdisc, then class, then the block).
  ktc::FilterBlock* block(NetDevice& d, std::string* msg) const {
    Qdisc* q = qdisc_lookup(d, qdisc);
    if (!q) {
      *msg = "Parent Qdisc doesn't exists (" + tc_handle_str(qdisc) + " on " + d.name() + ")";
      return nullptr;
    }
    if (!q->filter_block()) {
      *msg = "qdisc " + std::string(q->kind()) + " " + tc_handle_str(qdisc) + " takes no filters";
      return nullptr;
    }
    if (!cls) return q->filter_block();
    ktc::FilterBlock* b = q->class_filter_block(cls);
    if (!b) *msg = "Specified class doesn't exist (" + tc_handle_str(cls) + ")";
    return b;
  }
  void walk(NetDevice& d, const std::function<void(const ktc::TcFilter&)>& fn) const {
    std::string msg;
    if (!qdisc)
      ktc::filter_walk_all(d, dir, fn);
    else if (const ktc::FilterBlock* b = block(d, &msg))
      ktc::block_filter_walk(d, *b, fn);
  }
};

struct FilterLine final : ExtLine {
  enum class Op { Add, Replace, Del } op = Op::Add;
  std::string dev;
  FilterTarget target;
  FilterRequest req;

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = r.table().find(dev);
    if (!d) return fail(err, dev, "Cannot find device \"" + dev + "\"");
    std::string msg;
    ktc::FilterBlock* block = nullptr;
    if (target.qdisc && !(block = target.block(*d, &msg))) return fail(err, dev, msg);
    if (op == Op::Del) {
      const Status st = block ? ktc::block_filter_del(*d, *block, req.pref, req.handle)
                              : ktc::filter_del(*d, target.dir, req.pref, req.handle);
      if (!st) return fail(err, dev, st.error().msg);
      return true;
    }
    std::unique_ptr<ktc::FilterSpec> s = req.spec->clone();
    s->pref = req.pref;
    s->handle = req.handle;
    s->protocol = req.protocol;
    for (const ActionRequest& a : req.actions) {
      auto act = ktc::tcf_action_init(a.kind, a.opts, r.table());
      if (!act) return fail(err, act.error().word.empty() ? a.kind : act.error().word, act.error().msg);
      s->actions.push_back(std::move(*act));
    }
    const Status st = block ? ktc::block_filter_add(*d, *block, *s, op == Op::Replace)
                            : ktc::filter_add(*d, target.dir, *s, op == Op::Replace);
    if (!st) return fail(err, st.error().word.empty() ? s->kind() : st.error().word, st.error().msg);
    return true;
  }
};

bool parse_dir(const std::string& s, ktc::Dir& d) {
  if (s == "egress")
    d = ktc::Dir::Egress;
  else if (s == "ingress")
    d = ktc::Dir::Ingress;
  else
    return false;
  return true;
}

// `parent P`: clsact's sides ffff:fff2 (ingress) and ffff:fff3 (egress), ffff: (the
// ingress qdisc), MAJ: of a classful qdisc (its own list) or MAJ:MIN (a class's list).
Status parse_parent(const std::string& v, FilterTarget& t) {
  auto p = get_tc_classid(v);
  if (p && *p == (kIngressHandle | TC_H_MIN_EGRESS))
    t.dir = ktc::Dir::Egress;
  else if (p && (*p == (kIngressHandle | TC_H_MIN_INGRESS) || *p == kIngressHandle))
    t.dir = ktc::Dir::Ingress;
  else if (p && *p != TC_H_ROOT && (*p >> 16) != 0 && (*p >> 16) != 0xffff && (*p & 0xffff) == 0)
    t.qdisc = *p;
  else if (p && *p != TC_H_ROOT && (*p >> 16) != 0 && (*p >> 16) != 0xffff) {
    t.qdisc = *p & 0xffff0000u;
    t.cls = *p;
  }
  else
    return unexpected("parent must be clsact's ingress or egress (ffff:fff2, ffff:fff3), ffff: or a qdisc MAJ:", v);
  return {};
}

std::string proto_name(uint16_t p) {
  char b[16];
  if (p == ktc::kEthPAll) return "all";
  if (p == 0x0800) return "ip";
  if (p == 0x86dd) return "ipv6";
  if (p == 0x0806) return "arp";
  if (p == 0x8100) return "802.1Q";
  if (p == 0x88a8) return "802.1ad";
  std::snprintf(b, sizeof b, "0x%04x", p);
  return b;
}

struct FilterShowLine final : ExtLine {
  std::string dev;
  FilterTarget target;
  TcFlags flags;
  bool of_root = false;  // neither parent nor a direction: the root qdisc's filters

  bool execute(ScriptRunner& r, ScriptError& err) const override {
    NetDevice* d = find_settled_device(r, dev, err);
    if (!d) return false;
    // mirrors tc_dump_tfilter without a parent: the root qdisc's block, each line naming
    // the parent (nothing for a root that takes no filters).
    FilterTarget target = this->target;
    std::string parent_word;
    if (of_root) {
      Qdisc* root = d->qdisc();
      if (!root || !root->filter_block() || root->handle() == 0) {
        if (flags.json || r.json()) std::fprintf(r.out(), "[]\n");  // new_json_obj's empty array
        return true;
      }
      target.qdisc = root->handle();
      parent_word = "parent " + tc_handle_str(root->handle()) + " ";
    }
    PrintSink out(flags.json || r.json());
    out.stats = flags.stats;
    out.details = flags.details;
    // mirrors print_filter up to the kind's options: "filter [parent P ]protocol P pref N
    // KIND chain 0 ", from values copied out of the filter (the last pref's head prints
    // after the walk, when the filters may no longer be read).
    auto head_of = [&](const ktc::TcFilter& f) -> FilterHead {
      return [&, proto = proto_name(f.protocol()), pref = f.pref(), kind = std::string(f.kind())](PrintSink& o) {
        o.print_string(PRINT_FP, nullptr, "filter ", "");
        if (of_root) o.print_string(PRINT_ANY, "parent", "parent %s ", tc_handle_str(target.qdisc));
        o.print_string(PRINT_ANY, "protocol", "protocol %s ", proto);
        o.print_uint(PRINT_ANY, "pref", "pref %u ", pref);
        o.print_string(PRINT_ANY, "kind", "%s ", kind);
        o.print_uint(PRINT_ANY, "chain", "chain %u ", 0);
      };
    };
    // The pref being printed: its number, its kind's gap printer (FilterUtil::print_gap)
    // and head; none before the first filter.
    std::optional<uint32_t> cur_pref;
    const FilterUtil* cur_util = nullptr;
    FilterHead cur_head;
    uint64_t gap_state = 0;
    auto end_pref = [&] {
      if (cur_pref && cur_util->print_gap) cur_util->print_gap(nullptr, gap_state, cur_head, out);
      cur_pref.reset();
      gap_state = 0;
    };
    target.walk(*d, [&](const ktc::TcFilter& f) {
      const FilterUtil* util = get_filter_util(f.kind());
      if (!util) return;
      if (cur_pref && *cur_pref != f.pref()) end_pref();
      const FilterHead head = head_of(f);
      // tc's layout: the pref's line (once per pref, as the kernel dumps its tcf_proto
      // before the nodes), then each filter with its options and actions.
      if (!cur_pref) {
        out.open_object(nullptr);
        head(out);
        out.print_nl();
        out.close_object();
      }
      if (util->print_gap) util->print_gap(&f, gap_state, head, out);
      out.open_object(nullptr);
      head(out);
      out.open_object("options");
      util->print_fopt(f, out);
      print_actions(f.spec_base(), out);
      out.close_object();
      out.print_nl();
      out.close_object();
      cur_pref = f.pref();
      cur_util = util;
      cur_head = head;
    });
    end_pref();
    if (out.is_json())
      std::fprintf(r.out(), "%s\n", out.json_text().c_str());
    else
      std::fputs(out.take_text().c_str(), r.out());
    return true;
  }
};

Result<ExtCommand> parse_filter_show(Lexer& lx, const TcFlags& flags) {
  auto line = std::make_shared<FilterShowLine>();
  line->flags = flags;
  bool have_dir = false;
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k == "dev") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      line->dev = *v;
    } else if (parse_dir(k, line->target.dir)) {
      have_dir = true;
    } else if (k == "parent") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto st = parse_parent(*v, line->target);
      if (!st) return unexpected(st.error());
      have_dir = true;
    } else {
      return unexpected("unexpected word \"" + k + "\" for tc filter show", k);
    }
  }
  if (line->dev.empty()) return unexpected("tc filter show needs \"dev DEV\"", "show");
  line->of_root = !have_dir;
  return ExtCommand{line};
}

}  // namespace

// mirrors tc_filter_modify
Result<ExtCommand> parse_filter(Lexer& lx, const TcFlags& flags) {
  const std::string verb = lx.next();
  if (!verb.empty() && (matches(verb, "show") || matches(verb, "list") || matches(verb, "lst")))
    return parse_filter_show(lx, flags);
  auto line = std::make_shared<FilterLine>();
  auto& req = line->req;
  if (verb.empty()) return unexpected("tc filter needs add, replace, change, del or show", "filter");
  if (matches(verb, "add"))
    line->op = FilterLine::Op::Add;
  else if (matches(verb, "change") || matches(verb, "replace"))
    line->op = FilterLine::Op::Replace;
  else if (matches(verb, "delete"))
    line->op = FilterLine::Op::Del;
  else
    return unexpected("unknown tc filter command \"" + verb + "\"", verb);
  bool have_dir = false, have_kind = false;
  while (!lx.done() && !have_kind) {
    const std::string k = lx.next();
    auto value = [&]() { return lx.value(k); };
    if (k == "dev") {
      auto v = value();
      if (!v) return unexpected(v.error());
      line->dev = *v;
    } else if (parse_dir(k, line->target.dir)) {
      have_dir = true;
    } else if (k == "parent") {
      auto v = value();
      if (!v) return unexpected(v.error());
      auto st = parse_parent(*v, line->target);
      if (!st) return unexpected(st.error());
      have_dir = true;
    } else if (k == "pref" || k == "prio" || k == "priority") {
      auto v = value();
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (!n || *n == 0 || *n > 0xffff) return unexpected("bad pref \"" + *v + "\" (1..65535)", *v);
      req.pref = *n;
    } else if (k == "handle") {
      auto v = value();
      if (!v) return unexpected(v.error());
      // A u32 handle (800::800) or a number.
      auto n = v->find(':') != std::string::npos ? get_u32_handle(*v) : get_u32(*v, 0);
      if (!n || *n == 0) return unexpected("bad handle \"" + *v + "\"", *v);
      req.handle = *n;
    } else if (k == "protocol") {
      auto v = value();
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (*v == "all") req.protocol = ktc::kEthPAll;
      else if (*v == "ip") req.protocol = 0x0800;
      else if (*v == "ipv6") req.protocol = 0x86dd;
      else if (*v == "arp") req.protocol = 0x0806;
      else if (*v == "802.1q" || *v == "802.1Q") req.protocol = 0x8100;
      else if (*v == "802.1ad" || *v == "802.1AD") req.protocol = 0x88a8;
      else if (n && *n <= 0xffff) req.protocol = static_cast<uint16_t>(*n);
      else return unexpected("unknown protocol \"" + *v + "\"", *v);
    } else if (k == "chain") {
      auto v = value();
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (!n || *n != 0) return unexpected("only chain 0 is supported", *v);
    } else if (const FilterUtil* u = get_filter_util(k)) {
      have_kind = true;
      if (line->op == FilterLine::Op::Del) {
        // `tc filter del ... handle H KIND`: the kind names the filter, without options.
        if (!lx.done()) return unexpected("tc filter del takes no " + k + " options", lx.peek());
        break;
      }
      auto st = u->parse_fopt(lx, line->req);
      if (!st) return unexpected(st.error());
    } else if (line->op == FilterLine::Op::Del) {
      return unexpected("unexpected word \"" + k + "\"", k);
    } else {
      return unexpected("unknown filter kind \"" + k + "\" (supported: " + ktc::tcf_proto_kinds() + ")", k);
    }
  }
  if (line->dev.empty()) return unexpected("tc filter needs \"dev DEV\"", "filter");
  if (!have_dir) return unexpected("tc filter needs egress or ingress (clsact's side) or parent MAJ: (a qdisc)", line->dev);
  if (line->op != FilterLine::Op::Del) {
    if (!have_kind)
      return unexpected("tc filter needs a filter kind (" + ktc::tcf_proto_kinds() + ")", lx.peek());
  } else if (req.handle && !req.pref) {
    return unexpected("tc filter del with a handle needs pref", "handle");
  }
  return ExtCommand{line};
}

}  // namespace pktpath::cli::tc
