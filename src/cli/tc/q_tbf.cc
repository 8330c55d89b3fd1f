// tbf (iproute2's tc/q_tbf.c): `rate RATE burst SIZE (limit SIZE | latency TIME)`.
#include "cli/tc/tc_util.h"
#include "sched/act_police.h"
#include "sched/sch_tbf.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

// mirrors tbf_parse_opt for the words pktpath's tbf has
Result<QdiscOptions> tbf_parse_opt(Lexer& lx) {
  TbfOptions t;
  while (!lx.done()) {
    const std::string& k = lx.next();
    if (k == "rate" || k == "burst" || k == "buffer" || k == "maxburst" || k == "limit" || k == "latency") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      if (k == "rate") {
        auto r = get_rate64(*v);
        if (!r || *r == 0) return unexpected("bad rate \"" + *v + "\"", *v);
        t.rate_bytes_ps = *r;
      } else if (k == "limit") {
        auto n = get_size(*v);
        if (!n) return unexpected("bad limit \"" + *v + "\"", *v);
        t.limit = *n;
        t.limit_set = true;
      } else if (k == "latency") {
        auto n = get_time(*v);
        if (!n) return unexpected("bad latency \"" + *v + "\"", *v);
        t.latency_ns = *n;
        t.latency_set = true;
      } else {
        auto n = get_size(*v);
        if (!n || *n == 0) return unexpected("bad burst \"" + *v + "\"", *v);
        t.burst = *n;
      }
    } else if (k == "peakrate" || k == "mtu" || k == "minburst" || k == "overhead" || k == "linklayer") {
      return unexpected("tbf option \"" + k + "\" is not supported", k);
    } else {
      return unexpected("unknown option \"" + k + "\" (tbf takes rate, burst, limit|latency)", k);
    }
  }
  if (t.rate_bytes_ps == 0) return unexpected("tbf needs \"rate\"", "tbf");
  if (t.burst == 0) return unexpected("tbf needs \"burst\"", "tbf");
  if (t.limit_set == t.latency_set) return unexpected("tbf needs exactly one of \"limit\" or \"latency\"", "tbf");
  return QdiscOptions(t);
}

// mirrors tbf_print_opt: rate, burst, and the latency the limit allows, each field with
// its trailing space. The kernel keeps the burst as the time it takes at the rate
// (tbf_change: psched_l2t_ns) and dumps it in ticks, so tc shows the size back from
// those (1600 at 70mbit: 1592b).
void tbf_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* t = opts.get<TbfOptions>();
  if (!t || t->rate_bytes_ps == 0) return;
  ktc::PschedRate r;
  r.precompute(t->rate_bytes_ps);
  const auto ticks = static_cast<uint32_t>(r.l2t_ns(t->burst) >> ktc::kPschedShift);
  const uint32_t burst = ktc::tc_calc_xmitsize(t->rate_bytes_ps, ticks);
  print_rate(out, PRINT_ANY, "rate", "rate %s ", t->rate_bytes_ps);
  if (out.details) {
    out.print_string(PRINT_ANY, "burst", "burst %s ", sprint_size(burst) + "/1");
    print_size(out, PRINT_ANY, "mpu", "mpu %s ", 0);
  } else {
    print_size(out, PRINT_ANY, "burst", "burst %s ", burst);
  }
  const double latency =
      1e6 * (static_cast<double>(t->limit) / static_cast<double>(t->rate_bytes_ps)) - ktc::tc_core_tick2time(ticks);
  if (latency >= 0) {
    print_time(out, "lat", "lat %s ", static_cast<uint32_t>(latency));
  } else {
    print_size(out, PRINT_ANY, "limit", "limit %s ", t->limit);
  }
  if (out.details) out.print_string(PRINT_ANY, "linklayer", "linklayer %s ", "ethernet");
}

const QdiscUtilRegistrar kTbf{{"tbf", tbf_parse_opt, tbf_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
