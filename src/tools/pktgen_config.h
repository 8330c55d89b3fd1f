// pktgen's per-device parameters, with Linux's names, defaults and meaning
// (net/core/pktgen.c, pktgen_if_write). Parsing is string -> typed value with an error
// naming the parameter; the datapath reads only the typed struct.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/packet.h"

namespace pktpath {

enum class PktgenMode : uint8_t { kStartXmit, kQueueXmit, kNetifReceive };

// The subset of pktgen's F_* flags pktpath implements (names as `flag NAME` takes them).
enum PktgenFlag : uint32_t {
  F_IPSRC_RND = 1u << 0,
  F_IPDST_RND = 1u << 1,
  F_UDPSRC_RND = 1u << 2,
  F_UDPDST_RND = 1u << 3,
  F_TXSIZE_RND = 1u << 4,
  F_MACSRC_RND = 1u << 5,
  F_MACDST_RND = 1u << 6,
  F_QUEUE_MAP_RND = 1u << 7,
  F_QUEUE_MAP_CPU = 1u << 8,
  F_NO_TIMESTAMP = 1u << 9,
  F_UDPCSUM = 1u << 10,
  // pktpath's own: an ICMP echo request (type 8, id 1, sequence = the packet's) in place
  // of the UDP header, checksummed, so lo and veth answer it (ping -f's traffic).
  F_ICMP_ECHO = 1u << 11,
};

// pkt_size bounds: the Ethernet, IPv4 and UDP headers up to one default packet buffer.
inline constexpr uint32_t kPktgenMinSize = 14 + 20 + 8;
inline constexpr uint32_t kPktgenMaxSize = kDefaultBufSize - kDefaultHeadroom;

struct PktgenConfig {
  std::string dev;
  uint64_t count = 1000;  // per thread; 0 = until stopped
  uint32_t min_pkt_size = 60;  // ETH_ZLEN
  uint32_t max_pkt_size = 60;
  uint32_t saddr_min = 0, saddr_max = 0;  // host byte order
  uint32_t daddr_min = 0, daddr_max = 0;
  std::array<uint8_t, 6> dst_mac = {};
  std::array<uint8_t, 6> src_mac = {};
  bool src_mac_set = false;  // else the device's own address
  uint32_t src_mac_count = 0, dst_mac_count = 0;
  uint16_t udp_src_min = 9, udp_src_max = 9;  // the discard port, as pktgen
  uint16_t udp_dst_min = 9, udp_dst_max = 9;
  uint64_t clone_skb = 0;  // send each packet this many extra times
  uint32_t burst = 1;      // xmit_more batch
  uint64_t delay_ns = 0;   // between packets; 0 = as fast as possible
  uint16_t queue_map_min = 0, queue_map_max = 0;
  uint32_t flags = 0;
  PktgenMode mode = PktgenMode::kStartXmit;  // pktgen's default xmit_mode
  uint8_t tos = 0;
  uint32_t skb_priority = 0;
  double duration_s = 0;  // pktpath extension: stop after this long (0 = no limit)
};

// Applies one `KEY VALUE` as /proc/net/pktgen/DEV takes it. Returns an error message
// naming the key, or nullopt on success. Accepted keys: count, pkt_size, min_pkt_size,
// max_pkt_size, dst, dst_min, dst_max, src_min, src_max, dst_mac, src_mac, src_mac_count,
// dst_mac_count, udp_src_min, udp_src_max, udp_dst_min, udp_dst_max, clone_skb, burst,
// delay, rate, ratep, queue_map_min, queue_map_max, flag, xmit_mode, tos, skb_priority.
std::optional<std::string> pktgen_set(PktgenConfig& cfg, std::string_view key, std::string_view value);

// Cross-field checks done at start (pktgen_setup_inject): sizes, ranges, burst vs mode.
std::optional<std::string> pktgen_validate(const PktgenConfig& cfg);

const char* pktgen_mode_name(PktgenMode m);

// Small parsers shared with the script runner.
std::optional<uint32_t> parse_ipv4(std::string_view s);  // host byte order
bool parse_mac(std::string_view s, std::array<uint8_t, 6>& out);
std::optional<uint64_t> parse_u64(std::string_view s);

}  // namespace pktpath
