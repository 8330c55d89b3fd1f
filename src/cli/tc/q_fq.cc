// fq (iproute2 6.1's tc/q_fq.c): `limit PACKETS`, `flow_limit PACKETS`, `quantum BYTES`,
// `initial_quantum BYTES`, `maxrate RATE`, `buckets NUMBER`, `pacing` / `nopacing`,
// `refill_delay TIME`, `low_rate_threshold RATE`, `orphan_mask MASK`, `timer_slack TIME`,
// `ce_threshold TIME`, `horizon TIME`, `horizon_cap` / `horizon_drop`; `defrate RATE` is
// parsed and, as by the kernel, ignored.
#include "cli/tc/q_codel_words.h"
#include "cli/tc/tc_util.h"
#include "sched/sch_fq.h"

namespace pktpath::cli::tc {
namespace {

// iproute2's ilog2: the log of the next power of two.
uint32_t ilog2_up(uint32_t v) {
  uint32_t r = 0;
  for (--v; v; v >>= 1) ++r;
  return r;
}

Result<uint32_t> rate_u32(const std::string& k, const std::string& v) {  // get_rate
  auto r = get_rate64(v);
  if (!r || *r > UINT32_MAX) return unexpected("Illegal \"" + k + "\" \"" + v + "\"", v);
  return static_cast<uint32_t>(*r);
}

// mirrors fq_parse_opt
Result<QdiscOptions> fq_parse_opt(Lexer& lx) {
  FqOptions o;
  while (!lx.done()) {
    const std::string& k = lx.next();
    if (k == "pacing" || k == "nopacing") {
      o.pacing = k == "pacing";
      continue;
    }
    if (k == "horizon_cap" || k == "horizon_drop") {
      o.horizon_drop = k == "horizon_drop";
      continue;
    }
    if (k != "limit" && k != "flow_limit" && k != "buckets" && k != "quantum" &&
        k != "initial_quantum" && k != "orphan_mask" && k != "maxrate" && k != "defrate" &&
        k != "low_rate_threshold" && k != "refill_delay" && k != "ce_threshold" &&
        k != "horizon" && k != "timer_slack")
      return unexpected(
          "What is \"" + k +
              "\"? (fq takes limit, flow_limit, quantum, initial_quantum, maxrate, buckets, "
              "pacing, nopacing, refill_delay, low_rate_threshold, orphan_mask, timer_slack, "
              "ce_threshold, horizon, horizon_cap, horizon_drop)",
          k);
    auto v = lx.value(k);
    if (!v) return unexpected(v.error());
    if (k == "maxrate" || k == "defrate" || k == "low_rate_threshold") {
      auto r = rate_u32(k, *v);
      if (!r) return unexpected(r.error());
      if (k == "maxrate") o.maxrate = *r;
      if (k == "low_rate_threshold") o.low_rate_threshold = *r;
    } else if (k == "refill_delay" || k == "ce_threshold" || k == "horizon") {
      auto t = codel_time_us(k, *v);
      if (!t) return unexpected("Illegal \"" + k + "\" \"" + *v + "\"", *v);
      (k == "refill_delay" ? o.refill_delay_us : k == "ce_threshold" ? o.ce_threshold_us : o.horizon_us) = *t;
    } else if (k == "timer_slack") {
      auto t = get_time64(*v);
      if (!t || *t < 0 || *t > static_cast<int64_t>(UINT32_MAX))
        return unexpected("Illegal (out of range) \"timer_slack\" \"" + *v + "\"", *v);
      o.timer_slack_ns = static_cast<uint32_t>(*t);
    } else {
      auto n = get_u32(*v, 0);
      if (!n) return unexpected("Illegal \"" + k + "\" \"" + *v + "\"", *v);
      if (k == "limit") o.limit = *n;
      if (k == "flow_limit") o.flow_limit = *n;
      if (k == "quantum") o.quantum = *n;
      if (k == "initial_quantum") o.initial_quantum = *n;
      if (k == "orphan_mask") o.orphan_mask = *n;
      if (k == "buckets" && *n) o.buckets_log = ilog2_up(*n);
    }
  }
  return QdiscOptions(o);
}

// mirrors fq_print_opt
void fq_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* o = opts.get<FqOptions>();
  if (!o) return;
  if (o->limit) out.print_uint(PRINT_ANY, "limit", "limit %up ", *o->limit);
  if (o->flow_limit) out.print_uint(PRINT_ANY, "flow_limit", "flow_limit %up ", *o->flow_limit);
  if (o->buckets_log) out.print_uint(PRINT_ANY, "buckets", "buckets %u ", 1u << *o->buckets_log);
  if (o->orphan_mask) out.print_uint(PRINT_ANY, "orphan_mask", "orphan_mask %u ", *o->orphan_mask);
  if (o->pacing && !*o->pacing) out.print_bool(PRINT_ANY, "pacing", "nopacing ", false);
  if (o->quantum) print_size(out, PRINT_ANY, "quantum", "quantum %s ", *o->quantum);
  if (o->initial_quantum) print_size(out, PRINT_ANY, "initial_quantum", "initial_quantum %s ", *o->initial_quantum);
  if (o->maxrate && *o->maxrate != ~0u) print_rate(out, PRINT_ANY, "maxrate", "maxrate %s ", *o->maxrate);
  if (o->low_rate_threshold && *o->low_rate_threshold)
    print_rate(out, PRINT_ANY, "low_rate_threshold", "low_rate_threshold %s ", *o->low_rate_threshold);
  if (o->refill_delay_us) print_time(out, "refill_delay", "refill_delay %s ", *o->refill_delay_us);
  if (o->ce_threshold_us && *o->ce_threshold_us != ~0u)
    print_time(out, "ce_threshold", "ce_threshold %s ", *o->ce_threshold_us);
  if (o->timer_slack_ns) print_time64(out, "timer_slack", "timer_slack %s ", *o->timer_slack_ns);
  if (o->horizon_us) print_time(out, "horizon", "horizon %s ", *o->horizon_us);
  if (o->horizon_drop) {
    const char* w = *o->horizon_drop ? "horizon_drop" : "horizon_cap";
    out.print_null(PRINT_ANY, w, "%s ", w);
  }
}

// mirrors fq_print_xstats
void fq_print_xstats(const QdiscXstats& xs, PrintSink& out) {
  const auto* x = xs.get<FqXstats>();
  if (!x) return;
  out.print_uint(PRINT_ANY, "flows", "  flows %u", x->flows);
  out.print_uint(PRINT_ANY, "inactive", " (inactive %u", x->inactive_flows);
  out.print_uint(PRINT_ANY, "throttled", " throttled %u)", x->throttled_flows);
  if (x->time_next_delayed_flow > 0) {
    print_time64(out, "next_packet_delay", " next_packet_delay %s", x->time_next_delayed_flow);
  }
  out.print_nl();
  out.print_uint(PRINT_ANY, "gc", "  gc %llu", x->gc_flows);
  out.print_uint(PRINT_ANY, "highprio", " highprio %llu", x->highprio_packets);
  if (x->tcp_retrans) out.print_uint(PRINT_ANY, "retrans", " retrans %llu", x->tcp_retrans);
  out.print_uint(PRINT_ANY, "throttled", " throttled %llu", x->throttled);  // iproute2 reuses the key
  if (x->unthrottle_latency_ns) {
    print_time64(out, "latency", " latency %s", x->unthrottle_latency_ns);
  }
  if (x->ce_mark) out.print_uint(PRINT_ANY, "ce_mark", " ce_mark %llu", x->ce_mark);
  if (x->flows_plimit) out.print_uint(PRINT_ANY, "flows_plimit", " flows_plimit %llu", x->flows_plimit);
  if (x->pkts_too_long || x->allocation_errors || x->horizon_drops || x->horizon_caps) {
    out.print_nl();
    if (x->pkts_too_long) out.print_uint(PRINT_ANY, "pkts_too_long", " pkts_too_long %llu", x->pkts_too_long);
    if (x->allocation_errors)
      out.print_uint(PRINT_ANY, "alloc_errors", " alloc_errors %llu", x->allocation_errors);
    if (x->horizon_drops) out.print_uint(PRINT_ANY, "horizon_drops", " horizon_drops %llu", x->horizon_drops);
    if (x->horizon_caps) out.print_uint(PRINT_ANY, "horizon_caps", "  horizon_caps %llu", x->horizon_caps);
  }
}

const QdiscUtilRegistrar kFq{{"fq", fq_parse_opt, fq_print_opt, false, fq_print_xstats}};

}  // namespace
}  // namespace pktpath::cli::tc
