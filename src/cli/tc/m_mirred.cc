// mirred (iproute2's tc/m_mirred.c): `action mirred egress|ingress redirect|mirror dev D`.
#include "cli/tc/tc_util.h"
#include "sched/act_mirred.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;
using Mirred = ktc::MirredAction;

Result<ActionOptions> mirred_parse(Lexer& lx) {
  ktc::MirredOptions o;
  const std::string& dir = lx.next();
  if (dir == "egress")
    o.dir = Mirred::Dir::Egress;
  else if (dir == "ingress")
    o.dir = Mirred::Dir::Ingress;
  else
    return unexpected("mirred: expected egress or ingress", dir);
  const std::string& what = lx.next();
  if (what == "redirect")
    o.kind = Mirred::Kind::Redirect;
  else if (what == "mirror")
    o.kind = Mirred::Kind::Mirror;
  else
    return unexpected("mirred: expected redirect or mirror", what);
  if (lx.peek() != "dev") return unexpected("mirred: expected \"dev DEV\"", lx.peek());
  lx.next();
  if (lx.done()) return unexpected("mirred: \"dev\" needs a device name", "dev");
  o.dev = lx.next();
  o.verdict = o.kind == Mirred::Kind::Redirect ? ktc::TC_ACT_STOLEN : ktc::TC_ACT_PIPE;
  return ActionOptions(o);
}

// mirrors print_mirred
void mirred_print(const ActionOptions& opts, uint32_t index, PrintSink& out) {
  const auto* o = opts.get<ktc::MirredOptions>();
  if (!o) return;
  const bool redirect = o->kind == Mirred::Kind::Redirect, egress = o->dir == Mirred::Dir::Egress;
  out.print_string(PRINT_ANY, "kind", "%s ", "mirred");
  out.print_string(PRINT_FP, nullptr, "(%s", std::string(egress ? "Egress" : "Ingress") + (redirect ? " Redirect" : " Mirror"));
  out.print_string(PRINT_JSON, "mirred_action", nullptr, redirect ? "redirect" : "mirror");
  out.print_string(PRINT_JSON, "direction", nullptr, egress ? "egress" : "ingress");
  out.print_string(PRINT_ANY, "to_dev", " to device %s)", o->dev);
  print_action_control(out, " ", o->verdict, "");
  out.print_nl();
  print_action_index(out, "\tindex %u", index);
}

const ActionUtilRegistrar kMirred{{"mirred", mirred_parse, mirred_print}};

}  // namespace
}  // namespace pktpath::cli::tc
