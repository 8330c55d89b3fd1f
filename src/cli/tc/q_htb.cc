// htb (iproute2's tc/q_htb.c): the qdisc's `default MINOR r2q N direct_qlen N` and a
// class's `rate R [ceil C] [burst B] [cburst CB] [mtu M] [prio P] [quantum Q]`.
#include <cstdio>

#include "cli/tc/tc_util.h"
#include "sched/act_police.h"
#include "sched/sch_htb.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

// get_hz(): /proc/net/psched's clock resolution on a high-resolution-timer kernel.
inline constexpr uint64_t kPschedHz = 1000000000;

// mirrors htb_parse_opt
Result<QdiscOptions> htb_parse_opt(Lexer& lx) {
  HtbOptions o;
  while (!lx.done()) {
    const std::string& k = lx.next();
    if (k == "r2q" || k == "default" || k == "direct_qlen") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, k == "default" ? 16 : 10);
      if (!n) return unexpected("Illegal \"" + k + "\"", *v);
      if (k == "r2q")
        o.rate2quantum = *n;
      else if (k == "default")
        o.defcls = *n;
      else {
        o.direct_qlen = *n;
        o.direct_qlen_set = true;
      }
    } else if (k == "offload") {
      return unexpected("htb \"offload\" is not supported (no hardware)", k);
    } else {
      return unexpected("unknown option \"" + k + "\" (htb takes default, r2q, direct_qlen)", k);
    }
  }
  return QdiscOptions(o);
}

// mirrors htb_parse_class_opt: ceil defaults to rate, burst and cburst to rate/HZ + mtu
// (HZ being the psched clock's 1e9 they come to the mtu, 1600), sent as ticks.
Result<KindOptions> htb_parse_class_opt(Lexer& lx) {
  HtbClassOptions o;
  uint32_t buffer = 0, cbuffer = 0, mtu = 1600;
  while (!lx.done()) {
    const std::string& k = lx.next();
    auto v = lx.value(k);
    if (!v) return unexpected(v.error());
    if (k == "rate" || k == "ceil") {
      auto r = get_rate64(*v);
      if (!r || *r == 0) return unexpected("Illegal \"" + k + "\"", *v);
      (k == "rate" ? o.rate_bytes_ps : o.ceil_bytes_ps) = *r;
    } else if (k == "burst" || k == "buffer" || k == "maxburst" || k == "cburst" || k == "cbuffer" ||
               k == "cmaxburst") {
      auto n = get_size(*v);
      if (!n) return unexpected("Illegal \"" + k + "\"", *v);
      (k[0] == 'c' ? cbuffer : buffer) = *n;
    } else if (k == "prio" || k == "quantum" || k == "mtu") {
      auto n = get_u32(*v, 10);
      if (!n) return unexpected("Illegal \"" + k + "\"", *v);
      if (k == "prio")
        o.prio = *n;
      else if (k == "quantum")
        o.quantum = *n;
      else
        mtu = *n;
    } else if (k == "mpu" || k == "overhead" || k == "linklayer") {
      return unexpected("htb class option \"" + k + "\" is not supported", k);
    } else {
      return unexpected("unknown option \"" + k + "\" (htb class takes rate, ceil, burst, cburst, prio, quantum, mtu)",
                        k);
    }
  }
  if (o.rate_bytes_ps == 0) return unexpected("\"rate\" is required.", "htb");
  if (o.ceil_bytes_ps == 0) o.ceil_bytes_ps = o.rate_bytes_ps;
  if (!buffer) buffer = static_cast<uint32_t>(o.rate_bytes_ps / kPschedHz + mtu);
  if (!cbuffer) cbuffer = static_cast<uint32_t>(o.ceil_bytes_ps / kPschedHz + mtu);
  o.buffer = ktc::tc_calc_xmittime(o.rate_bytes_ps, buffer);
  o.cbuffer = ktc::tc_calc_xmittime(o.ceil_bytes_ps, cbuffer);
  return KindOptions(o);
}

