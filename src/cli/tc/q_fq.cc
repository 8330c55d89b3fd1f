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

void put_u32(KindPrint& out, const char* key, const std::string& text, uint32_t v) {
  out.text += std::string(key) + " " + text + " ";
  out.json[key] = v;
}

// mirrors fq_print_opt
void fq_print_opt(const QdiscOptions& opts, KindPrint& out) {
  const auto* o = opts.get<FqOptions>();
  if (!o) return;
  if (o->limit) put_u32(out, "limit", std::to_string(*o->limit) + "p", *o->limit);
  if (o->flow_limit) put_u32(out, "flow_limit", std::to_string(*o->flow_limit) + "p", *o->flow_limit);
  if (o->buckets_log) put_u32(out, "buckets", std::to_string(1u << *o->buckets_log), 1u << *o->buckets_log);
  if (o->orphan_mask) put_u32(out, "orphan_mask", std::to_string(*o->orphan_mask), *o->orphan_mask);
  if (o->pacing && !*o->pacing) {
    out.text += "nopacing ";
    out.json["pacing"] = false;
  }
  if (o->quantum) put_u32(out, "quantum", sprint_size(*o->quantum), *o->quantum);
  if (o->initial_quantum) put_u32(out, "initial_quantum", sprint_size(*o->initial_quantum), *o->initial_quantum);
  if (o->maxrate && *o->maxrate != ~0u) put_u32(out, "maxrate", sprint_rate(*o->maxrate), *o->maxrate);
  if (o->low_rate_threshold && *o->low_rate_threshold)
    put_u32(out, "low_rate_threshold", sprint_rate(*o->low_rate_threshold), *o->low_rate_threshold);
  if (o->refill_delay_us) put_u32(out, "refill_delay", sprint_time(*o->refill_delay_us), *o->refill_delay_us);
  if (o->ce_threshold_us && *o->ce_threshold_us != ~0u)
    put_u32(out, "ce_threshold", sprint_time(*o->ce_threshold_us), *o->ce_threshold_us);
  if (o->timer_slack_ns) put_u32(out, "timer_slack", sprint_time64(*o->timer_slack_ns), *o->timer_slack_ns);
  if (o->horizon_us) put_u32(out, "horizon", sprint_time(*o->horizon_us), *o->horizon_us);
  if (o->horizon_drop) {
    const char* w = *o->horizon_drop ? "horizon_drop" : "horizon_cap";
    out.text += std::string(w) + " ";
    out.json[w] = nullptr;
  }
}

// One `SEP name value` of fq's 64-bit xstats, text and JSON.
void put_x(KindPrint& out, const char* sep, const char* name, uint64_t v) {
  out.text += std::string(sep) + name + " " + std::to_string(v);
  out.json[name] = v;
}

// mirrors fq_print_xstats
void fq_print_xstats(const QdiscXstats& xs, KindPrint& out) {
  const auto* x = xs.get<FqXstats>();
  if (!x) return;
  out.text += "  flows " + std::to_string(x->flows) + " (inactive " + std::to_string(x->inactive_flows) +
              " throttled " + std::to_string(x->throttled_flows) + ")";
  out.json["flows"] = x->flows;
  out.json["inactive"] = x->inactive_flows;
  out.json["throttled"] = x->throttled_flows;  // iproute2 reuses the key below
  if (x->time_next_delayed_flow > 0) {
    out.text += " next_packet_delay " + sprint_time64(x->time_next_delayed_flow);
    out.json["next_packet_delay"] = x->time_next_delayed_flow;
  }
  out.text += "\n";
  put_x(out, "  ", "gc", x->gc_flows);
  put_x(out, " ", "highprio", x->highprio_packets);
  if (x->tcp_retrans) put_x(out, " ", "retrans", x->tcp_retrans);
  put_x(out, " ", "throttled", x->throttled);
  if (x->unthrottle_latency_ns) {
    out.text += " latency " + sprint_time64(x->unthrottle_latency_ns);
    out.json["latency"] = x->unthrottle_latency_ns;
  }
  if (x->ce_mark) put_x(out, " ", "ce_mark", x->ce_mark);
  if (x->flows_plimit) put_x(out, " ", "flows_plimit", x->flows_plimit);
  if (x->pkts_too_long || x->allocation_errors || x->horizon_drops || x->horizon_caps) {
    out.text += "\n";
    if (x->pkts_too_long) put_x(out, "  ", "pkts_too_long", x->pkts_too_long);
    if (x->allocation_errors) put_x(out, " ", "alloc_errors", x->allocation_errors);
    if (x->horizon_drops) put_x(out, " ", "horizon_drops", x->horizon_drops);
    if (x->horizon_caps) put_x(out, " ", "horizon_caps", x->horizon_caps);
  }
}

const QdiscUtilRegistrar kFq{{"fq", fq_parse_opt, fq_print_opt, false, fq_print_xstats}};

}  // namespace
}  // namespace pktpath::cli::tc
