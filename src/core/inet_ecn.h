// ECN codepoints in IPv4/IPv6 headers (include/net/inet_ecn.h).
#pragma once

#include <cstdint>

#include "core/packet.h"

namespace pktpath {

inline constexpr uint8_t INET_ECN_NOT_ECT = 0, INET_ECN_ECT_1 = 1, INET_ECN_ECT_0 = 2,
                         INET_ECN_CE = 3, INET_ECN_MASK = 3;

// mirrors INET_ECN_set_ce: an ECT packet gets CE in its IPv4 TOS (checksum updated
// incrementally, as IP_ECN_set_ce) or IPv6 traffic class. true if the packet is CE
// afterwards (IPv4 already CE counts, as in the kernel), false for Not-ECT, other
// protocols, or a header beyond the linear part.
bool inet_ecn_set_ce(Packet& p);

}  // namespace pktpath
