// gact (iproute2's tc/m_gact.c): `action gact VERDICT`, or the verdict alone.
#include "cli/tc/tc_util.h"
#include "sched/act_gact.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

Result<ActionOptions> gact_parse(Lexer& lx) {
  ktc::GactOptions o;
  const std::string& w = lx.peek();
  if (!action_a2n(w, o.verdict))
    return unexpected("gact: expected ok, pass, drop, shot, pipe, continue or reclassify", w);
  lx.next();
  return ActionOptions(o);
}

// mirrors print_gact (built with CONFIG_GACT_PROB, as Debian's tc is: the random line
// shows "none" when the action has no probability)
void gact_print(const ActionOptions& opts, uint32_t index, PrintSink& out) {
  const auto* o = opts.get<ktc::GactOptions>();
  if (!o) return;
  out.print_string(PRINT_ANY, "kind", "%s ", "gact");
  print_action_control(out, "action ", o->verdict, "");
  out.open_object("prob");
  out.print_nl();
  out.print_string(PRINT_ANY, "random_type", "\t random type %s", "none");
  print_action_control(out, " ", ktc::TC_ACT_OK, " ");
  out.print_int(PRINT_ANY, "val", "val %d", 0);
  out.close_object();
  out.print_nl();
  print_action_index(out, "\t index %u", index);
}

const ActionUtilRegistrar kGact{{"gact", gact_parse, gact_print}};

}  // namespace
}  // namespace pktpath::cli::tc
