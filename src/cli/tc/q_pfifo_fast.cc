// pfifo_fast (iproute2 prints it with prio's printer): no options.
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {
namespace {

const QdiscUtilRegistrar kPfifoFast{{"pfifo_fast", nullptr, print_prio_qopt}};

}  // namespace
}  // namespace pktpath::cli::tc
