// The registry of link kinds (rtnl_link_ops list). Written only during static
// initialisation, by each driver's LinkKindRegistrar.
#include "core/link_kind.h"

namespace pktpath {

namespace {
std::vector<LinkKind>& registry() {
  static std::vector<LinkKind> kinds;
  return kinds;
}
}  // namespace

void link_kind_register(const LinkKind& k) { registry().push_back(k); }

const std::vector<LinkKind>& link_kinds() { return registry(); }

const LinkKind* link_kind_lookup(std::string_view kind) {
  for (const LinkKind& k : registry())
    if (kind == k.kind) return &k;
  return nullptr;
}

const LinkKind::Option* link_kind_option(const LinkKind& k, std::string_view name) {
  for (const LinkKind::Option* o = k.options; o && o->name; ++o)
    if (name == o->name) return o;
  return nullptr;
}

}  // namespace pktpath
