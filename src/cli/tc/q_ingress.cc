// ingress (iproute2's tc/q_ingress.c): no options; prints a row of dashes.
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {
namespace {

void ingress_print_opt(const QdiscOptions&, PrintSink& out) { out.print_string(PRINT_FP, nullptr, "---------------- ", ""); }

const QdiscUtilRegistrar kIngress{{"ingress", nullptr, ingress_print_opt, true}};

}  // namespace
}  // namespace pktpath::cli::tc
