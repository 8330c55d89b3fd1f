// net.core.default_qdisc: the discipline attach_default_qdiscs gives a queueing device
// (and mq each of its queues). Linux keeps it per machine; here each Net holds its own.
#include "core/net.h"
#include "core/sysctl.h"
#include "sched/qdisc.h"

namespace pktpath {

namespace {

// mirrors qdisc_set_default: a known kind; mq is not (it needs a multiqueue device and
// is the multiqueue default itself).
const SysctlRegistrar default_qdisc_sysctl{
    {"net.core.default_qdisc", nullptr, "KIND", [](Net& n) { return n.default_qdisc(); },
     [](Net& n, const std::string& v) -> Status {
       const QdiscOps* ops = qdisc_lookup_ops(v);
       if (!ops || ops->ingress_hook || v == "mq")
         return unexpected("net.core.default_qdisc: unknown or unusable qdisc kind '" + v + "'", v);
       n.set_default_qdisc(v);
       return {};
     }}};

}  // namespace
}  // namespace pktpath
