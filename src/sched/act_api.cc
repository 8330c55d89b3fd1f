// The action kind registry and the action pipeline (net/sched/act_api.c).
#include "sched/act_api.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/dev_table.h"
#include "core/net.h"

namespace pktpath::tc {

const char* tc_act_name(int v) {
  switch (v) {
    case TC_ACT_UNSPEC: return "continue";
    case TC_ACT_OK: return "pass";
    case TC_ACT_RECLASSIFY: return "reclassify";
    case TC_ACT_SHOT: return "drop";
    case TC_ACT_PIPE: return "pipe";
    case TC_ACT_STOLEN: return "stolen";
    case TC_ACT_QUEUED: return "queued";
    case TC_ACT_REPEAT: return "repeat";
    case TC_ACT_REDIRECT: return "redirect";
    case TC_ACT_TRAP: return "trap";
    default: return "unknown";
  }
}

TcStats::Sum TcStats::sum() const {
  Sum s;
  slots_.for_each([&](const Slot& x) {
    s.packets += x.packets.get();
    s.bytes += x.bytes.get();
    s.drops += x.drops.get();
    s.overlimits += x.overlimits.get();
    s.matched += x.matched.get();
  });
  return s;
}

namespace {

// act_base: written only while static initialisers run, read-only afterwards.
std::vector<ActionOps>& act_base() {
  static std::vector<ActionOps> ops;
  return ops;
}

}  // namespace

void tcf_register_action(const ActionOps& ops) {
  if (tc_lookup_action(ops.kind)) {
    std::fprintf(stderr, "pktpath: action kind \"%s\" registered twice\n", ops.kind);
    std::abort();
  }
  act_base().push_back(ops);
}

const ActionOps* tc_lookup_action(std::string_view kind) {
  for (const ActionOps& o : act_base())
    if (kind == o.kind) return &o;
  return nullptr;
}

uint32_t ActionIdr::alloc() {
  std::lock_guard<std::mutex> g(mu_);
  if (free_.empty()) return next_++;
  const uint32_t i = *free_.begin();
  free_.erase(free_.begin());
  return i;
}

void ActionIdr::release(uint32_t index) {
  std::lock_guard<std::mutex> g(mu_);
  if (index + 1 == next_) {
    --next_;
    while (!free_.empty() && *free_.rbegin() + 1 == next_) {  // keep free_ below next_
      free_.erase(std::prev(free_.end()));
      --next_;
    }
  } else {
    free_.insert(index);
  }
}

namespace {

// tc_action_net: one index space per action kind, per Net.
struct ActionNet final : PernetState {
  std::map<std::string, std::shared_ptr<ActionIdr>, std::less<>> idrs;
};

const PernetRegistrar act_pernet{{"tc_actions", [](Net&) -> std::unique_ptr<PernetState> {
                                    return std::make_unique<ActionNet>();
                                  }}};

}  // namespace

Result<std::shared_ptr<TcAction>> tcf_action_init(std::string_view kind, const ActionOptions& opts,
                                                  DeviceTable& table) {
  const ActionOps* ops = tc_lookup_action(kind);
  if (!ops) return unexpected("unknown action \"" + std::string(kind) + "\"");
  auto a = ops->init(opts, table);
  if (!a) return a;
  auto& idrs = table.net().generic<ActionNet>(act_pernet.id).idrs;
  auto it = idrs.find(kind);
  if (it == idrs.end()) it = idrs.emplace(std::string(kind), std::make_shared<ActionIdr>()).first;
  (*a)->idr_ = it->second;
  (*a)->index = it->second->alloc();
  return a;
}

// mirrors tcf_action_exec (no jump/goto chain: pktpath's actions never return them)
int tcf_action_exec(const TcContext& ctx, Packet* p, const ActionList& actions, TcResult& res) {
  int ret = TC_ACT_OK;
  for (const auto& a : actions) {
    int repeat_ttl = 32;
    do {
      ret = a->act(ctx, p, res);
    } while (PP_UNLIKELY(ret == TC_ACT_REPEAT) && --repeat_ttl != 0);
    if (ret == TC_ACT_REPEAT) return TC_ACT_OK;
    if (ret != TC_ACT_PIPE) break;
  }
  return ret;
}

}  // namespace pktpath::tc
