// The classifier kind registry (net/sched/cls_api.c: tcf_proto_base).
#include "sched/cls_api.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace pktpath::tc {
namespace {

// tcf_proto_base: written only while static initialisers run, read-only afterwards.
std::vector<FilterOps>& proto_base() {
  static std::vector<FilterOps> ops;
  return ops;
}

}  // namespace

void register_tcf_proto_ops(const FilterOps& ops) {
  if (tcf_proto_lookup_ops(ops.kind)) {
    std::fprintf(stderr, "pktpath: filter kind \"%s\" registered twice\n", ops.kind);
    std::abort();
  }
  proto_base().push_back(ops);
}

const FilterOps* tcf_proto_lookup_ops(std::string_view kind) {
  for (const FilterOps& o : proto_base())
    if (kind == o.kind) return &o;
  return nullptr;
}

std::string tcf_proto_kinds() {
  std::vector<std::string> names;
  for (const FilterOps& o : proto_base()) names.emplace_back(o.kind);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace pktpath::tc
