#include "core/drop_reason.h"

namespace pktpath {

std::string_view drop_reason_name(DropReason r) {
  static constexpr std::string_view names[] = {
#define PKTPATH_X(name) #name,
      PKTPATH_DROP_REASONS(PKTPATH_X)
#undef PKTPATH_X
  };
  auto i = static_cast<unsigned>(r);
  return i < kDropReasonCount ? names[i] : std::string_view("INVALID");
}

}  // namespace pktpath
