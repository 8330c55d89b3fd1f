// ingress and clsact (net/sched/sch_ingress.c): the kinds that hold a device's tc filter
// lists at parent ffff:fff1 instead of sitting in the qdisc tree. ingress has the
// ingress list only; clsact has both. The lists themselves live in clsact.cc.
#include "sched/qdisc.h"

namespace pktpath {

const QdiscRegistrar kIngress{{"ingress", nullptr, false, true}};  // ingress_qdisc_ops
const QdiscRegistrar kClsact{{"clsact", nullptr, false, true}};    // clsact_qdisc_ops

}  // namespace pktpath
