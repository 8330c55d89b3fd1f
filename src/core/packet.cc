#include "core/packet.h"

namespace pktpath {

// mirrors skb_copy_bits: linear part first, then each fragment in order.
bool Packet::copy_bits(uint32_t off, void* dst, uint32_t n) const {
  if (off > len || n > len - off) return false;
  auto* out = static_cast<uint8_t*>(dst);
  uint32_t hl = headlen();
  if (off < hl) {
    uint32_t c = n < hl - off ? n : hl - off;
    std::memcpy(out, data() + off, c);
    out += c;
    n -= c;
    off = hl;
  }
  uint32_t base = hl;
  for (unsigned i = 0; i < nr_frags && n > 0; ++i) {
    const PacketFrag& f = frags[i];
    if (off < base + f.len) {
      uint32_t start = off - base;
      uint32_t c = n < f.len - start ? n : f.len - start;
      std::memcpy(out, f.data + start, c);
      out += c;
      n -= c;
      off += c;
    }
    base += f.len;
  }
  return n == 0;
}

}  // namespace pktpath
