// pfifo, pfifo_head_drop and bfifo (iproute2's tc/q_fifo.c): `limit N` (packets) /
// `limit SIZE` (bytes).
#include "cli/tc/tc_util.h"
#include "sched/sch_fifo.h"

namespace pktpath::cli::tc {
namespace {

template <bool kBytes>
Result<QdiscOptions> fifo_parse_opt(Lexer& lx) {
  FifoOptions f;
  while (!lx.done()) {
    const std::string& k = lx.next();
    if (k != "limit") return unexpected("unknown option \"" + k + "\" (fifo takes limit)", k);
    auto v = lx.value(k);
    if (!v) return unexpected(v.error());
    auto n = kBytes ? get_size(*v) : get_u32(*v, 0);
    if (!n) return unexpected("bad limit \"" + *v + "\"", *v);
    f.limit = *n;
    f.limit_set = true;
  }
  return QdiscOptions(f);
}

template <bool kBytes>
void fifo_print_opt(const QdiscOptions& opts, PrintSink& out) {
  const auto* f = opts.get<FifoOptions>();
  if (!f) return;
  if (kBytes) {
    print_size(out, PRINT_ANY, "limit", "limit %s", f->limit);
  } else {
    out.print_uint(PRINT_ANY, "limit", "limit %up", f->limit);
  }
}

const QdiscUtilRegistrar kPfifo{{"pfifo", fifo_parse_opt<false>, fifo_print_opt<false>}};
const QdiscUtilRegistrar kBfifo{{"bfifo", fifo_parse_opt<true>, fifo_print_opt<true>}};
const QdiscUtilRegistrar kPfifoHeadDrop{
    {"pfifo_head_drop", fifo_parse_opt<false>, fifo_print_opt<false>}};

}  // namespace
}  // namespace pktpath::cli::tc
