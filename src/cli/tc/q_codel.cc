// codel (iproute2's tc/q_codel.c): `limit PACKETS`, `target TIME`, `interval TIME`,
// `ce_threshold TIME`, `ecn` / `noecn`.
#include "cli/tc/q_codel_words.h"
#include "cli/tc/tc_util.h"
#include "sched/sch_codel.h"

namespace pktpath::cli::tc {
namespace {

// mirrors codel_parse_opt
Result<QdiscOptions> codel_parse_opt(Lexer& lx) {
  CodelOptions o;
  while (!lx.done()) {
    const std::string& k = lx.next();
    auto known =
        parse_codel_word(lx, k, o.limit, o.target_us, o.interval_us, o.ce_threshold_us, o.ecn);
    if (!known) return unexpected(known.error());
    if (!*known)
      return unexpected("unknown option \"" + k +
                            "\" (codel takes limit, target, interval, ecn, noecn, ce_threshold)",
                        k);
  }
  return QdiscOptions(o);
}

// mirrors codel_print_opt
void codel_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* o = opts.get<CodelOptions>();
  if (!o) return;
  print_codel_limit(out, o->limit);
  print_codel_times(out, o->target_us, o->ce_threshold_us, o->interval_us);
  print_codel_ecn(out, o->ecn);
}

// mirrors codel_print_xstats
void codel_print_xstats(const QdiscXstats& xs, PrintSink& out) {
  const auto* x = xs.get<CodelXstats>();
  if (!x) return;
  out.print_uint(PRINT_ANY, "count", "  count %u", x->count);
  out.print_uint(PRINT_ANY, "lastcount", " lastcount %u", x->lastcount);
  print_time(out, "ldelay", " ldelay %s", x->ldelay_us);
  if (x->dropping) out.print_bool(PRINT_ANY, "dropping", " dropping", true);
  out.print_int(PRINT_JSON, "drop_next", nullptr, x->drop_next_us);
  if (x->drop_next_us < 0)
    out.print_string(PRINT_FP, nullptr, " drop_next -%s",
                     sprint_time(static_cast<uint64_t>(-static_cast<int64_t>(x->drop_next_us))));
  else
    out.print_string(PRINT_FP, nullptr, " drop_next %s", sprint_time(static_cast<uint64_t>(x->drop_next_us)));
  out.print_nl();
  out.print_uint(PRINT_ANY, "maxpacket", "  maxpacket %u", x->maxpacket);
  out.print_uint(PRINT_ANY, "ecn_mark", " ecn_mark %u", x->ecn_mark);
  out.print_uint(PRINT_ANY, "drop_overlimit", " drop_overlimit %u", x->drop_overlimit);
  if (x->ce_mark) out.print_uint(PRINT_ANY, "ce_mark", " ce_mark %u", x->ce_mark);
}

const QdiscUtilRegistrar kCodel{
    {"codel", codel_parse_opt, codel_print_opt, false, codel_print_xstats}};

}  // namespace
}  // namespace pktpath::cli::tc
