// skbedit (iproute2's tc/m_skbedit.c): `action skbedit [queue_mapping N] [priority
// MAJ:MIN|N] [mark M] [VERDICT]`.
#include "cli/tc/tc_util.h"
#include "sched/act_skbedit.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

Result<ActionOptions> skbedit_parse(Lexer& lx) {
  ktc::SkbeditOptions o;
  bool any = false;
  while (!lx.done()) {
    const std::string k = lx.peek();
    int verdict;
    if (k == "queue_mapping" || k == "priority" || k == "mark") {
      lx.next();
      if (lx.done()) return unexpected("skbedit: \"" + k + "\" needs a value", k);
      const std::string& v = lx.next();
      if (k == "priority") {
        // tc writes priorities as MAJ:MIN (hex, get_tc_classid) or a plain number.
        auto n = v.find(':') == std::string::npos ? get_u32(v, 0) : get_tc_classid(v);
        if (!n) return unexpected("skbedit: bad priority \"" + v + "\" (want MAJ:MIN)", v);
        o.params.priority = *n;
      } else {
        auto n = get_u32(v, 0);
        if (!n) return unexpected("skbedit: bad " + k + " \"" + v + "\"", v);
        if (k == "mark") {
          o.params.mark = *n;
        } else {
          if (*n > 0xffff) return unexpected("skbedit: queue_mapping out of range", v);
          o.params.queue_mapping = static_cast<uint16_t>(*n);
        }
      }
      any = true;
    } else if (action_a2n(k, verdict)) {
      o.params.verdict = verdict;
      lx.next();
      break;
    } else {
      break;
    }
  }
  if (!any) return unexpected("skbedit: needs queue_mapping, priority or mark", "skbedit");
  return ActionOptions(o);
}

// mirrors print_skbedit
void skbedit_print(const ActionOptions& opts, KindPrint& out) {
  const auto* o = opts.get<ktc::SkbeditOptions>();
  if (!o) return;
  const auto& p = o->params;
  out.text = "skbedit";
  if (p.queue_mapping) {
    out.text += " queue_mapping " + std::to_string(*p.queue_mapping);
    out.json["queue_mapping"] = *p.queue_mapping;
  }
  if (p.priority) {
    char b[32];
    std::snprintf(b, sizeof b, "%x:%x", *p.priority >> 16, *p.priority & 0xffff);
    out.text += std::string(" priority ") + b;
    out.json["priority"] = b;
  }
  if (p.mark) {
    out.text += " mark " + std::to_string(*p.mark);
    out.json["mark"] = *p.mark;
  }
  out.text += std::string(" ") + ktc::tc_act_name(p.verdict);
  out.json["control_action"] = {{"type", ktc::tc_act_name(p.verdict)}};
}

const ActionUtilRegistrar kSkbedit{{"skbedit", skbedit_parse, skbedit_print}};

}  // namespace
}  // namespace pktpath::cli::tc
