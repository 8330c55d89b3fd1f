// tbf (iproute2's tc/q_tbf.c): `rate RATE burst SIZE (limit SIZE | latency TIME)`.
#include "cli/tc/tc_util.h"
#include "sched/sch_tbf.h"

namespace pktpath::cli::tc {
namespace {

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

// mirrors tbf_print_opt: rate, burst, and the latency the limit allows.
void tbf_print_opt(const QdiscOptions& opts, KindPrint& out) {
  const auto* t = opts.get<TbfOptions>();
  if (!t || t->rate_bytes_ps == 0) return;
  out.text = "rate " + sprint_rate(t->rate_bytes_ps) + " burst " + sprint_size(t->burst);
  const double latency = 1e6 * (static_cast<double>(t->limit) - t->burst) / static_cast<double>(t->rate_bytes_ps);
  if (latency >= 0) out.text += " lat " + sprint_time(static_cast<uint64_t>(latency));
  out.json["rate"] = t->rate_bytes_ps;
  out.json["burst"] = t->burst;
  out.json["limit"] = t->limit;
  if (latency >= 0) out.json["lat"] = static_cast<uint64_t>(latency);
}

const QdiscUtilRegistrar kTbf{{"tbf", tbf_parse_opt, tbf_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
