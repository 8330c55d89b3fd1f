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
void htb_print_opt(const QdiscOptions& opts, KindPrint& out) {
  const auto* o = opts.get<HtbOptions>();
  if (!o) return;
  char b[160];
  std::snprintf(b, sizeof b, "r2q %u default %#x direct_packets_stat %u direct_qlen %u", o->rate2quantum, o->defcls,
                o->direct_pkts, o->direct_qlen);
  out.text = b;
  out.json["r2q"] = o->rate2quantum;
  std::snprintf(b, sizeof b, "%#x", o->defcls);
  out.json["default"] = b;
  out.json["direct_packets_stat"] = o->direct_pkts;
  out.json["direct_qlen"] = o->direct_qlen;
}

// mirrors htb_print_opt for a class (TCA_HTB_PARMS): the bursts back from ticks.
void htb_print_class_opt(const KindOptions& opts, KindPrint& out) {
  const auto* o = opts.get<HtbClassOptions>();
  if (!o) return;
  const uint32_t burst = ktc::tc_calc_xmitsize(o->rate_bytes_ps, o->buffer);
  const uint32_t cburst = ktc::tc_calc_xmitsize(o->ceil_bytes_ps, o->cbuffer);
  if (o->level == 0) {
    out.text += "prio " + std::to_string(o->prio) + " ";
    out.json["prio"] = o->prio;
  }
  out.text += "rate " + sprint_rate(o->rate_bytes_ps) + " ceil " + sprint_rate(o->ceil_bytes_ps) + " burst " +
              sprint_size(burst) + " cburst " + sprint_size(cburst) + " ";
  out.json["rate"] = o->rate_bytes_ps;
  out.json["ceil"] = o->ceil_bytes_ps;
  out.json["burst"] = burst;
  out.json["cburst"] = cburst;
}

// mirrors htb_print_xstats
void htb_print_class_xstats(const QdiscXstats& xs, KindPrint& out) {
  const auto* x = xs.get<HtbClassXstats>();
  if (!x) return;
  char b[160];
  std::snprintf(b, sizeof b, " lended: %u borrowed: %u giants: %u\n tokens: %d ctokens: %d", x->lends, x->borrows,
                x->giants, x->tokens, x->ctokens);
  out.text = b;
  out.json["lended"] = x->lends;
  out.json["borrowed"] = x->borrows;
  out.json["giants"] = x->giants;
  out.json["tokens"] = x->tokens;
  out.json["ctokens"] = x->ctokens;
}

const QdiscUtilRegistrar kHtb{{"htb", htb_parse_opt, htb_print_opt, false, nullptr, htb_parse_class_opt,
                               htb_print_class_opt, htb_print_class_xstats}};

}  // namespace
}  // namespace pktpath::cli::tc
