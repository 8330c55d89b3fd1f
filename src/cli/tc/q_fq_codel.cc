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
void fq_codel_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* o = opts.get<FqCodelOptions>();
  if (!o) return;
  print_codel_limit(out, o->limit);
  if (o->flows) out.print_uint(PRINT_ANY, "flows", "flows %u ", *o->flows);
  if (o->quantum) out.print_uint(PRINT_ANY, "quantum", "quantum %u ", *o->quantum);
  print_codel_time(out, "target", "target %s ", o->target_us);
  print_codel_time(out, "ce_threshold", "ce_threshold %s ", o->ce_threshold_us);
  print_codel_time(out, "interval", "interval %s ", o->interval_us);
  if (o->memory_limit) print_size(out, PRINT_ANY, "memory_limit", "memory_limit %s ", *o->memory_limit);
  print_codel_ecn(out, o->ecn);
  if (o->drop_batch && *o->drop_batch) out.print_uint(PRINT_ANY, "drop_batch", "drop_batch %u ", *o->drop_batch);
}

// mirrors fq_codel_print_xstats (the qdisc's; pktpath shows no per-flow classes)
void fq_codel_print_xstats(const QdiscXstats& xs, PrintSink& out) {
  const auto* x = xs.get<FqCodelXstats>();
  if (!x) return;
  out.print_uint(PRINT_ANY, "maxpacket", "  maxpacket %u", x->maxpacket);
  out.print_uint(PRINT_ANY, "drop_overlimit", " drop_overlimit %u", x->drop_overlimit);
  out.print_uint(PRINT_ANY, "new_flow_count", " new_flow_count %u", x->new_flow_count);
  out.print_uint(PRINT_ANY, "ecn_mark", " ecn_mark %u", x->ecn_mark);
  if (x->ce_mark) out.print_uint(PRINT_ANY, "ce_mark", " ce_mark %u", x->ce_mark);
  if (x->memory_usage) out.print_uint(PRINT_ANY, "memory_used", " memory_used %u", x->memory_usage);
  if (x->drop_overmemory) out.print_uint(PRINT_ANY, "drop_overmemory", " drop_overmemory %u", x->drop_overmemory);
  out.print_nl();
  out.print_uint(PRINT_ANY, "new_flows_len", "  new_flows_len %u", x->new_flows_len);
  out.print_uint(PRINT_ANY, "old_flows_len", " old_flows_len %u", x->old_flows_len);
}

const QdiscUtilRegistrar kFqCodel{
    {"fq_codel", fq_codel_parse_opt, fq_codel_print_opt, false, fq_codel_print_xstats}};

}  // namespace
}  // namespace pktpath::cli::tc
