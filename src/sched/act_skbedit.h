// skbedit: set queue_mapping, priority, mark (net/sched/act_skbedit.c).
#pragma once

#include <optional>

#include "sched/act_api.h"

namespace pktpath::tc {

class SkbeditAction final : public TcAction {
 public:
  struct Params {
    std::optional<uint16_t> queue_mapping;
    std::optional<uint32_t> priority;
    std::optional<uint32_t> mark;
    int verdict = TC_ACT_PIPE;
  };
  explicit SkbeditAction(Params p) : p_(p) {}
  int act(const TcContext& ctx, Packet* p, TcResult& res) override;
  const char* kind() const override { return "skbedit"; }
  ActionOptions dump() const override;

 private:
  Params p_;
};

struct SkbeditOptions : KindOptionsBase {
  SkbeditAction::Params params;
};

}  // namespace pktpath::tc
