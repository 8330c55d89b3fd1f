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
void skbedit_print(const ActionOptions& opts, uint32_t index, PrintSink& out) {
  const auto* o = opts.get<ktc::SkbeditOptions>();
  if (!o) return;
  const auto& p = o->params;
  out.print_string(PRINT_ANY, "kind", "%s ", "skbedit");
  if (p.queue_mapping) out.print_uint(PRINT_ANY, "queue_mapping", "queue_mapping %u", *p.queue_mapping);
  if (p.priority) out.print_string(PRINT_ANY, "priority", " priority %s", sprint_tc_classid(*p.priority));
  if (p.mark) out.print_uint(PRINT_ANY, "mark", " mark %u", *p.mark);
  print_action_control(out, " ", p.verdict, "");
  out.print_nl();
  print_action_index(out, "\t index %u", index);
}

const ActionUtilRegistrar kSkbedit{{"skbedit", skbedit_parse, skbedit_print}};

}  // namespace
}  // namespace pktpath::cli::tc
