// clsact (iproute2's tc/q_clsact.c): no options; attaches at parent ffff:fff1.
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {
namespace {

const QdiscUtilRegistrar kClsact{{"clsact", nullptr, nullptr, true}};

}  // namespace
}  // namespace pktpath::cli::tc
