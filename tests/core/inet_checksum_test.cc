// core/inet_checksum.h: the RFC 1071 sum, the IPv4 header form, and the incremental
// update equal to a full recomputation.
#include "core/inet_checksum.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace pktpath {
namespace {

// RFC 1071's worked example: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 (before the
// complement).
TEST(InetChecksum, Rfc1071Example) {
  const uint8_t b[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(inet_checksum(b, sizeof b), static_cast<uint16_t>(~0xddf2));
  const uint8_t odd[] = {0x12, 0x34, 0x56};  // 0x1234 + 0x5600
  EXPECT_EQ(inet_checksum(odd, sizeof odd), static_cast<uint16_t>(~0x6834));
}

// A real IPv4 header (checksum 0xb861) verifies, and ip_fast_csum ignores the field.
TEST(InetChecksum, Ipv4Header) {
  uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                    0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(inet_checksum(ip, 20), 0);
  EXPECT_EQ(ip_fast_csum(ip, 20), 0xb861);
  ip[10] = ip[11] = 0;
  EXPECT_EQ(ip_fast_csum(ip, 20), 0xb861);
}

// Changing one word and updating incrementally gives what a full sum gives.
TEST(InetChecksum, Replace2EqualsRecompute) {
  uint8_t d[8] = {0x08, 0x00, 0x00, 0x00, 0x12, 0x34, 0xab, 0xcd};
  const uint16_t c = inet_checksum(d, 8);
  d[2] = static_cast<uint8_t>(c >> 8);
  d[3] = static_cast<uint8_t>(c);
  for (uint16_t to : {0x0000, 0x0001, 0xffff, 0x0800, 0x7f3a}) {
    uint8_t e[8];
    for (int i = 0; i < 8; ++i) e[i] = d[i];
    const uint16_t from = static_cast<uint16_t>(e[0] << 8 | e[1]);
    e[0] = static_cast<uint8_t>(to >> 8);
    e[1] = static_cast<uint8_t>(to);
    const uint16_t inc = csum_replace2(c, from, to);
    e[2] = static_cast<uint8_t>(inc >> 8);
    e[3] = static_cast<uint8_t>(inc);
    EXPECT_EQ(inet_checksum(e, 8), 0) << std::hex << to;
  }
}

}  // namespace
}  // namespace pktpath