// mirrors htb_print_opt for the qdisc (TCA_HTB_INIT, TCA_HTB_DIRECT_QLEN)
void htb_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* o = opts.get<HtbOptions>();
  if (!o) return;
  out.print_int(PRINT_ANY, "r2q", "r2q %d", o->rate2quantum);
  out.print_0xhex(PRINT_ANY, "default", " default %#x", o->defcls);
  out.print_uint(PRINT_ANY, "direct_packets_stat", " direct_packets_stat %u", o->direct_pkts);
  if (out.details) out.print_string(PRINT_ANY, "ver", " ver %s", "3.17");  // HTB_VER
  out.print_uint(PRINT_ANY, "direct_qlen", " direct_qlen %u", o->direct_qlen);
}

// mirrors htb_print_opt for a class (TCA_HTB_PARMS): the bursts back from ticks. Text as
// iproute2 6.1 prints it, JSON keys as 6.2's (the first to dump classes in JSON).
void htb_print_class_opt(const KindOptions& opts, PrintSink& out) {
  const auto* o = opts.get<HtbClassOptions>();
  if (!o) return;
  const uint32_t burst = ktc::tc_calc_xmitsize(o->rate_bytes_ps, o->buffer);
  const uint32_t cburst = ktc::tc_calc_xmitsize(o->ceil_bytes_ps, o->cbuffer);
  if (o->level == 0) {
    out.print_int(PRINT_ANY, "prio", "prio %d ", o->prio);
    if (out.details) out.print_int(PRINT_ANY, "quantum", "quantum %d ", o->quantum);
  }
  print_rate(out, PRINT_ANY, "rate", "rate %s ", o->rate_bytes_ps);
  print_rate(out, PRINT_ANY, "ceil", "ceil %s ", o->ceil_bytes_ps);
  if (out.details) out.print_string(PRINT_ANY, "linklayer", "linklayer %s ", "ethernet");
  if (out.details) {
    // The rate tables' cell (1 << cell_log: 1 for tables tc computes at these MTUs).
    print_size(out, PRINT_ANY, "burst", "burst %s/", burst);
    out.print_uint(PRINT_ANY, "burst_cell", "%u ", 1);
    print_size(out, PRINT_ANY, "mpu_rate", "mpu %s ", 0);
    print_size(out, PRINT_ANY, "cburst", "cburst %s/", cburst);
    out.print_uint(PRINT_ANY, "cburst_cell", "%u ", 1);
    print_size(out, PRINT_ANY, "mpu_ceil", "mpu %s ", 0);
    out.print_int(PRINT_ANY, "level", "level %d ", o->level);
  } else {
    print_size(out, PRINT_ANY, "burst", "burst %s ", burst);
    print_size(out, PRINT_ANY, "cburst", "cburst %s ", cburst);
  }
}

// mirrors htb_print_xstats
void htb_print_class_xstats(const QdiscXstats& xs, PrintSink& out) {
  const auto* x = xs.get<HtbClassXstats>();
  if (!x) return;
  out.print_uint(PRINT_ANY, "lended", " lended: %u ", x->lends);
  out.print_uint(PRINT_ANY, "borrowed", "borrowed: %u ", x->borrows);
  out.print_uint(PRINT_ANY, "giants", "giants: %u", x->giants);
  out.print_nl();
  out.print_int(PRINT_ANY, "tokens", " tokens: %d ", x->tokens);
  out.print_int(PRINT_ANY, "ctokens", "ctokens: %d", x->ctokens);
  out.print_nl();
}

const QdiscUtilRegistrar kHtb{{"htb", htb_parse_opt, htb_print_opt, false, nullptr, htb_parse_class_opt,
                               htb_print_class_opt, htb_print_class_xstats}};

}  // namespace
}  // namespace pktpath::cli::tc
