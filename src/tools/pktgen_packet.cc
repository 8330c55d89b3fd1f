#include "tools/pktgen_packet.h"

#include <cstring>

#include "core/inet_checksum.h"

namespace pktpath {

namespace {

constexpr uint16_t kTtlProto = (32 << 8) | 17;  // ttl 32, UDP
constexpr uint16_t kTtlProtoIcmp = (32 << 8) | 1;  // ttl 32, ICMP

uint16_t ttl_proto(const PktgenConfig& cfg) { return (cfg.flags & F_ICMP_ECHO) ? kTtlProtoIcmp : kTtlProto; }

// Adds `mc` to the low four bytes of a MAC (with carry into the fifth), as pktgen does
// for src_mac_count/dst_mac_count.
void mac_add(const std::array<uint8_t, 6>& base, uint32_t mc, uint8_t* out) {
  uint32_t t = base[5] + (mc & 0xff);
  out[5] = static_cast<uint8_t>(t);
  t = base[4] + ((mc >> 8) & 0xff) + (t >> 8);
  out[4] = static_cast<uint8_t>(t);
  t = base[3] + ((mc >> 16) & 0xff) + (t >> 8);
  out[3] = static_cast<uint8_t>(t);
  t = base[2] + ((mc >> 24) & 0xff) + (t >> 8);
  out[2] = static_cast<uint8_t>(t);
  t = base[1] + (t >> 8);
  out[1] = static_cast<uint8_t>(t);
}

uint32_t next_in_count(uint32_t& offset, uint32_t count) {
  uint32_t mc = offset++;
  if (offset >= count) offset = 0;
  return mc;
}

bool bad_random_daddr(uint32_t a) {
  uint8_t top = static_cast<uint8_t>(a >> 24);
  return top == 127 || (top >= 224 && top <= 239) || a == 0xffffffffu || top == 0;
}

}  // namespace

void PktgenState::init(const PktgenConfig& cfg, const uint8_t dev_mac[6], uint64_t seed) {
  cur_saddr = cfg.saddr_min;
  cur_daddr = cfg.daddr_min;
  cur_udp_src = cfg.udp_src_min;
  cur_udp_dst = cfg.udp_dst_min;
  cur_pkt_size = cfg.min_pkt_size;
  cur_queue_map = 0;
  ip_id = 0;
  seq_num = 0;
  cur_src_mac_offset = cur_dst_mac_offset = 0;
  std::memcpy(hh.data(), cfg.dst_mac.data(), 6);
  std::memcpy(hh.data() + 6, cfg.src_mac_set ? cfg.src_mac.data() : dev_mac, 6);
  std::memcpy(src_base.data(), hh.data() + 6, 6);
  rng = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
}

uint32_t PktgenState::random_below(uint32_t n) {
  // xorshift64*: fast, good enough for spreading header values.
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  uint32_t r = static_cast<uint32_t>((rng * 0x2545f4914f6cdd1dull) >> 32);
  return static_cast<uint32_t>((uint64_t{r} * n) >> 32);
}

void pktgen_mod_cur_headers(const PktgenConfig& cfg, PktgenState& st, unsigned cpu_index,
                            unsigned real_num_tx_queues) {
  const uint32_t f = cfg.flags;
  if (cfg.src_mac_count > 1) {
    uint32_t mc = (f & F_MACSRC_RND) ? st.random_below(cfg.src_mac_count)
                                     : next_in_count(st.cur_src_mac_offset, cfg.src_mac_count);
    uint8_t out[6];
    std::memcpy(out, st.src_base.data(), 6);
    mac_add(st.src_base, mc, out);
    std::memcpy(st.hh.data() + 6, out, 6);
  }
  if (cfg.dst_mac_count > 1) {
    uint32_t mc = (f & F_MACDST_RND) ? st.random_below(cfg.dst_mac_count)
                                     : next_in_count(st.cur_dst_mac_offset, cfg.dst_mac_count);
    uint8_t out[6];
    std::memcpy(out, cfg.dst_mac.data(), 6);
    mac_add(cfg.dst_mac, mc, out);
    std::memcpy(st.hh.data(), out, 6);
  }
  if (cfg.udp_src_min < cfg.udp_src_max) {
    if (f & F_UDPSRC_RND) {
      st.cur_udp_src = static_cast<uint16_t>(st.random_below(cfg.udp_src_max - cfg.udp_src_min) + cfg.udp_src_min);
    } else if (++st.cur_udp_src >= cfg.udp_src_max) {
      st.cur_udp_src = cfg.udp_src_min;
    }
  }
  if (cfg.udp_dst_min < cfg.udp_dst_max) {
    if (f & F_UDPDST_RND) {
      st.cur_udp_dst = static_cast<uint16_t>(st.random_below(cfg.udp_dst_max - cfg.udp_dst_min) + cfg.udp_dst_min);
    } else if (++st.cur_udp_dst >= cfg.udp_dst_max) {
      st.cur_udp_dst = cfg.udp_dst_min;
    }
  }
  if (cfg.saddr_min < cfg.saddr_max) {
    if (f & F_IPSRC_RND) {
      st.cur_saddr = st.random_below(cfg.saddr_max - cfg.saddr_min) + cfg.saddr_min;
    } else {
      uint32_t t = st.cur_saddr + 1;
      st.cur_saddr = t > cfg.saddr_max || t == 0 ? cfg.saddr_min : t;
    }
  }
  if (cfg.daddr_min < cfg.daddr_max) {
    if (f & F_IPDST_RND) {
      uint32_t t;
      int tries = 0;
      do {
        t = st.random_below(cfg.daddr_max - cfg.daddr_min) + cfg.daddr_min;
      } while (bad_random_daddr(t) && ++tries < 64);  // pktgen retries; bound it
      st.cur_daddr = t;
    } else {
      uint32_t t = st.cur_daddr + 1;
      st.cur_daddr = t > cfg.daddr_max || t == 0 ? cfg.daddr_min : t;
    }
  }
  if (cfg.min_pkt_size < cfg.max_pkt_size) {
    if (f & F_TXSIZE_RND) {
      st.cur_pkt_size = st.random_below(cfg.max_pkt_size - cfg.min_pkt_size) + cfg.min_pkt_size;
    } else {
      uint32_t t = st.cur_pkt_size + 1;
      st.cur_pkt_size = t > cfg.max_pkt_size ? cfg.min_pkt_size : t;
    }
  }
  // set_cur_queue_map
  if (f & F_QUEUE_MAP_CPU) {
    st.cur_queue_map = static_cast<uint16_t>(cpu_index);
  } else if (cfg.queue_map_min <= cfg.queue_map_max) {
    if (f & F_QUEUE_MAP_RND) {
      st.cur_queue_map = static_cast<uint16_t>(
          st.random_below(cfg.queue_map_max - cfg.queue_map_min + 1u) + cfg.queue_map_min);
    } else {
      uint32_t t = st.cur_queue_map + 1u;
      st.cur_queue_map = static_cast<uint16_t>(t > cfg.queue_map_max ? cfg.queue_map_min : t);
    }
  }
  // The modulo of set_cur_queue_map, without a divide when the value is already in range.
  if (PP_UNLIKELY(st.cur_queue_map >= real_num_tx_queues))
    st.cur_queue_map = static_cast<uint16_t>(real_num_tx_queues ? st.cur_queue_map % real_num_tx_queues : 0);
}

uint32_t pktgen_frame_len(const PktgenState& st) {
  const uint32_t datalen = st.cur_pkt_size > kPktgenHeadersLen + kPktgenHdrLen
                               ? st.cur_pkt_size - kPktgenHeadersLen
                               : kPktgenHdrLen;
  return kPktgenHeadersLen + datalen;
}

uint32_t pktgen_write_frame(uint8_t* eth, const PktgenConfig& cfg, const PktgenState& st, uint16_t id,
                            uint64_t realtime_ns) {
  const uint32_t total = pktgen_frame_len(st);
  const uint32_t datalen = total - kPktgenHeadersLen;
  std::memcpy(eth, st.hh.data(), 12);
  pktgen_put16(eth + 12, 0x0800);

  // IPv4 header; its checksum is summed from the field values, not read back.
  uint8_t* ip = eth + 14;
  const uint16_t ver_tos = static_cast<uint16_t>(0x4500 | cfg.tos);
  const uint16_t tot_len = static_cast<uint16_t>(20 + 8 + datalen);
  const uint64_t sum = pktgen_ip_sum_without_id(cfg, st) + id;
  pktgen_put16(ip, ver_tos);
  pktgen_put16(ip + 2, tot_len);
  pktgen_put16(ip + 4, id);
  pktgen_put16(ip + 6, 0);
  pktgen_put16(ip + 8, ttl_proto(cfg));
  pktgen_put16(ip + 10, csum_fold(sum));
  pktgen_put32(ip + 12, st.cur_saddr);
  pktgen_put32(ip + 16, st.cur_daddr);

  uint8_t* udp = ip + 20;
  pktgen_put16(udp, st.cur_udp_src);
  pktgen_put16(udp + 2, st.cur_udp_dst);
  pktgen_put16(udp + 4, static_cast<uint16_t>(8 + datalen));
  pktgen_put16(udp + 6, 0);

  uint8_t* pgh = udp + 8;
  pktgen_put32(pgh, kPktgenMagic);
  pktgen_put32(pgh + 4, st.seq_num);
  pktgen_put_timestamp(pgh + 8, cfg, realtime_ns);
  // skb_put_zero of the payload; short pads (60-byte frames have 2 bytes) inline.
  const uint32_t pad = datalen - kPktgenHdrLen;
  if (pad <= 16) {
    for (uint32_t i = 0; i < pad; ++i) pgh[kPktgenHdrLen + i] = 0;
  } else {
    std::memset(pgh + kPktgenHdrLen, 0, pad);
  }

  if (cfg.flags & F_ICMP_ECHO) {
    // Echo request header over the UDP one (both 8 bytes): type 8, code 0, id 1, seq.
    pktgen_put16(udp, 0x0800);
    pktgen_put16(udp + 2, 0);
    pktgen_put16(udp + 4, 1);
    pktgen_put16(udp + 6, static_cast<uint16_t>(st.seq_num));
    pktgen_put16(udp + 2, inet_checksum(udp, 8 + datalen, 0));
  } else if (cfg.flags & F_UDPCSUM) {
    // Pseudo-header: saddr, daddr, zero+protocol, UDP length.
    uint32_t seed = (st.cur_saddr >> 16) + (st.cur_saddr & 0xffff) + (st.cur_daddr >> 16) +
                    (st.cur_daddr & 0xffff) + 17 + 8 + datalen;
    uint16_t c = inet_checksum(udp, 8 + datalen, seed);
    pktgen_put16(udp + 6, c == 0 ? 0xffff : c);
  }
  return total;
}

uint64_t pktgen_ip_sum_without_id(const PktgenConfig& cfg, const PktgenState& st) {
  const uint32_t tot_len = pktgen_frame_len(st) - 14;
  return uint64_t{0x4500u | cfg.tos} + tot_len + ttl_proto(cfg) + (st.cur_saddr >> 16) + (st.cur_saddr & 0xffff) +
         (st.cur_daddr >> 16) + (st.cur_daddr & 0xffff);
}

void pktgen_put_timestamp(uint8_t* p, const PktgenConfig& cfg, uint64_t realtime_ns) {
  if (cfg.flags & F_NO_TIMESTAMP) {
    pktgen_put32(p, 0);
    pktgen_put32(p + 4, 0);
  } else {
    pktgen_put32(p, static_cast<uint32_t>(realtime_ns / 1'000'000'000ull));
    pktgen_put32(p + 4, static_cast<uint32_t>(realtime_ns % 1'000'000'000ull / 1000));
  }
}

Packet* pktgen_fill_packet_ipv4(Cpu& cpu, const PktgenConfig& cfg, PktgenState& st,
                                uint64_t realtime_ns) {
  const uint32_t total = pktgen_frame_len(st);
  // The room check against the pool's geometry, before allocating: a fresh packet's
  // fields are not read back right after they were cleared (that read stalls).
  const PacketPool& pool = cpu.pool();
  if (PP_UNLIKELY(total > pool.buf_size() - pool.headroom())) return nullptr;
  Packet* p = cpu.alloc();
  if (!p) return nullptr;
  pktgen_write_frame(p->put_fresh(total), cfg, st, st.ip_id++, realtime_ns);
  pktgen_set_meta(p, cfg, st);
  return p;
}

}  // namespace pktpath
