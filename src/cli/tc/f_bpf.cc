// bpf (iproute2's tc/f_bpf.c, classic BPF only): `[da] (bytecode '...' | bytecode-file F
// | expr '...') [classid X:Y] [action ...]...`.
#include "bpf/parse.h"
#include "bpf/program.h"
#include "cli/tc/tc_util.h"
#include "sched/cls_bpf.h"

namespace pktpath::cli::tc {
namespace {

// mirrors bpf_parse_opt
Status bpf_parse_opt(Lexer& lx, FilterRequest& req) {
  auto owned = std::make_shared<::pktpath::tc::BpfFilterSpec>();
  auto& spec = *owned;
  bool have_prog = false;
  while (!lx.done()) {
    const std::string k = lx.next();
    if (k == "da" || k == "direct-action") {
      spec.da = true;
    } else if (k == "bytecode" || k == "bytecode-file" || k == "bpf-bytecode" || k == "expr") {
      if (have_prog) return unexpected("only one program per filter", k);
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
      have_prog = true;
    } else if (k == "verbose") {
    } else {
      auto taken = parse_filter_common(k, lx, req, spec);
      if (!taken) return unexpected(taken.error());
      if (!*taken) return unexpected("unexpected word \"" + k + "\" for bpf", k);
    }
  }
  if (!have_prog) return unexpected("bpf needs bytecode '…', bytecode-file F or expr '…'", "bpf");
  if (spec.da && !req.actions.empty())
    return unexpected("actions are not run with da (direct-action): the program's return is the verdict", "action");
  req.spec = std::move(owned);
  return {};
}

// mirrors bpf_print_opt; with -s, pktpath's own per-filter counters (tc has none for
// cls_bpf): packets the program ran on, how many it matched, direct-action drops.
void bpf_print_opt(const ::pktpath::tc::TcFilter& tf, bool stats, KindPrint& out) {
  const auto& f = static_cast<const ::pktpath::tc::BpfFilter&>(tf);
  const auto& s = f.spec();
  char b[256];
  std::snprintf(b, sizeof b, "handle 0x%x ", f.handle());
  out.text += b;
  print_filter_classid(s, "flowid", out);
  // bpf_print_opt's order: direct-action, the flags, then the program as the kernel
  // gives it back (bpf_print_ops: the instructions, however they were written).
  if (s.da) out.text += "direct-action ";
  out.text += "not_in_hw bytecode '" + std::to_string(s.insns.size());
  for (size_t i = 0; i < s.insns.size(); ++i) {
    const bpf::Insn& in = s.insns[i];
    std::snprintf(b, sizeof b, ",%u %u %u %u", in.code, in.jt, in.jf, in.k);
    out.text += b;
  }
  out.text += "'\n";
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
