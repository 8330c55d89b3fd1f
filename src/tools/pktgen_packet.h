// Building pktgen's packets: the per-device "current" header values that advance packet
// by packet (mod_cur_headers) and the Ethernet/IPv4/UDP + pktgen header frame
// (fill_packet_ipv4), written straight into a pool Packet.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "core/cpu.h"
#include "core/packet.h"
#include "tools/pktgen_config.h"

namespace pktpath {

inline constexpr uint32_t kPktgenMagic = 0xbe9be955;
inline constexpr uint32_t kPktgenHdrLen = 16;  // magic, seq, tv_sec, tv_usec
inline constexpr uint32_t kPktgenHeadersLen = 14 + 20 + 8;

// pktgen_dev's cur_* fields: the values the next packet gets.
struct PktgenState {
  uint32_t cur_saddr = 0, cur_daddr = 0;  // host byte order
  uint16_t cur_udp_src = 0, cur_udp_dst = 0;
  uint32_t cur_pkt_size = 0;
  uint16_t cur_queue_map = 0;
  uint16_t ip_id = 0;
  uint32_t seq_num = 0;
  uint32_t cur_src_mac_offset = 0, cur_dst_mac_offset = 0;
  std::array<uint8_t, 12> hh = {};  // destination then source MAC, as they go on the wire
  std::array<uint8_t, 6> src_base = {};  // the source MAC that src_mac_count counts from
  uint64_t rng = 0x9e3779b97f4a7c15ull;

  // pktgen_setup_inject: start values from the configuration. dev_mac is the source MAC
  // when the configuration sets none.
  void init(const PktgenConfig& cfg, const uint8_t dev_mac[6], uint64_t seed);
  // prandom_u32_max: uniform in [0, n).
  uint32_t random_below(uint32_t n);
};

// mirrors mod_cur_headers + set_cur_queue_map: advance (or randomise, per flags) MACs,
// addresses, ports, size and queue map. cpu_index feeds QUEUE_MAP_CPU.
void pktgen_mod_cur_headers(const PktgenConfig& cfg, PktgenState& st, unsigned cpu_index,
                            unsigned real_num_tx_queues);

// The frame's length for the current size: pkt_size, but never below the headers plus
// pktgen's own 16-byte header.
uint32_t pktgen_frame_len(const PktgenState& st);

// Writes the whole frame for the current values at `eth` with IP id `id` (the sequence
// number is st.seq_num); returns its length. The bytes fill_packet_ipv4 puts in a packet.
uint32_t pktgen_write_frame(uint8_t* eth, const PktgenConfig& cfg, const PktgenState& st, uint16_t id,
                            uint64_t realtime_ns);
// The IPv4 header's one's-complement sum of every field but the id (and the checksum):
// adding the id and folding gives the checksum, so a prebuilt header needs no re-sum.
uint64_t pktgen_ip_sum_without_id(const PktgenConfig& cfg, const PktgenState& st);
// pktgen's timestamp words (tv_sec, tv_usec) at p, or zeros with NO_TIMESTAMP.
void pktgen_put_timestamp(uint8_t* p, const PktgenConfig& cfg, uint64_t realtime_ns);
// The sk_buff fields fill_packet_ipv4 sets besides the bytes.
inline void pktgen_set_meta(Packet* p, const PktgenConfig& cfg, const PktgenState& st) {
  p->protocol = __builtin_bswap16(0x0800);
  p->queue_mapping = st.cur_queue_map;
  p->priority = cfg.skb_priority;
  p->pkt_type = PACKET_HOST;
}

// Big-endian stores as single 16/32-bit writes (byte-wise writes read back as words
// would defeat store forwarding).
inline void pktgen_put16(uint8_t* p, uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void pktgen_put32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}

// mirrors fill_packet_ipv4: allocate on `cpu` and write the frame for the current
// values. nullptr if the pool is exhausted (counted by the Cpu). The IPv4 checksum is
// always valid; the UDP checksum is computed with flag UDPCSUM, else 0 (none), as pktgen.
Packet* pktgen_fill_packet_ipv4(Cpu& cpu, const PktgenConfig& cfg, PktgenState& st,
                                uint64_t realtime_ns);

}  // namespace pktpath
