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
void mirred_print(const ActionOptions& opts, KindPrint& out) {
  const auto* o = opts.get<ktc::MirredOptions>();
  if (!o) return;
  const char* dir = o->dir == Mirred::Dir::Egress ? "Egress" : "Ingress";
  const char* what = o->kind == Mirred::Kind::Redirect ? "Redirect" : "Mirror";
  out.text = std::string("mirred (") + dir + " " + what + " to device " + o->dev + ") " +
             ktc::tc_act_name(o->verdict);
  out.index_prefix = "\tindex";
  out.json["mirred_action"] = o->kind == Mirred::Kind::Redirect ? "redirect" : "mirror";
  out.json["direction"] = o->dir == Mirred::Dir::Egress ? "egress" : "ingress";
  out.json["to_dev"] = o->dev;
  out.json["control_action"] = {{"type", ktc::tc_act_name(o->verdict)}};
}

const ActionUtilRegistrar kMirred{{"mirred", mirred_parse, mirred_print}};

}  // namespace
}  // namespace pktpath::cli::tc
