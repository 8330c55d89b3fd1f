// The 60-byte Ethernet/IPv4/UDP frame pktgen sends with the sample script's settings
// (pkt_size 60, NO_TIMESTAMP, UDP 9 -> 9, ttl 32, UDP checksum 0). Header-only so that
// tests/kernel can check it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kbase {

inline constexpr size_t kFrameLen = 60;            // ETH_ZLEN: pktgen's default pkt_size
inline constexpr uint32_t kPktgenMagic = 0xbe9be955;  // pktgen_hdr.pgh_magic

struct FrameFields {
  std::array<uint8_t, 6> dst_mac{};
  std::array<uint8_t, 6> src_mac{};
  uint32_t saddr = 0;  // host order
  uint32_t daddr = 0;  // host order
  uint16_t ip_id = 0;
  uint32_t seq = 0;    // pktgen_hdr.seq_num
};

inline void kb_put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

inline void kb_put32(uint8_t* p, uint32_t v) {
  kb_put16(p, static_cast<uint16_t>(v >> 16));
  kb_put16(p + 2, static_cast<uint16_t>(v));
}

// One's-complement sum of big-endian 16-bit words, folded and inverted (ip_fast_csum).
inline uint16_t kb_ipv4_checksum(const uint8_t* hdr, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(hdr[i] << 8 | hdr[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// Lays the frame out as pktgen's fill_packet_ipv4 does: Ethernet, 20-byte IPv4 header,
// UDP header with checksum 0, pktgen_hdr (magic, seq, zero timestamps), zero padding.
inline void build_pktgen_frame(uint8_t* out, const FrameFields& f) {
  std::memset(out, 0, kFrameLen);
  std::memcpy(out, f.dst_mac.data(), 6);
  std::memcpy(out + 6, f.src_mac.data(), 6);
  kb_put16(out + 12, 0x0800);

  uint8_t* ip = out + 14;
  const uint16_t ip_len = static_cast<uint16_t>(kFrameLen - 14);
  ip[0] = 0x45;  // version 4, 5 words
  ip[1] = 0;     // tos
  kb_put16(ip + 2, ip_len);
  kb_put16(ip + 4, f.ip_id);
  kb_put16(ip + 6, 0);  // no fragmentation flags, as pktgen
  ip[8] = 32;           // pktgen's ttl
  ip[9] = 17;           // UDP
  kb_put32(ip + 12, f.saddr);
  kb_put32(ip + 16, f.daddr);
  kb_put16(ip + 10, kb_ipv4_checksum(ip, 20));

  uint8_t* udp = ip + 20;
  kb_put16(udp, 9);
  kb_put16(udp + 2, 9);
  kb_put16(udp + 4, static_cast<uint16_t>(ip_len - 20));
  kb_put16(udp + 6, 0);  // no UDP checksum without flag UDPCSUM

  uint8_t* pgh = udp + 8;
  kb_put32(pgh, kPktgenMagic);
  kb_put32(pgh + 4, f.seq);
  // tv_sec, tv_usec stay 0 (NO_TIMESTAMP); the 2 bytes after the header are padding.
}

}  // namespace kbase
