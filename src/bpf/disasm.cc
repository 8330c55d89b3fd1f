#include "bpf/disasm.h"

#include <fmt/format.h>

namespace pktpath::bpf {

// Mirrors bpf_dump(option 3): "%d\n" then "%u %u %u %u\n".
std::string format_ddd(const Insns& prog) {
  std::string s = fmt::format("{}\n", prog.size());
  for (const Insn& in : prog) s += fmt::format("{} {} {} {}\n", in.code, in.jt, in.jf, in.k);
  return s;
}

// Mirrors bpf_dump(option 2): "{ 0x%x, %d, %d, 0x%08x },\n".
std::string format_dd(const Insns& prog) {
  std::string s;
  for (const Insn& in : prog) s += fmt::format("{{ {:#x}, {}, {}, 0x{:08x} }},\n", in.code, in.jt, in.jf, in.k);
  return s;
}

std::string format_tc(const Insns& prog) {
  std::string s = fmt::format("{}", prog.size());
  for (const Insn& in : prog) s += fmt::format(",{} {} {} {}", in.code, in.jt, in.jf, in.k);
  return s;
}

namespace {

// bpf_image prints k with %d: the 32 bits as a signed int.
int32_t sk(uint32_t k) { return static_cast<int32_t>(k); }

// libpcap's `offsets[]` (bpf_image.c, Linux builds): the ancillary loads it names.
const char* ancillary_name(uint32_t ad) {
  switch (ad) {
    case SKF_AD_PROTOCOL: return "proto";
    case SKF_AD_PKTTYPE: return "type";
    case SKF_AD_IFINDEX: return "ifidx";
    case SKF_AD_NLATTR: return "nla";
    case SKF_AD_NLATTR_NEST: return "nlan";
    case SKF_AD_MARK: return "mark";
    case SKF_AD_QUEUE: return "queue";
    case SKF_AD_HATYPE: return "hatype";
    case SKF_AD_RXHASH: return "rxhash";
    case SKF_AD_CPU: return "cpu";
    case SKF_AD_ALU_XOR_X: return "xor_x";
    case SKF_AD_VLAN_TAG: return "vlan_tci";
    case SKF_AD_VLAN_TAG_PRESENT: return "vlanp";
    case SKF_AD_PAY_OFFSET: return "poff";
    case SKF_AD_RANDOM: return "random";
    case SKF_AD_VLAN_TPID: return "vlan_tpid";
    default: return nullptr;
  }
}

// Mirrors bpf_print_abs_load_operand: "[name]" for a named ancillary offset, else "[%d]"
// (so SKF_NET_OFF + 14 prints as [-1048562]).
std::string abs_operand(uint32_t k) {
  if (in_ancillary_window(k))
    if (const char* n = ancillary_name(k - static_cast<uint32_t>(SKF_AD_OFF))) return fmt::format("[{}]", n);
  return fmt::format("[{}]", sk(k));
}

struct Image {
  const char* op;
  std::string operand;
};

// bpf_image's switch on the whole code: a code with any other bits set is "unimp".
Image image_of(const Insn& in, size_t pc) {
  const uint32_t k = in.k;
  const std::string dec = fmt::format("#{}", sk(k));
  const std::string hex = fmt::format("#0x{:x}", k);
  switch (in.code) {
    case BPF_RET | BPF_K: return {"ret", dec};
    case BPF_RET | BPF_A: return {"ret", ""};
    case BPF_LD | BPF_W | BPF_ABS: return {"ld", abs_operand(k)};
    case BPF_LD | BPF_H | BPF_ABS: return {"ldh", abs_operand(k)};
    case BPF_LD | BPF_B | BPF_ABS: return {"ldb", abs_operand(k)};
    case BPF_LD | BPF_W | BPF_LEN: return {"ld", "#pktlen"};
    case BPF_LD | BPF_W | BPF_IND: return {"ld", fmt::format("[x + {}]", sk(k))};
    case BPF_LD | BPF_H | BPF_IND: return {"ldh", fmt::format("[x + {}]", sk(k))};
    case BPF_LD | BPF_B | BPF_IND: return {"ldb", fmt::format("[x + {}]", sk(k))};
    case BPF_LD | BPF_IMM: return {"ld", hex};
    case BPF_LDX | BPF_IMM: return {"ldx", hex};
    case BPF_LDX | BPF_MSH | BPF_B: return {"ldxb", fmt::format("4*([{}]&0xf)", sk(k))};
    case BPF_LD | BPF_MEM: return {"ld", fmt::format("M[{}]", sk(k))};
    case BPF_LDX | BPF_MEM: return {"ldx", fmt::format("M[{}]", sk(k))};
    case BPF_ST: return {"st", fmt::format("M[{}]", sk(k))};
    case BPF_STX: return {"stx", fmt::format("M[{}]", sk(k))};
    // n + 1 + k in unsigned arithmetic, printed with %d.
    case BPF_JMP | BPF_JA: return {"ja", fmt::format("{}", sk(static_cast<uint32_t>(pc) + 1 + k))};
    case BPF_JMP | BPF_JGT | BPF_K: return {"jgt", hex};
    case BPF_JMP | BPF_JGE | BPF_K: return {"jge", hex};
    case BPF_JMP | BPF_JEQ | BPF_K: return {"jeq", hex};
    case BPF_JMP | BPF_JSET | BPF_K: return {"jset", hex};
    case BPF_JMP | BPF_JGT | BPF_X: return {"jgt", "x"};
    case BPF_JMP | BPF_JGE | BPF_X: return {"jge", "x"};
    case BPF_JMP | BPF_JEQ | BPF_X: return {"jeq", "x"};
    case BPF_JMP | BPF_JSET | BPF_X: return {"jset", "x"};
    case BPF_ALU | BPF_ADD | BPF_X: return {"add", "x"};
    case BPF_ALU | BPF_SUB | BPF_X: return {"sub", "x"};
    case BPF_ALU | BPF_MUL | BPF_X: return {"mul", "x"};
    case BPF_ALU | BPF_DIV | BPF_X: return {"div", "x"};
    case BPF_ALU | BPF_MOD | BPF_X: return {"mod", "x"};
    case BPF_ALU | BPF_AND | BPF_X: return {"and", "x"};
    case BPF_ALU | BPF_OR | BPF_X: return {"or", "x"};
    case BPF_ALU | BPF_XOR | BPF_X: return {"xor", "x"};
    case BPF_ALU | BPF_LSH | BPF_X: return {"lsh", "x"};
    case BPF_ALU | BPF_RSH | BPF_X: return {"rsh", "x"};
    // Arithmetic and shift immediates in decimal, bitwise ones in hex, as bpf_image.
    case BPF_ALU | BPF_ADD | BPF_K: return {"add", dec};
    case BPF_ALU | BPF_SUB | BPF_K: return {"sub", dec};
    case BPF_ALU | BPF_MUL | BPF_K: return {"mul", dec};
    case BPF_ALU | BPF_DIV | BPF_K: return {"div", dec};
    case BPF_ALU | BPF_MOD | BPF_K: return {"mod", dec};
    case BPF_ALU | BPF_AND | BPF_K: return {"and", hex};
    case BPF_ALU | BPF_OR | BPF_K: return {"or", hex};
    case BPF_ALU | BPF_XOR | BPF_K: return {"xor", hex};
    case BPF_ALU | BPF_LSH | BPF_K: return {"lsh", dec};
    case BPF_ALU | BPF_RSH | BPF_K: return {"rsh", dec};
    case BPF_ALU | BPF_NEG: return {"neg", ""};
    case BPF_MISC | BPF_TAX: return {"tax", ""};
    case BPF_MISC | BPF_TXA: return {"txa", ""};
    // Not in bpf_image either (ret x, ldx len, ...): printed as it does.
    default: return {"unimp", fmt::format("0x{:x}", in.code)};
  }
}

}  // namespace

// Mirrors bpf_image: "(%03d) %-8s %-16s jt %d\tjf %d" for conditional jumps, else
// "(%03d) %-8s %s" — so operand-less lines ("ret", "tax") keep the padding and a space.
std::string disassemble_insn(const Insn& in, size_t pc) {
  const Image im = image_of(in, pc);
  const int n = static_cast<int>(pc);
  if (bpf_class(in.code) == BPF_JMP && bpf_op(in.code) != BPF_JA)
    return fmt::format("({:03}) {:<8} {:<16} jt {}\tjf {}", n, im.op, im.operand, n + 1 + in.jt, n + 1 + in.jf);
  return fmt::format("({:03}) {:<8} {}", n, im.op, im.operand);
}

// Mirrors bpf_dump(option 1): bpf_image per instruction, each with puts' newline.
std::string disassemble(const Insns& prog) {
  std::string s;
  for (size_t i = 0; i < prog.size(); ++i) s += disassemble_insn(prog[i], i) + "\n";
  return s;
}

}  // namespace pktpath::bpf
