// The Internet checksum (RFC 1071) in the kernel's forms: csum_fold, a buffer's sum,
// ip_fast_csum for an IPv4 header and csum_replace2's incremental update (RFC 1624).
#pragma once

#include <cstdint>

namespace pktpath {

// mirrors csum_fold: a wide one's-complement sum folded to 16 bits and complemented.
inline uint16_t csum_fold(uint64_t sum) {
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// The checksum of a buffer read as big-endian 16-bit words (an odd last byte padded with
// zero), starting from `seed` (a pseudo-header's sum). 0 when the buffer verifies.
inline uint16_t inet_checksum(const uint8_t* p, uint32_t len, uint64_t seed = 0) {
  uint64_t sum = seed;
  for (; len >= 2; p += 2, len -= 2) sum += static_cast<uint32_t>(p[0] << 8 | p[1]);
  if (len) sum += static_cast<uint32_t>(p[0] << 8);
  return csum_fold(sum);
}

// mirrors ip_fast_csum: the checksum of an IPv4 header of `ihl` bytes, its checksum
// field counted as zero whatever it holds.
inline uint16_t ip_fast_csum(const uint8_t* ip, unsigned ihl) {
  uint64_t sum = 0;
  for (unsigned i = 0; i + 1 < ihl; i += 2)
    if (i != 10) sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
  return csum_fold(sum);
}

// mirrors csum_replace2: the checksum after one 16-bit word of the covered data
// changed from `from` to `to`.
inline uint16_t csum_replace2(uint16_t check, uint16_t from, uint16_t to) {
  return csum_fold(static_cast<uint64_t>(static_cast<uint16_t>(~check)) + static_cast<uint16_t>(~from) + to);
}

}  // namespace pktpath
