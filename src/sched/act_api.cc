// The action kind registry and the action pipeline (net/sched/act_api.c).
#include "sched/act_api.h"

#include <cstdio>
#include <cstdlib>

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

TcStats::~TcStats() {
  Blocks* b = blocks_.load(std::memory_order_acquire);
  if (!b) return;
  for (auto& k : b->at) delete k.load(std::memory_order_acquire);
  delete b;
}

// The first count on any Cpu: the block table (cold path; a loser of the race frees its own).
TcStats::Blocks* TcStats::make_blocks() {
  auto* fresh = new Blocks;
  Blocks* cur = nullptr;
  if (blocks_.compare_exchange_strong(cur, fresh, std::memory_order_acq_rel)) return fresh;
  delete fresh;
  return cur;
}

TcStats::Block* TcStats::make_block(Blocks& b, unsigned i) {
  auto* fresh = new Block;
  Block* cur = nullptr;
  if (b.at[i].compare_exchange_strong(cur, fresh, std::memory_order_acq_rel)) return fresh;
  delete fresh;
  return cur;
}

TcStats::Sum TcStats::sum() const {
  Sum s;
  const Blocks* b = blocks_.load(std::memory_order_acquire);
  if (!b) return s;
  for (const auto& kp : b->at) {
    const Block* k = kp.load(std::memory_order_acquire);
    if (!k) continue;
    for (const Slot& x : k->slot) {
      s.packets += x.packets.get();
      s.bytes += x.bytes.get();
      s.drops += x.drops.get();
      s.overlimits += x.overlimits.get();
      s.matched += x.matched.get();
    }
  }
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

Result<std::shared_ptr<TcAction>> tcf_action_init(std::string_view kind, const ActionOptions& opts,
                                                  DeviceTable& table) {
  const ActionOps* ops = tc_lookup_action(kind);
  if (!ops) return unexpected("unknown action \"" + std::string(kind) + "\"");
  return ops->init(opts, table);
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
