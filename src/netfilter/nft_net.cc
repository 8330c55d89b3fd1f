#include "netfilter/nft_net.h"

#include "core/dev_table.h"

namespace pktpath::nf {

namespace {

// nf_tables_pernet: the ruleset; flushed before the Net's devices go, so no chain keeps
// a pointer to a device's hook heads (nf_tables_pre_exit_net).
struct NftNet final : PernetState {
  NftRuleset ruleset;
  void pre_exit(Net&) override { ruleset.flush(); }
};

// A chain whose device goes away is released (nft_netdev_event).
const PernetRegistrar nft_pernet{{"nftables", [](Net& net) -> std::unique_ptr<PernetState> {
                                    auto s = std::make_unique<NftNet>();
                                    s->ruleset.watch_devices(net.devices().notifier());
                                    Net* n = &net;  // outlives its pernet state
                                    s->ruleset.set_time_source([n] {
                                      return n->clock() ? n->clock()->now_ns() : MonotonicClock::instance().now_ns();
                                    });
                                    return s;
                                  }}};

}  // namespace

NftRuleset& nft_ruleset(Net& net) { return net.generic<NftNet>(nft_pernet.id).ruleset; }

}  // namespace pktpath::nf
