// A prebuilt frame for runs whose headers never change: every packet is a copy of it
// with four fields written over (IP id, IP checksum, sequence number, timestamp). The
// bytes are exactly fill_packet_ipv4's; building them once takes the header writing off
// the per-packet path (document 000's loop is mostly this).
#pragma once

#include <cstdint>

#include "core/cpu.h"
#include "core/packet_pool.h"
#include "tools/pktgen_packet.h"

namespace pktpath {

// True when mod_cur_headers leaves every current value as it is after its first call:
// no MAC counts, no address, port or size ranges, and a fixed queue map.
bool pktgen_headers_fixed(const PktgenConfig& cfg);

class PktgenTemplate {
 public:
  static constexpr uint32_t kBytes = 64;  // copied whole: two 32-byte moves

  // Builds the frame for the current values of `st`. false when a template cannot stand
  // for this configuration (varying headers, UDP checksum over the payload, a frame
  // longer than kBytes, or pool buffers too small for the kBytes copy): use
  // pktgen_fill_packet_ipv4 then.
  // `dev` is what the packets' dev field is set to.
  bool build(const PktgenConfig& cfg, const PktgenState& st, const PacketPool& pool, NetDevice* dev);

  // fill_packet_ipv4 from the template: same bytes and metadata, st.ip_id advanced.
  // nullptr when the pool is exhausted. `cpu` must allocate from the pool given to build.
  PP_ALWAYS_INLINE Packet* fill(Cpu& cpu, const PktgenConfig& cfg, PktgenState& st,
                                uint64_t realtime_ns) const {
    Packet* p = cpu.alloc_stamped(head_, len_);
    if (!p) return nullptr;
    uint8_t* eth = p->data();
    std::memcpy(eth, bytes_, kBytes);  // beyond len_ only into the buffer's tailroom
    const uint16_t id = st.ip_id++;
    pktgen_put16(eth + kIdOff, id);
    // sum16_ + id < 2^17: one fold brings it to 16 bits.
    const uint32_t sum = sum16_ + id;
    pktgen_put16(eth + kCsumOff, static_cast<uint16_t>(~((sum & 0xffff) + (sum >> 16))));
    pktgen_put32(eth + kSeqOff, st.seq_num);
    if (timestamps_) pktgen_put_timestamp(eth + kSeqOff + 4, cfg, realtime_ns);
    return p;
  }

 private:
  static constexpr uint32_t kIdOff = 14 + 4;
  static constexpr uint32_t kCsumOff = 14 + 10;
  static constexpr uint32_t kSeqOff = kPktgenHeadersLen + 4;

  alignas(32) uint8_t bytes_[kBytes] = {};
  // The packets' cleared block: length, protocol, queue, priority, device (pktgen_set_meta).
  alignas(32) uint8_t head_[Packet::kClearedBytes] = {};
  uint32_t sum16_ = 0;  // the IP header sum without the id, folded to 16 bits
  uint32_t len_ = 0;
  bool timestamps_ = false;
};

}  // namespace pktpath
