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

// mirrors print_police (iproute2 6.1): the kind, then its own index and ref lines.
void police_print(const ActionOptions& opts, KindPrint& out) {
  const auto* o = opts.get<ktc::PoliceOptions>();
  if (!o) return;
  out.own_index_line = true;
  out.text = "police\n\tindex " + std::to_string(o->index) + " rate " + sprint_rate(o->rate_bytes_ps) + " burst " +
             sprint_size(o->burst) + " mtu " + sprint_size(o->mtu) + " ";
  if (o->peak_bytes_ps) out.text += "peakrate " + sprint_rate(o->peak_bytes_ps) + " ";
  out.text += std::string("action ") + ktc::tc_act_name(o->exceed);
  // TCA_POLICE_RESULT is dumped only when not OK (0).
  out.text += o->conform != ktc::TC_ACT_OK ? std::string("/") + ktc::tc_act_name(o->conform) + " " : " ";
  out.text += "overhead 0b \n\tref 1 bind 1 \n";
  out.json["kind"] = "police";
  out.json["index"] = o->index;
  out.json["rate"] = sprint_rate(o->rate_bytes_ps);
  out.json["burst"] = sprint_size(o->burst);
  out.json["mtu"] = sprint_size(o->mtu);
  if (o->peak_bytes_ps) out.json["peakrate"] = sprint_rate(o->peak_bytes_ps);
  out.json["control_action"] = {{"type", ktc::tc_act_name(o->exceed)}};
  out.json["notexceed_action"] = {{"type", ktc::tc_act_name(o->conform)}};
  out.json["overhead"] = 0;
}

const ActionUtilRegistrar kPolice{{"police", police_parse, police_print}};

}  // namespace
}  // namespace pktpath::cli::tc
