// prio (iproute2's tc/q_prio.c): `bands N`, `priomap P0 .. P15`.
#include "cli/tc/tc_util.h"
#include "sched/sch_prio.h"

namespace pktpath::cli::tc {
namespace {

Result<QdiscOptions> prio_parse_opt(Lexer& lx) {
  PrioOptions p;
  bool have_map = false;
  while (!lx.done()) {
    const std::string& k = lx.next();
    if (k == "bands") {
      auto v = lx.value(k);
      if (!v) return unexpected(v.error());
      auto n = get_u32(*v, 10);
      if (!n || *n < 2 || *n > 16) return unexpected("bands must be 2..16", *v);
      p.bands = *n;
    } else if (k == "priomap") {
      size_t n = 0;
      while (!lx.done() && n <= kTcPrioMax) {
        auto b = get_u32(lx.peek(), 10);
        if (!b) break;
        if (*b > 15) return unexpected("priomap entry must be a band number", lx.peek());
        p.priomap[n++] = static_cast<uint8_t>(*b);
        lx.next();
      }
      if (n == 0) return unexpected("priomap needs band numbers", "priomap");
      have_map = true;
    } else {
      return unexpected("unknown option \"" + k + "\" (prio takes bands, priomap)", k);
    }
  }
  for (size_t k = 0; k <= kTcPrioMax; ++k)
    if (p.priomap[k] >= p.bands)
      return unexpected("priomap entry " + std::to_string(p.priomap[k]) + " is not a band (bands " +
                            std::to_string(p.bands) + ")",
                        have_map ? "priomap" : "bands");
  return QdiscOptions(p);
}

const QdiscUtilRegistrar kPrio{{"prio", prio_parse_opt, print_prio_qopt}};

}  // namespace
}  // namespace pktpath::cli::tc
