#include "bpf/disasm.h"

#include <fmt/format.h>

namespace pktpath::bpf {

std::string format_ddd(const Insns& prog) {
  std::string s = fmt::format("{}\n", prog.size());
  for (const Insn& in : prog) s += fmt::format("{} {} {} {}\n", in.code, in.jt, in.jf, in.k);
  return s;
}

std::string format_tc(const Insns& prog) {
  std::string s = fmt::format("{}", prog.size());
  for (const Insn& in : prog) s += fmt::format(",{} {} {} {}", in.code, in.jt, in.jf, in.k);
  return s;
}

namespace {

const char* ancillary_name(uint32_t ad) {
  switch (ad) {
    case SKF_AD_PROTOCOL: return "#proto";
    case SKF_AD_PKTTYPE: return "#type";
    case SKF_AD_IFINDEX: return "#ifidx";
    case SKF_AD_NLATTR: return "#nla";
    case SKF_AD_NLATTR_NEST: return "#nlan";
    case SKF_AD_MARK: return "#mark";
    case SKF_AD_QUEUE: return "#queue";
    case SKF_AD_HATYPE: return "#hatype";
    case SKF_AD_RXHASH: return "#rxhash";
    case SKF_AD_CPU: return "#cpu";
    case SKF_AD_ALU_XOR_X: return "#xor_x";
    case SKF_AD_VLAN_TAG: return "#vlan_tci";
    case SKF_AD_VLAN_TAG_PRESENT: return "#vlan_avail";
    case SKF_AD_PAY_OFFSET: return "#poff";
    case SKF_AD_RANDOM: return "#rand";
    case SKF_AD_VLAN_TPID: return "#vlan_tpid";
    default: return "#?";
  }
}

const char* size_suffix(uint16_t code) {
  switch (bpf_size(code)) {
    case BPF_H: return "h";
    case BPF_B: return "b";
    default: return "";
  }
}

// An absolute offset: decimal when >= 0, symbolic for the negative SKF windows.
std::string abs_operand(uint32_t k) {
  int32_t s = static_cast<int32_t>(k);
  if (s >= 0) return fmt::format("[{}]", k);
  if (s >= SKF_AD_OFF) return ancillary_name(k - static_cast<uint32_t>(SKF_AD_OFF));
  if (s >= SKF_NET_OFF) return fmt::format("[net+{}]", s - SKF_NET_OFF);
  if (s >= SKF_LL_OFF) return fmt::format("[ll+{}]", s - SKF_LL_OFF);
  return fmt::format("[{}]", s);
}

const char* alu_name(uint16_t op) {
  switch (op) {
    case BPF_ADD: return "add";
    case BPF_SUB: return "sub";
    case BPF_MUL: return "mul";
    case BPF_DIV: return "div";
    case BPF_MOD: return "mod";
    case BPF_AND: return "and";
    case BPF_OR: return "or";
    case BPF_XOR: return "xor";
    case BPF_LSH: return "lsh";
    case BPF_RSH: return "rsh";
    case BPF_NEG: return "neg";
    default: return nullptr;
  }
}

const char* jmp_name(uint16_t op) {
  switch (op) {
    case BPF_JA: return "ja";
    case BPF_JEQ: return "jeq";
    case BPF_JGT: return "jgt";
    case BPF_JGE: return "jge";
    case BPF_JSET: return "jset";
    default: return nullptr;
  }
}

}  // namespace

std::string disassemble_insn(const Insn& in, size_t pc) {
  std::string op, arg;
  const uint16_t c = in.code;
  switch (bpf_class(c)) {
    case BPF_LD:
      switch (bpf_mode(c)) {
        case BPF_ABS: op = fmt::format("ld{}", size_suffix(c)); arg = abs_operand(in.k); break;
        case BPF_IND: op = fmt::format("ld{}", size_suffix(c)); arg = fmt::format("[x + {}]", in.k); break;
        case BPF_LEN: op = "ld"; arg = "#pktlen"; break;
        case BPF_IMM: op = "ld"; arg = fmt::format("#{:#x}", in.k); break;
        case BPF_MEM: op = "ld"; arg = fmt::format("M[{}]", in.k); break;
      }
      break;
    case BPF_LDX:
      switch (bpf_mode(c)) {
        case BPF_MSH: op = "ldxb"; arg = fmt::format("4*({}&0xf)", abs_operand(in.k)); break;
        case BPF_LEN: op = "ldx"; arg = "#pktlen"; break;
        case BPF_IMM: op = "ldx"; arg = fmt::format("#{:#x}", in.k); break;
        case BPF_MEM: op = "ldx"; arg = fmt::format("M[{}]", in.k); break;
        case BPF_ABS: op = "ldx"; arg = fmt::format("[{}]", in.k); break;
      }
      break;
    case BPF_ST: op = "st"; arg = fmt::format("M[{}]", in.k); break;
    case BPF_STX: op = "stx"; arg = fmt::format("M[{}]", in.k); break;
    case BPF_ALU:
      if (const char* n = alu_name(bpf_op(c))) {
        op = n;
        if (bpf_op(c) != BPF_NEG) arg = bpf_src(c) == BPF_X ? "x" : fmt::format("#{:#x}", in.k);
      }
      break;
    case BPF_JMP:
      if (const char* n = jmp_name(bpf_op(c))) {
        op = n;
        if (bpf_op(c) == BPF_JA) {
          arg = fmt::format("{}", pc + 1 + in.k);
        } else {
          std::string cmp = bpf_src(c) == BPF_X ? "x" : fmt::format("#{:#x}", in.k);
          arg = fmt::format("{:<16} jt {}\tjf {}", cmp, pc + 1 + in.jt, pc + 1 + in.jf);
        }
      }
      break;
    case BPF_RET:
      op = "ret";
      arg = bpf_rval(c) == BPF_A ? "a" : bpf_rval(c) == BPF_X ? "x" : fmt::format("#{}", in.k);
      break;
    case BPF_MISC:
      op = bpf_miscop(c) == BPF_TXA ? "txa" : bpf_miscop(c) == BPF_TAX ? "tax" : "";
      break;
  }
  if (op.empty()) return fmt::format("({:03}) unknown  code={:#06x} jt={} jf={} k={:#x}", pc, c, in.jt, in.jf, in.k);
  if (arg.empty()) return fmt::format("({:03}) {}", pc, op);
  return fmt::format("({:03}) {:<8} {}", pc, op, arg);
}

std::string disassemble(const Insns& prog) {
  std::string s;
  for (size_t i = 0; i < prog.size(); ++i) s += disassemble_insn(prog[i], i) + "\n";
  return s;
}

}  // namespace pktpath::bpf
