// police (iproute2's tc/m_police.c): `action police rate R burst B [mtu M] [peakrate P]
// [conform-exceed EXCEED[/CONFORM] | EXCEED]`, EXCEED and CONFORM gact's verdict words.
#include "cli/tc/tc_util.h"
#include "sched/act_police.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

// mirrors act_parse_police for the words above; stops at the first other word.
Result<ActionOptions> police_parse(Lexer& lx) {
  ktc::PoliceOptions o;
  while (!lx.done()) {
    const std::string k = lx.peek();
    if (k == "rate" || k == "peakrate") {
      lx.next();
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto r = get_rate64(*v);
      if (!r || *r == 0) return unexpected("police: bad " + k + " \"" + *v + "\"", *v);
      (k == "rate" ? o.rate_bytes_ps : o.peak_bytes_ps) = *r;
    } else if (k == "burst" || k == "buffer" || k == "maxburst" || k == "mtu" || k == "minburst") {
      lx.next();
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_size(*v);
      if (!n || *n == 0) return unexpected("police: bad " + k + " \"" + *v + "\"", *v);
      (k == "mtu" || k == "minburst" ? o.mtu : o.burst) = *n;
    } else if (k == "conform-exceed") {
      lx.next();
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      const size_t slash = v->find('/');
      const std::string ex = v->substr(0, slash);
      int verdict;
      if (!action_a2n(ex, verdict) || verdict == ktc::TC_ACT_STOLEN || verdict == ktc::TC_ACT_TRAP)
        return unexpected("police: bad exceed action \"" + ex + "\" (drop, shot, pipe, continue, ok, reclassify)", *v);
      o.exceed = verdict;
      if (slash != std::string::npos) {
        const std::string nx = v->substr(slash + 1);
        if (!action_a2n(nx, verdict) || verdict == ktc::TC_ACT_STOLEN || verdict == ktc::TC_ACT_TRAP)
          return unexpected("police: bad conform action \"" + nx + "\" (drop, shot, pipe, continue, ok, reclassify)",
                            *v);
        o.conform = verdict;
      }
    } else if (int verdict; action_a2n(k, verdict) && verdict != ktc::TC_ACT_STOLEN && verdict != ktc::TC_ACT_TRAP) {
      lx.next();  // the bare control action (tc-police(8), LARTC): what exceeding packets get
      o.exceed = verdict;
    } else if (k == "avrate" || k == "overhead" || k == "linklayer" || k == "pkts_rate" || k == "pkts_burst" ||
               k == "estimator") {
      return unexpected("police: \"" + k + "\" is not supported", k);
    } else {
      break;
    }
  }
  if (o.rate_bytes_ps == 0) return unexpected("police needs \"rate\"", "police");
  if (o.burst == 0) return unexpected("police needs \"burst\"", "police");
  return ActionOptions(o);
}

// mirrors print_police (iproute2 6.1): rate, burst and mtu in the text only, the index
// on the kind's line, then its own ref line.
void police_print(const ActionOptions& opts, uint32_t, PrintSink& out) {
  const auto* o = opts.get<ktc::PoliceOptions>();
  if (!o) return;
  out.print_string(PRINT_JSON, "kind", "%s", "police");
  out.print_hex(PRINT_FP, nullptr, " police 0x%x ", o->index);
  out.print_uint(PRINT_JSON, "index", nullptr, o->index);
  print_rate(out, PRINT_FP, "rate", "rate %s ", o->rate_bytes_ps);
  print_size(out, PRINT_FP, "burst", "burst %s ", o->burst);
  print_size(out, PRINT_FP, "mtu", "mtu %s ", o->mtu);
  if (o->peak_bytes_ps) print_rate(out, PRINT_FP, "peakrate", "peakrate %s ", o->peak_bytes_ps);
  print_action_control(out, "action ", o->exceed, "");
  // TCA_POLICE_RESULT is dumped only when not OK (0).
  if (o->conform != ktc::TC_ACT_OK)
    print_action_control(out, "/", o->conform, " ");
  else
    out.print_string(PRINT_FP, nullptr, " ", "");
  print_size(out, PRINT_ANY, "overhead", "overhead %s ", 0);
  if (out.details) out.print_string(PRINT_ANY, "linklayer", "linklayer %s ", "ethernet");
  out.print_nl();
  out.print_int(PRINT_ANY, "ref", "\tref %d ", 1);
  out.print_int(PRINT_ANY, "bind", "bind %d ", 1);
  out.print_nl();
}

const ActionUtilRegistrar kPolice{{"police", police_parse, police_print}};

}  // namespace
}  // namespace pktpath::cli::tc
