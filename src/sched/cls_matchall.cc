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

std::unique_ptr<TcFilter> mall_create(const FilterSpec& spec, Net&, std::string* err) {
  const auto* s = filter_spec_as<MatchallSpec>(spec, err);
  if (!s) return nullptr;
  return std::make_unique<MatchallFilter>(*s);
}

const FilterRegistrar kMall{{MatchallSpec::kKind, mall_create}};  // cls_mall_ops

}  // namespace
}  // namespace pktpath::tc
