// The link kinds `ip link add ... type KIND` knows. Listed here rather than registered
// from each driver file, because a static library drops files nobody references.
#include "core/link_kind.h"

namespace pktpath {

extern const NetDeviceOps dummy_netdev_ops;
extern const NetDeviceOps testdrv_netdev_ops;
void testdrv_setup_device(NetDevice& dev);
extern const LinkKind::Option testdrv_options[];
void testdrv_set_option(NetDevice& dev, std::string_view name, uint64_t value);

const std::vector<LinkKind>& link_kinds() {
  static const std::vector<LinkKind> kinds = {
      {"dummy", &dummy_netdev_ops, IFF_NO_QUEUE | NETIF_F_LLTX, nullptr, nullptr, nullptr},
      {"testdrv", &testdrv_netdev_ops, 0, testdrv_setup_device, testdrv_options, testdrv_set_option},
  };
  return kinds;
}

const LinkKind* link_kind_lookup(std::string_view kind) {
  for (const LinkKind& k : link_kinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

const LinkKind::Option* link_kind_option(const LinkKind& k, std::string_view name) {
  for (const LinkKind::Option* o = k.options; o && o->name; ++o)
    if (name == o->name) return o;
  return nullptr;
}

}  // namespace pktpath
