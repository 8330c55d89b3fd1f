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

void gact_print(const ActionOptions& opts, KindPrint& out) {
  const auto* o = opts.get<ktc::GactOptions>();
  if (!o) return;
  out.text = std::string("gact action ") + ktc::tc_act_name(o->verdict);
  out.json["control_action"] = {{"type", ktc::tc_act_name(o->verdict)}};
}

const ActionUtilRegistrar kGact{{"gact", gact_parse, gact_print}};

}  // namespace
}  // namespace pktpath::cli::tc
