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

// mirrors sfq_print_opt (`flows N/D`, a -d detail, is not shown)
void sfq_print_opt(const QdiscOptions& opts, KindPrint& out) {
  const auto* o = opts.get<SfqOptions>();
  if (!o) return;
  out.text = "limit " + std::to_string(o->limit) + "p quantum " + sprint_size(o->quantum) + " ";
  out.json["limit"] = o->limit;
  out.json["quantum"] = o->quantum;
  if (o->depth) {
    out.text += "depth " + std::to_string(o->depth) + " ";
    out.json["depth"] = o->depth;
  }
  if (o->headdrop) {
    out.text += "headdrop ";
    out.json["headdrop"] = true;
  }
  out.text += "divisor " + std::to_string(o->divisor) + " ";
  out.json["divisor"] = o->divisor;
  out.json["flows"] = o->flows;
  if (o->perturb_period) {
    out.text += "perturb " + std::to_string(o->perturb_period) + "sec ";
    out.json["perturb"] = o->perturb_period;
  }
}

const QdiscUtilRegistrar kSfq{{"sfq", sfq_parse_opt, sfq_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
