#include "tools/pktgen_template.h"

#include <cstring>

namespace pktpath {

bool pktgen_headers_fixed(const PktgenConfig& cfg) {
  const bool queue_fixed = (cfg.flags & F_QUEUE_MAP_CPU) || cfg.queue_map_min >= cfg.queue_map_max;
  return cfg.src_mac_count <= 1 && cfg.dst_mac_count <= 1 && cfg.udp_src_min >= cfg.udp_src_max &&
         cfg.udp_dst_min >= cfg.udp_dst_max && cfg.saddr_min >= cfg.saddr_max &&
         cfg.daddr_min >= cfg.daddr_max && cfg.min_pkt_size >= cfg.max_pkt_size && queue_fixed;
}

bool PktgenTemplate::build(const PktgenConfig& cfg, const PktgenState& st, const PacketPool& pool,
                           NetDevice* dev) {
  len_ = pktgen_frame_len(st);
  if (!pktgen_headers_fixed(cfg) || (cfg.flags & (F_UDPCSUM | F_ICMP_ECHO)) || len_ > kBytes) return false;
  // The whole kBytes copy must fit behind the headroom, not just the frame.
  if (pool.buf_size() < pool.headroom() + kBytes) return false;
  std::memset(bytes_, 0, kBytes);
  // Id 0 and timestamp 0: both are written over per packet.
  pktgen_write_frame(bytes_, cfg, st, 0, 0);
  uint64_t sum = pktgen_ip_sum_without_id(cfg, st);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  sum16_ = static_cast<uint32_t>(sum);
  timestamps_ = !(cfg.flags & F_NO_TIMESTAMP);
  // A prototype packet's cleared block, with what fill_packet_ipv4 and skb_put set.
  Packet proto;
  proto.reset_for_alloc(0, 0);
  proto.len = len_;
  proto.dev = dev;
  pktgen_set_meta(&proto, cfg, st);
  std::memcpy(head_, static_cast<const void*>(&proto), Packet::kClearedBytes);
  return true;
}

}  // namespace pktpath
