// The nftables ruleset of a Net (net->nft): each namespace has its own tables.
#pragma once

#include "core/net.h"
#include "netfilter/nft_ruleset.h"

namespace pktpath::nf {

NftRuleset& nft_ruleset(Net& net);

}  // namespace pktpath::nf
