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

// mirrors bpf_print_opt: handle, flowid, direct-action, the flags, then the program as the
// kernel gives it back (bpf_print_ops: the instructions, however they were written).
// With -s, pktpath's own per-filter counters (tc has none for cls_bpf) on the next line:
// packets the program ran on, how many it matched, direct-action drops, the engine.
void bpf_print_opt(const ::pktpath::tc::TcFilter& tf, PrintSink& out) {
  const auto& f = static_cast<const ::pktpath::tc::BpfFilter&>(tf);
  const auto& s = f.spec();
  out.print_0xhex(PRINT_ANY, "handle", "handle %#x ", f.handle());
  print_filter_classid(s, "flowid", out);
  if (s.da) out.print_bool(PRINT_ANY, "direct-action", "direct-action ", true);
  print_filter_flags(s, "", out);
  if (!s.insns.empty()) {
    out.open_object("bytecode");
    out.print_uint(PRINT_ANY, "length", "bytecode '%u,", s.insns.size());
    out.open_array("insns");
    for (size_t i = 0; i < s.insns.size(); ++i) {
      const bpf::Insn& in = s.insns[i];
      out.open_object(nullptr);
      out.print_uint(PRINT_ANY, "code", "%hu ", in.code);
      out.print_uint(PRINT_ANY, "jt", "%hhu ", in.jt);
      out.print_uint(PRINT_ANY, "jf", "%hhu ", in.jf);
      out.print_uint(PRINT_ANY, "k", i + 1 == s.insns.size() ? "%u'" : "%u,", in.k);
      out.close_object();
    }
    out.close_array();
    out.close_object();
  }
  if (out.stats) {
    const auto fs = f.stats.sum();
    out.print_nl();
    out.open_object("pktpath_stats");
    out.print_uint(PRINT_ANY, "bytes", "\t Sent %llu bytes", fs.bytes);
    out.print_uint(PRINT_ANY, "packets", " %llu pkt", fs.packets);
    out.print_uint(PRINT_ANY, "matched", " (matched %llu", fs.matched);
    out.print_uint(PRINT_ANY, "drops", ", dropped %llu)", fs.drops);
    out.print_string(PRINT_ANY, "engine", " engine %s", bpf::engine_name(f.engine()));
    out.close_object();
  }
}

const FilterUtilRegistrar kBpf{{"bpf", bpf_parse_opt, bpf_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
