// noqueue: no options.
#include "cli/tc/tc_util.h"

namespace pktpath::cli::tc {
namespace {

const QdiscUtilRegistrar kNoqueue{{"noqueue"}};

}  // namespace
}  // namespace pktpath::cli::tc
