// gact: a fixed verdict (net/sched/act_gact.c without the random part).
#pragma once

#include "sched/act_api.h"

namespace pktpath::tc {

struct GactOptions : KindOptionsBase {
  int verdict = TC_ACT_OK;
};

class GactAction final : public TcAction {
 public:
  explicit GactAction(int verdict) : verdict_(verdict) {}
  int act(const TcContext& ctx, Packet* p, TcResult& res) override;
  const char* kind() const override { return "gact"; }
  ActionOptions dump() const override;
  int verdict() const { return verdict_; }

 private:
  int verdict_;
};

}  // namespace pktpath::tc
