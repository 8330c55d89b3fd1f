// bpf (iproute2's tc/f_bpf.c, classic BPF only): `[da] (bytecode '...' | bytecode-file F
// | expr '...') [classid X:Y] [action ...]...`.
#include "bpf/parse.h"
#include "bpf/program.h"
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {
namespace {

// mirrors bpf_parse_opt
Status bpf_parse_opt(Lexer& lx, FilterRequest& req) {
  auto& spec = req.spec;
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k == "da" || k == "direct-action") {
      spec.da = true;
    } else if (k == "bytecode" || k == "bytecode-file" || k == "bpf-bytecode" || k == "expr") {
      if (req.have_prog) return unexpected("only one program per filter", k);
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      std::string perr;
      bool ok;
      if (k == "bytecode" || k == "bpf-bytecode") {
        ok = bpf::parse_bytecode(*v, &spec.insns, &perr);
        spec.source = "bytecode '" + *v + "'";
      } else if (k == "bytecode-file") {
        ok = bpf::read_bytecode_file(*v, &spec.insns, &perr);
        spec.source = "bytecode-file " + *v;
      } else {
        ok = bpf::compile_expression(*v, bpf::CompileOptions{}, &spec.insns, &perr);
        spec.source = "expr '" + *v + "'";
      }
      if (!ok) return unexpected(k + ": " + perr, *v);
      req.have_prog = true;
    } else if (k == "classid" || k == "flowid") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto c = get_tc_classid(*v);
      if (!c || *v == "root" || v->find(':') == std::string::npos)
        return unexpected("bad classid \"" + *v + "\" (want MAJ:MIN)", *v);
      spec.classid = *c;
      spec.classid_set = true;
    } else if (k == "action" || k == "act") {
      auto a = parse_action(lx);
      if (!a) return unexpected(a.error());
      req.actions.push_back(std::move(*a));
    } else if (k == "skip_hw" || k == "verbose") {
    } else if (k == "skip_sw") {
      return unexpected("skip_sw: pktpath has no hardware offload", k);
    } else {
      return unexpected("unexpected word \"" + k + "\" for bpf", k);
    }
  }
  if (!req.have_prog) return unexpected("bpf needs bytecode '…', bytecode-file F or expr '…'", "bpf");
  if (spec.da && !req.actions.empty())
    return unexpected("actions are not run with da (direct-action): the program's return is the verdict", "action");
  return {};
}

// mirrors bpf_print_opt; with -s, pktpath's own per-filter counters (tc has none for
// cls_bpf): packets the program ran on, how many it matched, direct-action drops.
void bpf_print_opt(const ::pktpath::tc::BpfFilter& f, bool stats, KindPrint& out) {
  const auto& s = f.spec();
  char b[256];
  if (s.classid_set) {
    out.text += "flowid " + sprint_tc_classid(s.classid) + " ";
    out.json["flowid"] = sprint_tc_classid(s.classid);
  }
  out.text += s.source + " ";
  if (s.da) out.text += "direct-action ";
  out.text += "not_in_hw \n";
  out.json["bytecode"] = s.source;
  out.json["direct-action"] = s.da;
  out.json["engine"] = bpf::engine_name(f.engine());
  if (stats) {
    const auto fs = f.stats.sum();
    std::snprintf(b, sizeof b, "\t Sent %llu bytes %llu pkt (matched %llu, dropped %llu) engine %s\n",
                  static_cast<unsigned long long>(fs.bytes), static_cast<unsigned long long>(fs.packets),
                  static_cast<unsigned long long>(fs.matched), static_cast<unsigned long long>(fs.drops),
                  bpf::engine_name(f.engine()));
    out.text += b;
  }
}

const FilterUtilRegistrar kBpf{{"bpf", bpf_parse_opt, bpf_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
