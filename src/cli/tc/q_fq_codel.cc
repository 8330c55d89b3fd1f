// fq_codel (iproute2's tc/q_fq_codel.c): `limit PACKETS`, `flows N`, `quantum BYTES`,
// `target TIME`, `interval TIME`, `ce_threshold TIME`, `memory_limit SIZE`,
// `drop_batch N`, `ecn` / `noecn`.
#include "cli/tc/q_codel_words.h"
#include "cli/tc/tc_util.h"
#include "sched/sch_fq_codel.h"

namespace pktpath::cli::tc {
namespace {

// mirrors fq_codel_parse_opt
Result<QdiscOptions> fq_codel_parse_opt(Lexer& lx) {
  FqCodelOptions o;
  while (!lx.done()) {
    const std::string& k = lx.next();
    auto common =
        parse_codel_word(lx, k, o.limit, o.target_us, o.interval_us, o.ce_threshold_us, o.ecn);
    if (!common) return unexpected(common.error());
    if (*common) continue;
    if (k == "flows" || k == "quantum" || k == "drop_batch") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 0);
      if (!n) return unexpected("bad " + k + " \"" + *v + "\"", *v);
      if (*n) (k == "flows" ? o.flows : k == "quantum" ? o.quantum : o.drop_batch) = *n;
    } else if (k == "memory_limit") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_size(*v);
      if (!n) return unexpected("bad memory_limit \"" + *v + "\"", *v);
      o.memory_limit = *n;
    } else if (k == "ce_threshold_selector") {
      return unexpected("fq_codel option \"" + k + "\" is not supported", k);
    } else {
      return unexpected(
          "unknown option \"" + k +
              "\" (fq_codel takes limit, flows, target, interval, quantum, ecn, noecn, "
              "ce_threshold, memory_limit, drop_batch)",
          k);
    }
  }
  return QdiscOptions(o);
}

// mirrors fq_codel_print_opt
void fq_codel_print_opt(const QdiscOptions& opts, KindPrint& out) {
  const auto* o = opts.get<FqCodelOptions>();
  if (!o) return;
  print_codel_limit(out, o->limit);
  if (o->flows) {
    out.text += "flows " + std::to_string(*o->flows) + " ";
    out.json["flows"] = *o->flows;
  }
  if (o->quantum) {
    out.text += "quantum " + std::to_string(*o->quantum) + " ";
    out.json["quantum"] = *o->quantum;
  }
  print_codel_times(out, o->target_us, o->ce_threshold_us, o->interval_us);
  if (o->memory_limit) {
    out.text += "memory_limit " + sprint_size(*o->memory_limit) + " ";
    out.json["memory_limit"] = *o->memory_limit;
  }
  print_codel_ecn(out, o->ecn);
  if (o->drop_batch && *o->drop_batch) {
    out.text += "drop_batch " + std::to_string(*o->drop_batch) + " ";
    out.json["drop_batch"] = *o->drop_batch;
  }
}

// mirrors fq_codel_print_xstats (the qdisc's; pktpath shows no per-flow classes)
void fq_codel_print_xstats(const QdiscXstats& xs, KindPrint& out) {
  const auto* x = xs.get<FqCodelXstats>();
  if (!x) return;
  print_xstat(out, "  ", "maxpacket", x->maxpacket);
  print_xstat(out, " ", "drop_overlimit", x->drop_overlimit);
  print_xstat(out, " ", "new_flow_count", x->new_flow_count);
  print_xstat(out, " ", "ecn_mark", x->ecn_mark);
  if (x->ce_mark) print_xstat(out, " ", "ce_mark", x->ce_mark);
  if (x->memory_usage) print_xstat(out, " ", "memory_used", x->memory_usage);
  if (x->drop_overmemory) print_xstat(out, " ", "drop_overmemory", x->drop_overmemory);
  out.text += "\n";
  print_xstat(out, "  ", "new_flows_len", x->new_flows_len);
  print_xstat(out, " ", "old_flows_len", x->old_flows_len);
}

const QdiscUtilRegistrar kFqCodel{
    {"fq_codel", fq_codel_parse_opt, fq_codel_print_opt, false, fq_codel_print_xstats}};

}  // namespace
}  // namespace pktpath::cli::tc
