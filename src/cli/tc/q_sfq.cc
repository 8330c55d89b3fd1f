// sfq (iproute2's tc/q_sfq.c): `limit N`, `perturb SECS`, `quantum BYTES`,
// `divisor N`, `flows N`, `depth N`, `headdrop`. The RED words are refused.
#include "cli/tc/tc_util.h"
#include "sched/sch_sfq.h"

namespace pktpath::cli::tc {
namespace {

// mirrors sfq_parse_opt without RED
Result<QdiscOptions> sfq_parse_opt(Lexer& lx) {
  SfqOptions o;
  while (!lx.done()) {
    const std::string& k = lx.next();
    if (k == "headdrop") {
      o.headdrop = true;
    } else if (k == "quantum") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_size(*v);
      if (!n) return unexpected("bad quantum \"" + *v + "\"", *v);
      o.quantum = *n;
    } else if (k == "perturb") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (!n || *n > INT32_MAX) return unexpected("bad perturb \"" + *v + "\"", *v);
      o.perturb_period = static_cast<int32_t>(*n);
    } else if (k == "limit" || k == "divisor" || k == "flows" || k == "depth") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (!n) return unexpected("bad " + k + " \"" + *v + "\"", *v);
      if (k == "limit" && *n < 2) return unexpected("bad limit \"" + *v + "\", must be > 1", *v);
      (k == "limit" ? o.limit : k == "divisor" ? o.divisor : k == "flows" ? o.flows : o.depth) = *n;
    } else if (k == "redflowlimit" || k == "min" || k == "max" || k == "burst" || k == "avpkt" ||
               k == "probability" || k == "ecn" || k == "harddrop") {
      return unexpected("sfq option \"" + k + "\" is not supported (no RED)", k);
    } else {
      return unexpected(
          "unknown option \"" + k +
              "\" (sfq takes limit, perturb, quantum, divisor, flows, depth, headdrop)",
          k);
    }
  }
  return QdiscOptions(o);
}

// mirrors sfq_print_opt
void sfq_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* o = opts.get<SfqOptions>();
  if (!o) return;
  out.print_uint(PRINT_ANY, "limit", "limit %up ", o->limit);
  print_size(out, PRINT_ANY, "quantum", "quantum %s ", o->quantum);
  if (o->depth) out.print_uint(PRINT_ANY, "depth", "depth %u ", o->depth);
  if (o->headdrop) out.print_bool(PRINT_ANY, "headdrop", "headdrop ", true);
  if (out.details) out.print_uint(PRINT_ANY, "flows", "flows %u ", o->flows);
  out.print_uint(PRINT_ANY, "divisor", "divisor %u ", o->divisor);
  if (o->perturb_period) out.print_int(PRINT_ANY, "perturb", "perturb %dsec ", o->perturb_period);
}

const QdiscUtilRegistrar kSfq{{"sfq", sfq_parse_opt, sfq_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
