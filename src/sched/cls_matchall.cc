// matchall (net/sched/cls_matchall.c).
#include "sched/cls_matchall.h"

namespace pktpath::tc {
namespace {

class MatchallFilter final : public FilterOf<MatchallSpec> {
 public:
  using FilterOf::FilterOf;
  // mirrors mall_classify: the filter's result, then its actions.
  int classify(const TcContext& ctx, Packet* p, TcResult& res) const override {
    count(ctx, p).matched.add();
    return exts_exec(ctx, p, spec_, res);
  }
};

Result<std::unique_ptr<TcFilter>> mall_create(const FilterSpec& spec, Net&) {
  auto s = filter_spec_as<MatchallSpec>(spec);
  if (!s) return unexpected(s.error());
  return std::unique_ptr<TcFilter>(std::make_unique<MatchallFilter>(**s));
}

const FilterRegistrar kMall{{MatchallSpec::kKind, mall_create}};  // cls_mall_ops

}  // namespace
}  // namespace pktpath::tc
