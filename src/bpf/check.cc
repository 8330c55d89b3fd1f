#include "bpf/check.h"

#include <array>
#include <cstdint>
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


// --- The translation to eBPF (bpf_convert_filter) ------------------------------------------
//
// Counts are those of the x86-64 kernel: CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS (the inline
// packet-load path needs only k >= 0) and little-endian bitfields (no extra shift for
// pkt_type). Each count is the number of bpf_insn the function named in the comment writes.

// convert_bpf_ld_abs: a packet load, LD ABS/IND (and the byte load inside LDX MSH).
int ld_abs_expansion(uint16_t size, uint32_t k, bool indirect) {
  const int32_t offset = static_cast<int32_t>(k);
  int n = 0;
  if (!indirect && offset >= 0) {
    // Inline path: tmp = headlen; [tmp -= offset]; if tmp < size skip; load (via tmp when
    // the offset exceeds the 16-bit ldx offset: mov, add, ldx); [bswap for H/W]; ja past
    // the helper call.
    n += 1 + (offset != 0 ? 1 : 0) + 1 + (offset <= INT16_MAX ? 1 : 3) + (size != BPF_B ? 1 : 0) + 1;
  }
  // Helper call: arg1..arg3 = ctx, data, headlen; arg4 = k (ABS) or X [+ k] (IND); call;
  // if A >= 0 skip 2; A = 0; exit.
  n += 3 + (indirect ? 1 + (k != 0 ? 1 : 0) : 1) + 1 + 3;
  return n;
}

// convert_bpf_extensions (with convert_skb_access for the skb fields it shares).
int ancillary_expansion(uint32_t k) {
  switch (k - static_cast<uint32_t>(SKF_AD_OFF)) {
    case SKF_AD_PROTOCOL: return 2;   // ldx h; ntohs
    case SKF_AD_PKTTYPE: return 2;    // ldx b; and PKT_TYPE_MAX
    case SKF_AD_IFINDEX:
    case SKF_AD_HATYPE: return 4;     // ldx skb->dev; jne 0 +1; exit; ldx field
    case SKF_AD_MARK:
    case SKF_AD_RXHASH:
    case SKF_AD_QUEUE:
    case SKF_AD_VLAN_TAG: return 1;   // one ldx
    // ldx w vlan_all; jeq 0 +1; mov 1: 3, as 6.12's source and the running 6.18 kernel
    // (tests/bpf/ebpf_jump_test.cc). Linux 6.1 on little-endian emits 2 (ldx b; and 1);
    // the larger count is kept, so what this checker accepts loads on both.
    case SKF_AD_VLAN_TAG_PRESENT: return 3;
    case SKF_AD_VLAN_TPID: return 2;  // ldx h; ntohs
    case SKF_AD_PAY_OFFSET:
    case SKF_AD_NLATTR:
    case SKF_AD_NLATTR_NEST:
    case SKF_AD_CPU:
    case SKF_AD_RANDOM: return 4;     // arg1..arg3 = ctx, A, X; call
    case SKF_AD_ALU_XOR_X: return 1;  // xor A, X
    default: return 0;                // not an extension: the checker refuses it first
  }
}

// Does the classic instruction set bpf_convert_filter's seen_ld_abs (a packet load), which
// adds 4 instructions (caching data and headlen) to the prologue?
bool sets_seen_ld_abs(const Insn& in) {
  if (in.code == (BPF_LDX | BPF_B | BPF_MSH)) return true;
  if (bpf_class(in.code) != BPF_LD) return false;
  return bpf_mode(in.code) == BPF_IND || (bpf_mode(in.code) == BPF_ABS && !is_known_ancillary(in.k));
}

// The prologue of bpf_convert_filter: A = 0, X = 0, ctx register [+ 4 with seen_ld_abs].
int ebpf_prologue(std::span<const Insn> prog) {
  for (const Insn& in : prog)
    if (sets_seen_ld_abs(in)) return 7;
  return 3;
}

// One jump instruction of a classic jump's translation: its index inside the expansion
// and the classic target.
struct EbpfJump {
  int slot;
  size_t target;
};

// bpf_convert_filter's jump cases. A conditional jump on a K that is negative as s32 first
// moves K into a register (one more instruction, so the jump is the second); jf == 0 is one
// jump to jt; jt == 0 for JEQ/JGT/JGE is one inverted jump (JNE/JLE/JLT) to jf; anything
// else (JSET with jt == 0, both branches taken somewhere) is Jxx to jt then JA to jf.
int ebpf_jumps(const Insn& in, size_t pc, EbpfJump out[2]) {
  if (in.code == (BPF_JMP | BPF_JA)) {
    out[0] = {0, pc + 1 + in.k};
    return 1;
  }
  const int mov = bpf_src(in.code) == BPF_K && static_cast<int32_t>(in.k) < 0 ? 1 : 0;
  if (in.jf == 0) {
    out[0] = {mov, pc + 1 + in.jt};
    return 1;
  }
  if (in.jt == 0 && bpf_op(in.code) != BPF_JSET) {
    out[0] = {mov, pc + 1 + in.jf};
    return 1;
  }
  out[0] = {mov, pc + 1 + in.jt};
  out[1] = {mov + 1, pc + 1 + in.jf};
  return 2;
}

}  // namespace

bool opcode_allowed(uint16_t code) { return code < kAllowed.size() && kAllowed[code]; }

const char* acceptance_name(Acceptance a) { return a == Acceptance::Kernel ? "kernel" : "userland"; }

bool has_backward_jump(std::span<const Insn> prog) {
  for (const Insn& in : prog)
    if (in.code == (BPF_JMP | BPF_JA) && static_cast<int32_t>(in.k) < 0) return true;
  return false;
}

