// The reference engine: one `switch` over the raw sock_filter opcodes per instruction,
// in the manner of the kernel's old sk_run_filter. Plain on purpose — it is the oracle
// the threaded code and the JIT are tested against.
#include <cstring>
#include <vector>

#include "bpf/check.h"
#include "bpf/program.h"
#include "bpf/semantics.h"

namespace pktpath::bpf {

namespace {

// Mirrors sk_run_filter (pre-eBPF net/core/filter.c) with today's semantics: a failed
// packet read ends the program returning 0, division by X == 0 returns 0.
// kUserland: libpcap's bpf_filter as well — the program may be unchecked, jump backward
// and read scratch cells before writing them (they read 0); every backward jump charges
// `charge` against kUserlandBound; a constant division by 0, a constant shift of 32 or
// more and an unknown opcode end the run returning 0; scratch indexes wrap at 16.
template <bool kUserland>
uint32_t run_switch_impl(const Insn* pc, const PacketView& v, [[maybe_unused]] int64_t charge) {
  uint32_t A = 0, X = 0;
  uint32_t M[kMemWords];
  uint64_t r;
  [[maybe_unused]] int64_t budget = kUserlandBound;
  if constexpr (kUserland) std::memset(M, 0, sizeof M);
  for (;; ++pc) {
    const uint32_t K = pc->k;
    if constexpr (kUserland) {
      switch (pc->code) {
        case BPF_JMP | BPF_JA:
          if (static_cast<int32_t>(K) < 0) {
            budget -= charge;
            if (PP_UNLIKELY(budget < 0)) return 0;
          }
          pc += static_cast<int32_t>(K);
          continue;
        case BPF_ALU | BPF_DIV | BPF_K:
        case BPF_ALU | BPF_MOD | BPF_K:
          if (K == 0) return 0;
          break;
        case BPF_ALU | BPF_LSH | BPF_K:
        case BPF_ALU | BPF_RSH | BPF_K:
          if (K >= 32) return 0;
          break;
        case BPF_LD | BPF_MEM: A = M[K % kMemWords]; continue;
        case BPF_LDX | BPF_MEM: X = M[K % kMemWords]; continue;
        case BPF_ST: M[K % kMemWords] = A; continue;
        case BPF_STX: M[K % kMemWords] = X; continue;
        default: break;
      }
    }
    switch (pc->code) {
      case BPF_ALU | BPF_ADD | BPF_X: A += X; continue;
      case BPF_ALU | BPF_ADD | BPF_K: A += K; continue;
      case BPF_ALU | BPF_SUB | BPF_X: A -= X; continue;
      case BPF_ALU | BPF_SUB | BPF_K: A -= K; continue;
      case BPF_ALU | BPF_MUL | BPF_X: A *= X; continue;
      case BPF_ALU | BPF_MUL | BPF_K: A *= K; continue;
      case BPF_ALU | BPF_DIV | BPF_X:
        if (X == 0) return 0;
        A /= X;
        continue;
      case BPF_ALU | BPF_DIV | BPF_K: A /= K; continue;
      case BPF_ALU | BPF_MOD | BPF_X:
        if (X == 0) return 0;
        A %= X;
        continue;
      case BPF_ALU | BPF_MOD | BPF_K: A %= K; continue;
      case BPF_ALU | BPF_AND | BPF_X: A &= X; continue;
      case BPF_ALU | BPF_AND | BPF_K: A &= K; continue;
      case BPF_ALU | BPF_OR | BPF_X: A |= X; continue;
      case BPF_ALU | BPF_OR | BPF_K: A |= K; continue;
      case BPF_ALU | BPF_XOR | BPF_X: A ^= X; continue;
      case BPF_ALU | BPF_XOR | BPF_K: A ^= K; continue;
      // Shift by X uses the low five bits, as the x86 shift instructions the kernel's
      // interpreter and JIT compile to do.
      case BPF_ALU | BPF_LSH | BPF_X: A <<= (X & 31); continue;
      case BPF_ALU | BPF_LSH | BPF_K: A <<= K; continue;
      case BPF_ALU | BPF_RSH | BPF_X: A >>= (X & 31); continue;
      case BPF_ALU | BPF_RSH | BPF_K: A >>= K; continue;
      case BPF_ALU | BPF_NEG: A = 0u - A; continue;
      case BPF_JMP | BPF_JA: pc += K; continue;  // forward only here (checked)
      case BPF_JMP | BPF_JGT | BPF_K: pc += (A > K) ? pc->jt : pc->jf; continue;
      case BPF_JMP | BPF_JGE | BPF_K: pc += (A >= K) ? pc->jt : pc->jf; continue;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += (A == K) ? pc->jt : pc->jf; continue;
      case BPF_JMP | BPF_JSET | BPF_K: pc += (A & K) ? pc->jt : pc->jf; continue;
      case BPF_JMP | BPF_JGT | BPF_X: pc += (A > X) ? pc->jt : pc->jf; continue;
      case BPF_JMP | BPF_JGE | BPF_X: pc += (A >= X) ? pc->jt : pc->jf; continue;
      case BPF_JMP | BPF_JEQ | BPF_X: pc += (A == X) ? pc->jt : pc->jf; continue;
      case BPF_JMP | BPF_JSET | BPF_X: pc += (A & X) ? pc->jt : pc->jf; continue;
      case BPF_LD | BPF_W | BPF_ABS:
        if (in_ancillary_window(K)) {
          r = load_ancillary(v, K - static_cast<uint32_t>(SKF_AD_OFF), A, X);
          if (load_failed(r)) return A;
          A = static_cast<uint32_t>(r);
          continue;
        }
        r = load_fast<4>(v, K);
        if (load_failed(r)) return 0;
        A = static_cast<uint32_t>(r);
        continue;
      case BPF_LD | BPF_H | BPF_ABS:
        if (in_ancillary_window(K)) {
          r = load_ancillary(v, K - static_cast<uint32_t>(SKF_AD_OFF), A, X);
          if (load_failed(r)) return A;
          A = static_cast<uint32_t>(r);
          continue;
        }
        r = load_fast<2>(v, K);
        if (load_failed(r)) return 0;
        A = static_cast<uint32_t>(r);
        continue;
      case BPF_LD | BPF_B | BPF_ABS:
        if (in_ancillary_window(K)) {
          r = load_ancillary(v, K - static_cast<uint32_t>(SKF_AD_OFF), A, X);
          if (load_failed(r)) return A;
          A = static_cast<uint32_t>(r);
          continue;
        }
        r = load_fast<1>(v, K);
        if (load_failed(r)) return 0;
        A = static_cast<uint32_t>(r);
        continue;
      case BPF_LD | BPF_W | BPF_IND:
        r = load_fast<4>(v, X + K);
        if (load_failed(r)) return 0;
        A = static_cast<uint32_t>(r);
        continue;
      case BPF_LD | BPF_H | BPF_IND:
        r = load_fast<2>(v, X + K);
        if (load_failed(r)) return 0;
        A = static_cast<uint32_t>(r);
        continue;
      case BPF_LD | BPF_B | BPF_IND:
        r = load_fast<1>(v, X + K);
        if (load_failed(r)) return 0;
        A = static_cast<uint32_t>(r);
        continue;
      case BPF_LDX | BPF_B | BPF_MSH:
        r = load_fast<1>(v, K);
        if (load_failed(r)) return 0;
        X = (static_cast<uint32_t>(r) & 0xf) << 2;
        continue;
      case BPF_LD | BPF_W | BPF_LEN: A = v.wire_len; continue;
      case BPF_LDX | BPF_W | BPF_LEN: X = v.wire_len; continue;
      case BPF_LD | BPF_IMM: A = K; continue;
      case BPF_LDX | BPF_IMM: X = K; continue;
      case BPF_LD | BPF_MEM: A = M[K]; continue;
      case BPF_LDX | BPF_MEM: X = M[K]; continue;
      case BPF_MISC | BPF_TAX: X = A; continue;
      case BPF_MISC | BPF_TXA: A = X; continue;
      case BPF_RET | BPF_K: return K;
      case BPF_RET | BPF_A: return A;
      case BPF_ST: M[K] = A; continue;
      case BPF_STX: M[K] = X; continue;
      default: return 0;  // unreachable for checked programs
    }
  }
}

uint32_t switch_entry(const void* image, const PacketView& v) {
  return run_switch(static_cast<const Insn*>(image), v);
}

// A bounded image: the program's length (the charge per backward jump) ahead of the
// instructions.
struct BoundedImage {
  int64_t charge;
  Insns insns;
};

uint32_t bounded_entry(const void* image, const PacketView& v) {
  const auto* b = static_cast<const BoundedImage*>(image);
  return run_switch_impl<true>(b->insns.data(), v, b->charge);
}

}  // namespace

uint32_t run_switch(const Insn* prog, const PacketView& v) { return run_switch_impl<false>(prog, v, 0); }

uint32_t run_userland(const Insn* prog, const PacketView& v) {
  return run_switch_impl<true>(prog, v, kMaxInsns);
}

uint32_t run_userland(std::span<const Insn> prog, const PacketView& v) {
  return run_switch_impl<true>(prog.data(), v, static_cast<int64_t>(prog.size()));
}

bool prepare_switch(std::span<const Insn> prog, PreparedImage* out, std::string*) {
  auto copy = std::make_shared<const Insns>(prog.begin(), prog.end());
  out->fn = switch_entry;
  out->image = copy->data();
  out->owner = std::move(copy);
  return true;
}

bool prepare_switch_bounded(std::span<const Insn> prog, PreparedImage* out, std::string*) {
  auto b = std::make_shared<const BoundedImage>(
      BoundedImage{static_cast<int64_t>(prog.size()), Insns(prog.begin(), prog.end())});
  out->fn = bounded_entry;
  out->image = b.get();
  out->owner = std::move(b);
  return true;
}

}  // namespace pktpath::bpf
