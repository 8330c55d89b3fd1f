// ingress (iproute2's tc/q_ingress.c): no options; prints a row of dashes.
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {
namespace {

void ingress_print_opt(const QdiscOptions&, KindPrint& out) { out.text = "---------------- "; }

const QdiscUtilRegistrar kIngress{{"ingress", nullptr, ingress_print_opt, true}};

}  // namespace
}  // namespace pktpath::cli::tc
