// Link kinds (rtnl_link_ops): what `ip link add ... type KIND` can create. The list
// lives in src/drivers/drivers.cc.
#pragma once

#include <string_view>
#include <vector>

#include "core/netdevice.h"

namespace pktpath {

struct LinkKind {
  const char* kind;
  const NetDeviceOps* ops;
  uint32_t flags;                 // IFF_NO_QUEUE, NETIF_F_LLTX, ...
  void (*setup)(NetDevice& dev);  // driver-private state; may be null
};

const LinkKind* link_kind_lookup(std::string_view kind);
const std::vector<LinkKind>& link_kinds();

}  // namespace pktpath
