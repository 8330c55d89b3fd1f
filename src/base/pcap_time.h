// A pcap record's capture time as unsigned seconds. The classic file format stores
// seconds in an unsigned 32-bit field, which libpcap hands over sign-extended into
// tv_sec: a capture made after 2038-01-19 arrives with negative seconds. pcapng's
// 64-bit timestamps arrive as they are.
#pragma once

#include <cstdint>

namespace pktpath {

inline uint64_t pcap_record_sec(int64_t tv_sec) {
  return tv_sec < 0 ? uint64_t(uint32_t(tv_sec)) : uint64_t(tv_sec);
}

}  // namespace pktpath
