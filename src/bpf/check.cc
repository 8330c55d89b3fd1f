#include "bpf/check.h"

#include <array>
#include <vector>

#include <fmt/format.h>

namespace pktpath::bpf {

namespace {

constexpr std::array<bool, 256> make_allowed() {
  std::array<bool, 256> t{};
  for (uint16_t op : {BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_MOD, BPF_AND, BPF_OR, BPF_XOR,
                      BPF_LSH, BPF_RSH}) {
    t[BPF_ALU | op | BPF_K] = true;
    t[BPF_ALU | op | BPF_X] = true;
  }
  t[BPF_ALU | BPF_NEG] = true;
  for (uint16_t sz : {BPF_W, BPF_H, BPF_B}) {
    t[BPF_LD | sz | BPF_ABS] = true;
    t[BPF_LD | sz | BPF_IND] = true;
  }
  t[BPF_LD | BPF_W | BPF_LEN] = true;
  t[BPF_LD | BPF_IMM] = true;
  t[BPF_LD | BPF_MEM] = true;
  t[BPF_LDX | BPF_W | BPF_LEN] = true;
  t[BPF_LDX | BPF_B | BPF_MSH] = true;
  t[BPF_LDX | BPF_IMM] = true;
  t[BPF_LDX | BPF_MEM] = true;
  t[BPF_ST] = true;
  t[BPF_STX] = true;
  t[BPF_MISC | BPF_TAX] = true;
  t[BPF_MISC | BPF_TXA] = true;
  t[BPF_RET | BPF_K] = true;
  t[BPF_RET | BPF_A] = true;
  t[BPF_JMP | BPF_JA] = true;
  for (uint16_t op : {BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET}) {
    t[BPF_JMP | op | BPF_K] = true;
    t[BPF_JMP | op | BPF_X] = true;
  }
  return t;
}
constexpr std::array<bool, 256> kAllowed = make_allowed();

CheckResult reject(int index, std::string why) {
  CheckResult r;
  r.ok = false;
  r.index = index;
  r.reason = index >= 0 ? fmt::format("insn {}: {}", index, why) : why;
  return r;
}

bool is_cond_jump(uint16_t code) {
  return bpf_class(code) == BPF_JMP && bpf_op(code) != BPF_JA;
}

// Mirrors check_load_and_stores: a forward data-flow pass; each cell of M[] must be
// written on every path before it is read. Jumps are forward only, so one pass suffices.
CheckResult check_scratch(std::span<const Insn> prog) {
  const size_t n = prog.size();
  std::vector<uint16_t> valid_at(n, 0xffff);  // AND over the jumps into each insn
  uint16_t valid = 0;
  for (size_t pc = 0; pc < n; ++pc) {
    const Insn& in = prog[pc];
    valid &= valid_at[pc];
    switch (in.code) {
      case BPF_ST:
      case BPF_STX:
        valid |= static_cast<uint16_t>(1u << in.k);
        break;
      case BPF_LD | BPF_MEM:
      case BPF_LDX | BPF_MEM:
        if (!(valid & (1u << in.k)))
          return reject(static_cast<int>(pc),
                        fmt::format("M[{}] may be read before it is written", in.k));
        break;
      case BPF_JMP | BPF_JA:
        valid_at[pc + 1 + in.k] &= valid;
        valid = 0xffff;  // what follows is reached only by jumps
        break;
      default:
        if (is_cond_jump(in.code)) {
          valid_at[pc + 1 + in.jt] &= valid;
          valid_at[pc + 1 + in.jf] &= valid;
          valid = 0xffff;
        }
        break;
    }
  }
  return {};
}

}  // namespace

bool opcode_allowed(uint16_t code) { return code < kAllowed.size() && kAllowed[code]; }

const char* acceptance_name(Acceptance a) { return a == Acceptance::Kernel ? "kernel" : "userland"; }

bool has_backward_jump(std::span<const Insn> prog) {
  for (const Insn& in : prog)
    if (in.code == (BPF_JMP | BPF_JA) && static_cast<int32_t>(in.k) < 0) return true;
  return false;
}

CheckResult check_program(std::span<const Insn> prog, Acceptance mode) {
  const size_t n = prog.size();
  if (n == 0) return reject(-1, "empty program (needs 1..4096 instructions)");
  if (n > kMaxInsns)
    return reject(-1, fmt::format("too many instructions: {} (BPF_MAXINSNS is {})", n, kMaxInsns));
  for (size_t pc = 0; pc < n; ++pc) {
    const Insn& in = prog[pc];
    const int i = static_cast<int>(pc);
    if (!opcode_allowed(in.code)) return reject(i, fmt::format("opcode {:#x} not allowed", in.code));
    switch (in.code) {
      case BPF_ALU | BPF_DIV | BPF_K:
      case BPF_ALU | BPF_MOD | BPF_K:
        if (in.k == 0) return reject(i, "division or modulo by constant 0");
        break;
      case BPF_ALU | BPF_LSH | BPF_K:
      case BPF_ALU | BPF_RSH | BPF_K:
        if (in.k >= 32) return reject(i, fmt::format("shift by constant {} >= 32", in.k));
        break;
      case BPF_LD | BPF_MEM:
      case BPF_LDX | BPF_MEM:
      case BPF_ST:
      case BPF_STX:
        if (in.k >= kMemWords)
          return reject(i, fmt::format("scratch index {} out of range (M[0..15])", in.k));
        break;
      case BPF_JMP | BPF_JA:
        if (mode == Acceptance::Userland) {
          // pcap_validate_filter: the target, in 32-bit unsigned arithmetic, lies inside
          // the program (either direction); `ja -1` (a jump to itself) is refused.
          const uint32_t target = static_cast<uint32_t>(pc + 1) + in.k;
          if (target >= n)
            return reject(i, fmt::format("jump offset {} leaves the program", static_cast<int32_t>(in.k)));
          if (in.k == 0xffffffffu) return reject(i, "jump to itself");
        } else if (in.k >= n - pc - 1) {
          return reject(i, fmt::format("jump offset {} leaves the program{}", in.k,
                                       static_cast<int32_t>(in.k) < 0
                                           ? " (a backward jump: only userland mode runs it)"
                                           : ""));
        }
        break;
      case BPF_LD | BPF_W | BPF_ABS:
      case BPF_LD | BPF_H | BPF_ABS:
      case BPF_LD | BPF_B | BPF_ABS:
        if (in_ancillary_window(in.k) && !is_known_ancillary(in.k))
          return reject(i, fmt::format("unknown ancillary offset SKF_AD_OFF{:+d}",
                                       static_cast<int32_t>(in.k) - SKF_AD_OFF));
        break;
      default:
        if (is_cond_jump(in.code) && (pc + in.jt + 1 >= n || pc + in.jf + 1 >= n))
          return reject(i, fmt::format("jump target jt={} jf={} leaves the program", in.jt, in.jf));
        break;
    }
  }
  uint16_t last = prog[n - 1].code;
  if (last != (BPF_RET | BPF_K) && last != (BPF_RET | BPF_A))
    return reject(static_cast<int>(n - 1), "last instruction is not a RET");
  if (mode == Acceptance::Userland) return {};
  return check_scratch(prog);
}

}  // namespace pktpath::bpf
