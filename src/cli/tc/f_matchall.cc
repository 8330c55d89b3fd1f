// matchall (iproute2's tc/f_matchall.c): `matchall [skip_sw|skip_hw] [classid|flowid X]
// [action ...]...`.
#include "cli/tc/tc_util.h"
#include "sched/cls_matchall.h"

namespace pktpath::cli::tc {
namespace {

namespace ktc = ::pktpath::tc;

// mirrors matchall_parse_opt
Status matchall_parse_opt(Lexer& lx, FilterRequest& req) {
  auto spec = std::make_shared<ktc::MatchallSpec>();
  while (!lx.done()) {
    const std::string k = lx.next();
    auto taken = parse_filter_common(k, lx, req, *spec);
    if (!taken) return unexpected(taken.error());
    if (!*taken) return unexpected("unexpected word \"" + k + "\" for matchall", k);
  }
  req.spec = std::move(spec);
  return {};
}

// mirrors matchall_print_opt: handle, flowid, the flags each on its own line, with -s the
// hit count (tc_matchall_pcnt).
void matchall_print_opt(const ktc::TcFilter& f, PrintSink& out) {
  out.print_uint(PRINT_ANY, "handle", "handle 0x%x ", f.handle());
  print_filter_classid(f.spec_base(), "flowid", out);
  print_filter_flags(f.spec_base(), "\n  ", out);
  if (out.stats) out.print_uint(PRINT_ANY, "rule_hit", " (rule hit %llu)", f.stats.sum().matched);
}

const FilterUtilRegistrar kMatchall{{"matchall", matchall_parse_opt, matchall_print_opt}};

}  // namespace
}  // namespace pktpath::cli::tc