uint16_t scratch_read_unset(std::span<const Insn> prog) {
  const size_t n = prog.size();
  if (n == 0) return 0;
  // in[i]: the cells written on every path that reaches i so far (meaningful once reached).
  std::vector<uint16_t> in(n, 0);
  std::vector<uint8_t> reached(n, 0), queued(n, 0);
  std::vector<size_t> work{0};
  reached[0] = queued[0] = 1;
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    queued[i] = 0;
    const Insn& x = prog[i];
    const uint16_t cls = bpf_class(x.code);
    uint16_t out = in[i];
    if ((cls == BPF_ST || cls == BPF_STX) && x.k < kMemWords) out = static_cast<uint16_t>(out | (1u << x.k));
    const Successors next = successors(x, i);
    for (unsigned e = 0; e < next.n; ++e) {
      const size_t t = next.to[e];
      if (t >= n) continue;  // the checker keeps jumps inside
      const uint16_t met = reached[t] ? static_cast<uint16_t>(in[t] & out) : out;
      if (reached[t] && met == in[t]) continue;
      in[t] = met;
      reached[t] = 1;
      if (!queued[t]) queued[t] = 1, work.push_back(t);
    }
  }
  uint16_t unset = 0;
  for (size_t i = 0; i < n; ++i) {
    const Insn& x = prog[i];
    const uint16_t cls = bpf_class(x.code);
    if (reached[i] && (cls == BPF_LD || cls == BPF_LDX) && bpf_mode(x.code) == BPF_MEM && x.k < kMemWords &&
        !((in[i] >> x.k) & 1u))
      unset = static_cast<uint16_t>(unset | (1u << x.k));
  }
  return unset;
}

int ebpf_expansion(const Insn& in) {
  switch (bpf_class(in.code)) {
    case BPF_LD:
      if (bpf_mode(in.code) == BPF_ABS && is_known_ancillary(in.k)) return ancillary_expansion(in.k);
      if (bpf_mode(in.code) == BPF_ABS || bpf_mode(in.code) == BPF_IND)
        return ld_abs_expansion(bpf_size(in.code), in.k, bpf_mode(in.code) == BPF_IND);
      return 1;  // LD IMM, MEM, LEN: one mov or ldx
    case BPF_LDX:
      // LDX MSH: X = A; the byte load (convert_bpf_ld_abs, whose k is never an extension
      // here); and 0xf; lsh 2; tmp = X; X = A; A = tmp.
      if (in.code == (BPF_LDX | BPF_B | BPF_MSH)) return 1 + ld_abs_expansion(BPF_B, in.k, false) + 5;
      return 1;
    case BPF_ALU:
      // DIV/MOD by X: mov32 X, X; jne X, 0, +2; A = 0; exit; then the operation.
      if (in.code == (BPF_ALU | BPF_DIV | BPF_X) || in.code == (BPF_ALU | BPF_MOD | BPF_X)) return 5;
      return 1;
    case BPF_JMP: {
      EbpfJump j[2];
      const int n = ebpf_jumps(in, 0, j);
      return j[n - 1].slot + 1;
    }
    case BPF_RET:
      return bpf_rval(in.code) == BPF_K ? 2 : 1;  // [mov r0, K]; exit
    default:
      return 1;  // ST, STX, TAX, TXA
  }
}

// bpf_convert_filter runs its jump-emitting loop twice over one addrs[] array (the eBPF
// index of each classic instruction, prologue included) and refuses a jump whose offset
// addrs[target] - addrs[pc] - 1 - slot falls outside [S16_MIN, S16_MAX]. On the first run
// addrs[] is still zero past the instruction being emitted, so every forward jump measures
// -(its own eBPF index + 1): a jump placed past eBPF instruction 32767 is refused whatever
// its distance. The second run measures the real distance, which only an unconditional
// jump (32-bit k) can push past S16_MAX.
CheckResult check_ebpf_jumps(std::span<const Insn> prog) {
  const size_t n = prog.size();
  std::vector<int64_t> addr(n + 1);
  int64_t at = ebpf_prologue(prog);
  for (size_t pc = 0; pc < n; ++pc) {
    addr[pc] = at;
    at += ebpf_expansion(prog[pc]);
  }
  addr[n] = at;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t pc = 0; pc < n; ++pc) {
      if (bpf_class(prog[pc].code) != BPF_JMP) continue;
      EbpfJump j[2];
      const int count = ebpf_jumps(prog[pc], pc, j);
      for (int x = 0; x < count; ++x) {
        if (j[x].target >= n)  // BPF_EMIT_JMP's target check (the classic checks refuse it first)
          return reject(static_cast<int>(pc), "jump target leaves the program");
        const int64_t target_addr = pass == 0 && j[x].target > pc ? 0 : addr[j[x].target];
        const int64_t off = target_addr - addr[pc] - 1 - j[x].slot;
        if (off >= INT16_MIN && off <= INT16_MAX) continue;
        CheckResult r = reject(
            static_cast<int>(pc),
            pass == 0
                ? fmt::format("jump offset {} does not fit the 16 bits of an eBPF jump (the kernel's "
                              "bpf_convert_filter refuses it: its first pass measures forward jumps "
                              "from eBPF address 0, and this jump is eBPF instruction {})",
                              off, addr[pc] + j[x].slot)
                : fmt::format("jump offset {} does not fit the 16 bits of an eBPF jump (the kernel's "
                              "bpf_convert_filter refuses it)",
                              off));
        r.translation = true;
        return r;
      }
    }
  }
  return {};
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
  if (CheckResult r = check_scratch(prog); !r.ok) return r;
  return check_ebpf_jumps(prog);
}

}  // namespace pktpath::bpf
