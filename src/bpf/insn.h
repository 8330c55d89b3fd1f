// Classic BPF instruction model: the exact layout of Linux `struct sock_filter`
// (include/uapi/linux/filter.h) and libpcap's `struct bpf_insn`, plus the opcode and
// ancillary-offset constants of include/uapi/linux/bpf_common.h and filter.h.
#pragma once

#include <cstdint>
#include <vector>

namespace pktpath::bpf {

// One instruction: u16 code, u8 jt, u8 jf, u32 k — 8 bytes, no padding (sock_filter).
struct Insn {
  uint16_t code = 0;
  uint8_t jt = 0;
  uint8_t jf = 0;
  uint32_t k = 0;
  friend bool operator==(const Insn&, const Insn&) = default;
};
static_assert(sizeof(Insn) == 8, "Insn must match struct sock_filter");

using Insns = std::vector<Insn>;

// Instruction classes.
inline constexpr uint16_t BPF_LD = 0x00;
inline constexpr uint16_t BPF_LDX = 0x01;
inline constexpr uint16_t BPF_ST = 0x02;
inline constexpr uint16_t BPF_STX = 0x03;
inline constexpr uint16_t BPF_ALU = 0x04;
inline constexpr uint16_t BPF_JMP = 0x05;
inline constexpr uint16_t BPF_RET = 0x06;
inline constexpr uint16_t BPF_MISC = 0x07;
// Load sizes.
inline constexpr uint16_t BPF_W = 0x00;
inline constexpr uint16_t BPF_H = 0x08;
inline constexpr uint16_t BPF_B = 0x10;
// Load modes.
inline constexpr uint16_t BPF_IMM = 0x00;
inline constexpr uint16_t BPF_ABS = 0x20;
inline constexpr uint16_t BPF_IND = 0x40;
inline constexpr uint16_t BPF_MEM = 0x60;
inline constexpr uint16_t BPF_LEN = 0x80;
inline constexpr uint16_t BPF_MSH = 0xa0;
// ALU and jump operations.
inline constexpr uint16_t BPF_ADD = 0x00;
inline constexpr uint16_t BPF_SUB = 0x10;
inline constexpr uint16_t BPF_MUL = 0x20;
inline constexpr uint16_t BPF_DIV = 0x30;
inline constexpr uint16_t BPF_OR = 0x40;
inline constexpr uint16_t BPF_AND = 0x50;
inline constexpr uint16_t BPF_LSH = 0x60;
inline constexpr uint16_t BPF_RSH = 0x70;
inline constexpr uint16_t BPF_NEG = 0x80;
inline constexpr uint16_t BPF_MOD = 0x90;
inline constexpr uint16_t BPF_XOR = 0xa0;
inline constexpr uint16_t BPF_JA = 0x00;
inline constexpr uint16_t BPF_JEQ = 0x10;
inline constexpr uint16_t BPF_JGT = 0x20;
inline constexpr uint16_t BPF_JGE = 0x30;
inline constexpr uint16_t BPF_JSET = 0x40;
// Operand source.
inline constexpr uint16_t BPF_K = 0x00;
inline constexpr uint16_t BPF_X = 0x08;
inline constexpr uint16_t BPF_A = 0x10;  // RET A
// MISC operations.
inline constexpr uint16_t BPF_TAX = 0x00;
inline constexpr uint16_t BPF_TXA = 0x80;

constexpr uint16_t bpf_class(uint16_t code) { return code & 0x07; }
constexpr uint16_t bpf_size(uint16_t code) { return code & 0x18; }
constexpr uint16_t bpf_mode(uint16_t code) { return code & 0xe0; }
constexpr uint16_t bpf_op(uint16_t code) { return code & 0xf0; }
constexpr uint16_t bpf_src(uint16_t code) { return code & 0x08; }
constexpr uint16_t bpf_rval(uint16_t code) { return code & 0x18; }
constexpr uint16_t bpf_miscop(uint16_t code) { return code & 0xf8; }

inline constexpr unsigned kMaxInsns = 4096;  // BPF_MAXINSNS
inline constexpr unsigned kMemWords = 16;    // BPF_MEMWORDS

// Negative load offsets (SKF_*): ancillary data, network- and link-layer relative.
inline constexpr int32_t SKF_AD_OFF = -0x1000;
inline constexpr int32_t SKF_NET_OFF = -0x100000;
inline constexpr int32_t SKF_LL_OFF = -0x200000;
inline constexpr uint32_t SKF_AD_PROTOCOL = 0;
inline constexpr uint32_t SKF_AD_PKTTYPE = 4;
inline constexpr uint32_t SKF_AD_IFINDEX = 8;
inline constexpr uint32_t SKF_AD_NLATTR = 12;
inline constexpr uint32_t SKF_AD_NLATTR_NEST = 16;
inline constexpr uint32_t SKF_AD_MARK = 20;
inline constexpr uint32_t SKF_AD_QUEUE = 24;
inline constexpr uint32_t SKF_AD_HATYPE = 28;
inline constexpr uint32_t SKF_AD_RXHASH = 32;
inline constexpr uint32_t SKF_AD_CPU = 36;
inline constexpr uint32_t SKF_AD_ALU_XOR_X = 40;
inline constexpr uint32_t SKF_AD_VLAN_TAG = 44;
inline constexpr uint32_t SKF_AD_VLAN_TAG_PRESENT = 48;
inline constexpr uint32_t SKF_AD_PAY_OFFSET = 52;
inline constexpr uint32_t SKF_AD_RANDOM = 56;
inline constexpr uint32_t SKF_AD_VLAN_TPID = 60;
inline constexpr uint32_t SKF_AD_MAX = 64;

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

}  // namespace pktpath::bpf
