// mq (iproute2's tc/q_mq.c): no options.
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {
namespace {

const QdiscUtilRegistrar kMq{{"mq"}};

}  // namespace
}  // namespace pktpath::cli::tc
