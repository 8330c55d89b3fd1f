// The load semantics every engine shares, as plain functions so that interpreters and a
// JIT can call the same code: packet reads at offsets >= 0 (head and fragments), reads at
// the SKF_NET_OFF / SKF_LL_OFF negative offsets (head only), and ancillary loads.
#pragma once

#include <cstdint>

#include "bpf/insn.h"
#include "bpf/packet_view.h"
#include "base/compiler.h"

namespace pktpath::bpf {

// Results are returned by value (a u32 in the low half) so that callers keep A and X in
// registers; kLoadFail in the high half says the program must end.
inline constexpr uint64_t kLoadFail = uint64_t{1} << 32;
inline bool load_failed(uint64_t r) { return (r >> 32) != 0; }

// Reads `size` (1, 2 or 4) big-endian bytes at signed offset `off`. kLoadFail: the read
// is outside the packet and the program must end returning 0.
// Mirrors bpf_skb_load_helper_{8,16,32} plus bpf_internal_load_pointer_neg_helper.
uint64_t load_packet(const PacketView& v, int32_t off, uint32_t size);

// Whether a read of Size bytes at `off` lies inside a head of `headlen` bytes, and the
// big-endian value it reads there.
template <uint32_t Size>
PP_ALWAYS_INLINE bool in_head(uint32_t headlen, uint32_t off) {
  return uint64_t{off} + Size <= headlen;  // off < headlen && headlen - off >= Size, one compare
}
template <uint32_t Size>
PP_ALWAYS_INLINE uint32_t read_be(const uint8_t* p) {
  if constexpr (Size == 4)
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  else if constexpr (Size == 2)
    return (uint32_t{p[0]} << 8) | p[1];
  else
    return p[0];
}

// Fast path for a read fully inside the head; everything else goes to load_packet.
template <uint32_t Size>
PP_ALWAYS_INLINE uint64_t load_fast(const PacketView& v, uint32_t off) {
  if (PP_LIKELY(in_head<Size>(v.headlen, off))) return read_be<Size>(v.data + off);
  return load_packet(v, static_cast<int32_t>(off), Size);
}

// Ancillary load SKF_AD_OFF + ad (ad a known SKF_AD_* value) with registers a, x:
// the new A, or kLoadFail when the program ends now returning the current A — the
// kernel's translation exits when skb->dev is NULL for IFINDEX and HATYPE.
// Mirrors convert_bpf_extensions.
uint64_t load_ancillary(const PacketView& v, uint32_t ad, uint32_t a, uint32_t x);

// The individual helpers (exposed for tests and a JIT).
uint32_t ancillary_pay_offset(const PacketView& v);                    // skb_get_poff
uint32_t ancillary_nlattr(const PacketView& v, uint32_t a, uint32_t x);       // bpf_skb_get_nlattr
uint32_t ancillary_nlattr_nest(const PacketView& v, uint32_t a, uint32_t x);  // ..._nest
uint32_t ancillary_random();  // bpf_user_rnd_u32: per-thread pseudo-random

}  // namespace pktpath::bpf
