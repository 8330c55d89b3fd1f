// matchall (net/sched/cls_matchall.c): every packet of the filter's protocol matches;
// the classid and the actions decide.
#pragma once

#include "sched/cls_api.h"

namespace pktpath::tc {

struct MatchallSpec : FilterSpecOf<MatchallSpec> {
  static constexpr const char* kKind = "matchall";
};

}  // namespace pktpath::tc
