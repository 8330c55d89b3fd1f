#include "netfilter/nft_net.h"

namespace pktpath::nf {

namespace {

// nf_tables_pernet: the ruleset; flushed before the Net's devices go, so no chain keeps
// a pointer to a device's hook heads (nf_tables_pre_exit_net).
struct NftNet final : PernetState {
  NftRuleset ruleset;
  void pre_exit(Net&) override { ruleset.flush(); }
};

const PernetRegistrar nft_pernet{{"nftables", [](Net&) -> std::unique_ptr<PernetState> {
                                    return std::make_unique<NftNet>();
                                  }}};

}  // namespace

NftRuleset& nft_ruleset(Net& net) { return net.generic<NftNet>(nft_pernet.id).ruleset; }

}  // namespace pktpath::nf
