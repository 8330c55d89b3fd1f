// Classic BPF instruction model: the exact layout of Linux `struct sock_filter`
// (include/uapi/linux/filter.h) and libpcap's `struct bpf_insn`, plus the opcode and
// ancillary-offset constants of include/uapi/linux/bpf_common.h and filter.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <linux/filter.h>

namespace pktpath::bpf {

// One instruction: u16 code, u8 jt, u8 jf, u32 k — 8 bytes, no padding (sock_filter).
struct Insn {  // == struct sock_filter
  uint16_t code = 0;
  uint8_t jt = 0;
  uint8_t jf = 0;
  uint32_t k = 0;
  friend bool operator==(const Insn&, const Insn&) = default;
};
static_assert(sizeof(Insn) == sizeof(sock_filter) && offsetof(Insn, k) == offsetof(sock_filter, k) &&
                  offsetof(Insn, jt) == offsetof(sock_filter, jt) && offsetof(Insn, jf) == offsetof(sock_filter, jf),
              "Insn must match struct sock_filter");

using Insns = std::vector<Insn>;

// The opcode (BPF_LD, BPF_ABS, BPF_JEQ, ...) and offset (SKF_AD_*, SKF_NET_OFF,
// SKF_LL_OFF) constants are the kernel UAPI's own macros; libpcap's <pcap/bpf.h> defines
// the same opcode values, so both headers may be included together.

constexpr uint16_t bpf_class(uint16_t code) { return code & 0x07; }
constexpr uint16_t bpf_size(uint16_t code) { return code & 0x18; }
constexpr uint16_t bpf_mode(uint16_t code) { return code & 0xe0; }
constexpr uint16_t bpf_op(uint16_t code) { return code & 0xf0; }
constexpr uint16_t bpf_src(uint16_t code) { return code & 0x08; }
constexpr uint16_t bpf_rval(uint16_t code) { return code & 0x18; }
constexpr uint16_t bpf_miscop(uint16_t code) { return code & 0xf8; }

inline constexpr unsigned kMaxInsns = 4096;  // BPF_MAXINSNS
inline constexpr unsigned kMemWords = 16;    // BPF_MEMWORDS

// k of an `LD ABS` that names ancillary field `ad` (SKF_AD_OFF + ad, as u32).
constexpr uint32_t ancillary_k(uint32_t ad) { return static_cast<uint32_t>(SKF_AD_OFF) + ad; }
// True when k is in the ancillary window [SKF_AD_OFF, 0) — known or not.
constexpr bool in_ancillary_window(uint32_t k) { return k >= static_cast<uint32_t>(SKF_AD_OFF); }
// True when k names an extension the kernel knows (bpf_anc_helper).
constexpr bool is_known_ancillary(uint32_t k) {
  if (!in_ancillary_window(k)) return false;
  uint32_t ad = k - static_cast<uint32_t>(SKF_AD_OFF);
  return ad < SKF_AD_MAX && ad % 4 == 0;
}
// An `LD ABS` whose k selects an ancillary load rather than packet bytes.
constexpr bool is_ancillary_load(const Insn& i) {
  return bpf_class(i.code) == BPF_LD && bpf_mode(i.code) == BPF_ABS && is_known_ancillary(i.k);
}

// Where control can go after instruction `in` at index i of a checked program: to[0..n).
// None after a RET; a JA's target (backward too, in a userland program); a conditional
// jump's two targets (possibly one place); otherwise i + 1.
struct Successors {
  size_t to[2] = {0, 0};
  unsigned n = 0;
};
constexpr Successors successors(const Insn& in, size_t i) {
  const uint16_t cls = bpf_class(in.code);
  if (cls == BPF_RET) return {};
  if (cls != BPF_JMP) return {{i + 1, 0}, 1};
  if (bpf_op(in.code) == BPF_JA)
    return {{static_cast<size_t>(static_cast<int64_t>(i) + 1 + static_cast<int32_t>(in.k)), 0}, 1};
  return {{i + 1 + in.jt, i + 1 + in.jf}, 2};
}

}  // namespace pktpath::bpf
