// Why a packet was freed without being transmitted or delivered (kernel's
// enum skb_drop_reason). Every drop is counted under exactly one reason.
#pragma once

#include <cstdint>
#include <string_view>

namespace pktpath {

#define PKTPATH_DROP_REASONS(X)                                                  \
  X(NOT_SPECIFIED)    /* no more precise reason */                               \
  X(NETFILTER_DROP)   /* a netfilter hook returned NF_DROP */                    \
  X(TC_EGRESS)        /* tc egress classifier/action dropped it */               \
  X(TC_INGRESS)       /* tc ingress classifier/action dropped it */              \
  X(QDISC_DROP)       /* qdisc full, or qdisc deactivated */                     \
  X(DEV_READY)        /* device down or not ready */                             \
  X(FULL_RING)        /* a driver ring was full */                               \
  X(NOMEM)            /* pool exhausted while copying or cloning */              \
  X(CPU_BACKLOG)      /* receive backlog over its limit */                       \
  X(XMIT_RECURSION)   /* dev_queue_xmit nested deeper than the limit (8) */      \
  X(TAP_FILTER)       /* a tap's filter rejected it (copy only) */               \
  X(PKT_TOO_BIG)      /* larger than the device MTU */                           \
  X(PKT_TOO_SMALL)    /* shorter than a header the path needs */                 \
  X(UNHANDLED_PROTO)  /* nobody to deliver it to */                              \
  X(TC_CHAIN_NOTFOUND)

enum class DropReason : uint8_t {
#define PKTPATH_X(name) name,
  PKTPATH_DROP_REASONS(PKTPATH_X)
#undef PKTPATH_X
      kCount
};

inline constexpr unsigned kDropReasonCount = static_cast<unsigned>(DropReason::kCount);

// The kernel's spelling, e.g. "QDISC_DROP".
std::string_view drop_reason_name(DropReason r);

}  // namespace pktpath
