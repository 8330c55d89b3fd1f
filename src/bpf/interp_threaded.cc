// The threaded-code engine (document 003): at load, each sock_filter instruction is
// decoded once into a ThreadedInsn holding its handler's address and pre-resolved
// operands (jump distances already +1, ancillary field numbers, scratch indexes), so
// running an instruction costs one indirect jump to the next handler — no opcode decode,
// no switch range check and no loop back-edge (Eric Dumazet's "one branch less").
#include <cstring>
#include <vector>

#include "bpf/check.h"
#include "bpf/program.h"
#include "bpf/semantics.h"

namespace pktpath::bpf {

namespace {

// One decoded instruction: 16 bytes, four per cache line.
struct ThreadedInsn {
  const void* op;  // handler label address
  uint32_t k;      // operand (constant, offset, scratch index or ancillary field)
  uint16_t jt;     // instructions to advance when true (jt + 1); JA: k + 1
  uint16_t jf;     // instructions to advance when false (jf + 1)
};
static_assert(sizeof(ThreadedInsn) == 16);

// Handler ids; the order matches the label table inside run_threaded.
enum Op : uint8_t {
  kAddX, kAddK, kSubX, kSubK, kMulX, kMulK, kDivX, kDivK, kModX, kModK, kAndX, kAndK,
  kOrX, kOrK, kXorX, kXorK, kLshX, kLshK, kRshX, kRshK, kNeg,
  kJa, kJgtK, kJgeK, kJeqK, kJsetK, kJgtX, kJgeX, kJeqX, kJsetX,
  kLdAbsW, kLdAbsH, kLdAbsB, kLdAnc, kLdIndW, kLdIndH, kLdIndB, kLdxMsh,
  kLdLen, kLdxLen, kLdImm, kLdxImm, kLdMem, kLdxMem, kTax, kTxa, kRetK, kRetA, kSt, kStx,
  // Bounded (userland) programs only: a backward `ja` (jt: distance back, jf: the charge)
  // and the prefix slot that zeroes scratch memory.
  kJaBack, kZeroMem,
  // Fused pairs: an `LD ABS` followed by a conditional jump on K. The pair's first slot
  // does both and jumps with the second slot's operands; the second slot stays intact
  // for jumps that land on it. Saves one dispatch per pair — the common shape of
  // libpcap's code (ldh [12]; jeq #0x800 ...).
  kLdWJeq, kLdWJgt, kLdWJge, kLdWJset, kLdHJeq, kLdHJgt, kLdHJge, kLdHJset,
  kLdBJeq, kLdBJgt, kLdBJge, kLdBJset,
  // `LD ABS; AND #mask; Jcond K` (libpcap's net/mask tests) and `LD IND; Jcond K`
  // (port tests after `ldxb 4*([14]&0xf)`), in the same W, H, B x JEQ, JGT, JGE, JSET grid.
  kLdWAndJeq, kLdWAndJgt, kLdWAndJge, kLdWAndJset, kLdHAndJeq, kLdHAndJgt, kLdHAndJge, kLdHAndJset,
  kLdBAndJeq, kLdBAndJgt, kLdBAndJge, kLdBAndJset,
  kIndWJeq, kIndWJgt, kIndWJge, kIndWJset, kIndHJeq, kIndHJgt, kIndHJge, kIndHJset,
  kIndBJeq, kIndBJgt, kIndBJge, kIndBJset,
  kOpCount
};

// Runs a decoded program. Called once with ip == nullptr to publish the label table
// (label addresses exist only inside this function).
uint32_t run_threaded(const ThreadedInsn* ip, const PacketView* vp, const void* const** table) {
  static const void* const kLabels[kOpCount] = {
      &&add_x, &&add_k, &&sub_x, &&sub_k, &&mul_x, &&mul_k, &&div_x, &&div_k, &&mod_x,
      &&mod_k, &&and_x, &&and_k, &&or_x, &&or_k, &&xor_x, &&xor_k, &&lsh_x, &&lsh_k,
      &&rsh_x, &&rsh_k, &&neg, &&ja, &&jgt_k, &&jge_k, &&jeq_k, &&jset_k, &&jgt_x,
      &&jge_x, &&jeq_x, &&jset_x, &&ld_abs_w, &&ld_abs_h, &&ld_abs_b, &&ld_anc,
      &&ld_ind_w, &&ld_ind_h, &&ld_ind_b, &&ldx_msh, &&ld_len, &&ldx_len, &&ld_imm,
      &&ldx_imm, &&ld_mem, &&ldx_mem, &&tax, &&txa, &&ret_k, &&ret_a, &&st, &&stx,
      &&ja_back, &&zero_mem,
      &&ldw_jeq, &&ldw_jgt, &&ldw_jge, &&ldw_jset, &&ldh_jeq, &&ldh_jgt, &&ldh_jge, &&ldh_jset,
      &&ldb_jeq, &&ldb_jgt, &&ldb_jge, &&ldb_jset,
      &&ldw_and_jeq, &&ldw_and_jgt, &&ldw_and_jge, &&ldw_and_jset, &&ldh_and_jeq, &&ldh_and_jgt,
      &&ldh_and_jge, &&ldh_and_jset, &&ldb_and_jeq, &&ldb_and_jgt, &&ldb_and_jge, &&ldb_and_jset,
      &&indw_jeq, &&indw_jgt, &&indw_jge, &&indw_jset, &&indh_jeq, &&indh_jgt, &&indh_jge,
      &&indh_jset, &&indb_jeq, &&indb_jgt, &&indb_jge, &&indb_jset};
  if (PP_UNLIKELY(ip == nullptr)) {
    *table = kLabels;
    return 0;
  }
  const PacketView& v = *vp;
  uint32_t A = 0, X = 0;
  uint64_t r;
  uint32_t M[kMemWords];
  int64_t budget = kUserlandBound;  // read only by ja_back

#define NEXT \
  do {       \
    ++ip;    \
    goto* ip->op; \
  } while (0)
#define JUMP(cond) \
  do {             \
    ip += (cond) ? ip->jt : ip->jf; \
    goto* ip->op;  \
  } while (0)

  goto* ip->op;

add_x: A += X; NEXT;
add_k: A += ip->k; NEXT;
sub_x: A -= X; NEXT;
sub_k: A -= ip->k; NEXT;
mul_x: A *= X; NEXT;
mul_k: A *= ip->k; NEXT;
div_x: if (PP_UNLIKELY(X == 0)) return 0; A /= X; NEXT;
div_k: A /= ip->k; NEXT;
mod_x: if (PP_UNLIKELY(X == 0)) return 0; A %= X; NEXT;
mod_k: A %= ip->k; NEXT;
and_x: A &= X; NEXT;
and_k: A &= ip->k; NEXT;
or_x: A |= X; NEXT;
or_k: A |= ip->k; NEXT;
xor_x: A ^= X; NEXT;
xor_k: A ^= ip->k; NEXT;
lsh_x: A <<= (X & 31); NEXT;
lsh_k: A <<= ip->k; NEXT;
rsh_x: A >>= (X & 31); NEXT;
rsh_k: A >>= ip->k; NEXT;
neg: A = 0u - A; NEXT;
ja: ip += ip->jt; goto* ip->op;
jgt_k: JUMP(A > ip->k);
jge_k: JUMP(A >= ip->k);
jeq_k: JUMP(A == ip->k);
jset_k: JUMP(A & ip->k);
jgt_x: JUMP(A > X);
jge_x: JUMP(A >= X);
jeq_x: JUMP(A == X);
jset_x: JUMP(A & X);
ld_abs_w:
  r = load_fast<4>(v, ip->k);
  if (PP_UNLIKELY(load_failed(r))) return 0;
  A = static_cast<uint32_t>(r);
  NEXT;
ld_abs_h:
  r = load_fast<2>(v, ip->k);
  if (PP_UNLIKELY(load_failed(r))) return 0;
  A = static_cast<uint32_t>(r);
  NEXT;
ld_abs_b:
  r = load_fast<1>(v, ip->k);
  if (PP_UNLIKELY(load_failed(r))) return 0;
  A = static_cast<uint32_t>(r);
  NEXT;
ld_anc:
  r = load_ancillary(v, ip->k, A, X);
  if (PP_UNLIKELY(load_failed(r))) return A;
  A = static_cast<uint32_t>(r);
  NEXT;
ld_ind_w:
  r = load_fast<4>(v, X + ip->k);
  if (PP_UNLIKELY(load_failed(r))) return 0;
  A = static_cast<uint32_t>(r);
  NEXT;
ld_ind_h:
  r = load_fast<2>(v, X + ip->k);
  if (PP_UNLIKELY(load_failed(r))) return 0;
  A = static_cast<uint32_t>(r);
  NEXT;
ld_ind_b:
  r = load_fast<1>(v, X + ip->k);
  if (PP_UNLIKELY(load_failed(r))) return 0;
  A = static_cast<uint32_t>(r);
  NEXT;
ldx_msh:
  r = load_fast<1>(v, ip->k);
  if (PP_UNLIKELY(load_failed(r))) return 0;
  X = (static_cast<uint32_t>(r) & 0xf) << 2;
  NEXT;
ld_len: A = v.wire_len; NEXT;
ldx_len: X = v.wire_len; NEXT;
ld_imm: A = ip->k; NEXT;
ldx_imm: X = ip->k; NEXT;
ld_mem: A = M[ip->k]; NEXT;
ldx_mem: X = M[ip->k]; NEXT;
tax: X = A; NEXT;
txa: A = X; NEXT;
ret_k: return ip->k;
ret_a: return A;
st: M[ip->k] = A; NEXT;
stx: M[ip->k] = X; NEXT;
ja_back:
  budget -= ip->jf;
  if (PP_UNLIKELY(budget < 0)) return 0;
  ip -= ip->jt;
  goto* ip->op;
zero_mem: std::memset(M, 0, sizeof M); NEXT;

#define FUSED(label, size, cond)                   \
  label:                                           \
  r = load_fast<size>(v, ip->k);                   \
  if (PP_UNLIKELY(load_failed(r))) return 0;       \
  A = static_cast<uint32_t>(r);                    \
  ++ip;                                            \
  JUMP(cond);
  FUSED(ldw_jeq, 4, A == ip->k)
  FUSED(ldw_jgt, 4, A > ip->k)
  FUSED(ldw_jge, 4, A >= ip->k)
  FUSED(ldw_jset, 4, A & ip->k)
  FUSED(ldh_jeq, 2, A == ip->k)
  FUSED(ldh_jgt, 2, A > ip->k)
  FUSED(ldh_jge, 2, A >= ip->k)
  FUSED(ldh_jset, 2, A & ip->k)
  FUSED(ldb_jeq, 1, A == ip->k)
  FUSED(ldb_jgt, 1, A > ip->k)
  FUSED(ldb_jge, 1, A >= ip->k)
  FUSED(ldb_jset, 1, A & ip->k)
#undef FUSED
#define FUSED_AND(label, size, cond)               \
  label:                                           \
  r = load_fast<size>(v, ip->k);                   \
  if (PP_UNLIKELY(load_failed(r))) return 0;       \
  A = static_cast<uint32_t>(r) & ip[1].k;          \
  ip += 2;                                         \
  JUMP(cond);
  FUSED_AND(ldw_and_jeq, 4, A == ip->k)
  FUSED_AND(ldw_and_jgt, 4, A > ip->k)
  FUSED_AND(ldw_and_jge, 4, A >= ip->k)
  FUSED_AND(ldw_and_jset, 4, A & ip->k)
  FUSED_AND(ldh_and_jeq, 2, A == ip->k)
  FUSED_AND(ldh_and_jgt, 2, A > ip->k)
  FUSED_AND(ldh_and_jge, 2, A >= ip->k)
  FUSED_AND(ldh_and_jset, 2, A & ip->k)
  FUSED_AND(ldb_and_jeq, 1, A == ip->k)
  FUSED_AND(ldb_and_jgt, 1, A > ip->k)
  FUSED_AND(ldb_and_jge, 1, A >= ip->k)
  FUSED_AND(ldb_and_jset, 1, A & ip->k)
#undef FUSED_AND
#define FUSED_IND(label, size, cond)               \
  label:                                           \
  r = load_fast<size>(v, X + ip->k);               \
  if (PP_UNLIKELY(load_failed(r))) return 0;       \
  A = static_cast<uint32_t>(r);                    \
  ++ip;                                            \
  JUMP(cond);
  FUSED_IND(indw_jeq, 4, A == ip->k)
  FUSED_IND(indw_jgt, 4, A > ip->k)
  FUSED_IND(indw_jge, 4, A >= ip->k)
  FUSED_IND(indw_jset, 4, A & ip->k)
  FUSED_IND(indh_jeq, 2, A == ip->k)
  FUSED_IND(indh_jgt, 2, A > ip->k)
  FUSED_IND(indh_jge, 2, A >= ip->k)
  FUSED_IND(indh_jset, 2, A & ip->k)
  FUSED_IND(indb_jeq, 1, A == ip->k)
  FUSED_IND(indb_jgt, 1, A > ip->k)
  FUSED_IND(indb_jge, 1, A >= ip->k)
  FUSED_IND(indb_jset, 1, A & ip->k)
#undef FUSED_IND
#undef NEXT
#undef JUMP
}

Op op_of(const Insn& in) {
  switch (in.code) {
    case BPF_ALU | BPF_ADD | BPF_X: return kAddX;
    case BPF_ALU | BPF_ADD | BPF_K: return kAddK;
    case BPF_ALU | BPF_SUB | BPF_X: return kSubX;
    case BPF_ALU | BPF_SUB | BPF_K: return kSubK;
    case BPF_ALU | BPF_MUL | BPF_X: return kMulX;
    case BPF_ALU | BPF_MUL | BPF_K: return kMulK;
    case BPF_ALU | BPF_DIV | BPF_X: return kDivX;
    case BPF_ALU | BPF_DIV | BPF_K: return kDivK;
    case BPF_ALU | BPF_MOD | BPF_X: return kModX;
    case BPF_ALU | BPF_MOD | BPF_K: return kModK;
    case BPF_ALU | BPF_AND | BPF_X: return kAndX;
    case BPF_ALU | BPF_AND | BPF_K: return kAndK;
    case BPF_ALU | BPF_OR | BPF_X: return kOrX;
    case BPF_ALU | BPF_OR | BPF_K: return kOrK;
    case BPF_ALU | BPF_XOR | BPF_X: return kXorX;
    case BPF_ALU | BPF_XOR | BPF_K: return kXorK;
    case BPF_ALU | BPF_LSH | BPF_X: return kLshX;
    case BPF_ALU | BPF_LSH | BPF_K: return kLshK;
    case BPF_ALU | BPF_RSH | BPF_X: return kRshX;
    case BPF_ALU | BPF_RSH | BPF_K: return kRshK;
    case BPF_ALU | BPF_NEG: return kNeg;
    case BPF_JMP | BPF_JA: return kJa;
    case BPF_JMP | BPF_JGT | BPF_K: return kJgtK;
    case BPF_JMP | BPF_JGE | BPF_K: return kJgeK;
    case BPF_JMP | BPF_JEQ | BPF_K: return kJeqK;
    case BPF_JMP | BPF_JSET | BPF_K: return kJsetK;
    case BPF_JMP | BPF_JGT | BPF_X: return kJgtX;
    case BPF_JMP | BPF_JGE | BPF_X: return kJgeX;
    case BPF_JMP | BPF_JEQ | BPF_X: return kJeqX;
    case BPF_JMP | BPF_JSET | BPF_X: return kJsetX;
    case BPF_LD | BPF_W | BPF_ABS: return is_known_ancillary(in.k) ? kLdAnc : kLdAbsW;
    case BPF_LD | BPF_H | BPF_ABS: return is_known_ancillary(in.k) ? kLdAnc : kLdAbsH;
    case BPF_LD | BPF_B | BPF_ABS: return is_known_ancillary(in.k) ? kLdAnc : kLdAbsB;
    case BPF_LD | BPF_W | BPF_IND: return kLdIndW;
    case BPF_LD | BPF_H | BPF_IND: return kLdIndH;
    case BPF_LD | BPF_B | BPF_IND: return kLdIndB;
    case BPF_LDX | BPF_B | BPF_MSH: return kLdxMsh;
    case BPF_LD | BPF_W | BPF_LEN: return kLdLen;
    case BPF_LDX | BPF_W | BPF_LEN: return kLdxLen;
    case BPF_LD | BPF_IMM: return kLdImm;
    case BPF_LDX | BPF_IMM: return kLdxImm;
    case BPF_LD | BPF_MEM: return kLdMem;
    case BPF_LDX | BPF_MEM: return kLdxMem;
    case BPF_MISC | BPF_TAX: return kTax;
    case BPF_MISC | BPF_TXA: return kTxa;
    case BPF_RET | BPF_K: return kRetK;
    case BPF_RET | BPF_A: return kRetA;
    case BPF_ST: return kSt;
    case BPF_STX: return kStx;
    default: return kOpCount;
  }
}

// Offset of a conditional jump on K within a fused group (JEQ 0, JGT 1, JGE 2, JSET 3), or -1.
int cond_index(const Insn& j) {
  switch (j.code) {
    case BPF_JMP | BPF_JEQ | BPF_K: return 0;
    case BPF_JMP | BPF_JGT | BPF_K: return 1;
    case BPF_JMP | BPF_JGE | BPF_K: return 2;
    case BPF_JMP | BPF_JSET | BPF_K: return 3;
    default: return -1;
  }
}

// The fused handler for the group starting at prog[i] (a load), or kOpCount.
// Only the group's first slot changes; the others stay intact for jumps landing on them.
Op fused_op(Op op, std::span<const Insn> prog, size_t i) {
  int size_index;  // W 0, H 1, B 2
  bool ind;
  switch (op) {
    case kLdAbsW: size_index = 0; ind = false; break;
    case kLdAbsH: size_index = 1; ind = false; break;
    case kLdAbsB: size_index = 2; ind = false; break;
    case kLdIndW: size_index = 0; ind = true; break;
    case kLdIndH: size_index = 1; ind = true; break;
    case kLdIndB: size_index = 2; ind = true; break;
    default: return kOpCount;
  }
  if (i + 1 >= prog.size()) return kOpCount;
  if (int c = cond_index(prog[i + 1]); c >= 0)
    return static_cast<Op>((ind ? kIndWJeq : kLdWJeq) + 4 * size_index + c);
  if (!ind && prog[i + 1].code == (BPF_ALU | BPF_AND | BPF_K) && i + 2 < prog.size())
    if (int c = cond_index(prog[i + 2]); c >= 0) return static_cast<Op>(kLdWAndJeq + 4 * size_index + c);
  return kOpCount;
}

uint32_t threaded_entry(const void* image, const PacketView& v) {
  return run_threaded(static_cast<const ThreadedInsn*>(image), &v, nullptr);
}

}  // namespace

namespace {

bool prepare(std::span<const Insn> prog, bool bounded, PreparedImage* out, std::string* err) {
  const void* const* labels = nullptr;
  run_threaded(nullptr, nullptr, &labels);
  // A bounded program starts with the slot that zeroes scratch memory; jumps are
  // relative, so the slots after it keep their distances.
  const size_t first = bounded ? 1 : 0;
  auto code = std::make_shared<std::vector<ThreadedInsn>>(prog.size() + first);
  if (bounded) (*code)[0].op = labels[kZeroMem];
  for (size_t i = 0; i < prog.size(); ++i) {
    const Insn& in = prog[i];
    Op op = op_of(in);
    if (op == kOpCount) {
      if (err) *err = "threaded: unknown opcode";
      return false;
    }
    ThreadedInsn& t = (*code)[i + first];
    if (op == kJa && static_cast<int32_t>(in.k) < 0) {
      if (!bounded) {
        if (err) *err = "threaded: backward jump in an unbounded program";
        return false;
      }
      t.op = labels[kJaBack];
      t.jt = static_cast<uint16_t>(-(static_cast<int32_t>(in.k) + 1));  // checked: target >= 0
      t.jf = static_cast<uint16_t>(prog.size());
      continue;
    }
    if (Op f = fused_op(op, prog, i); f != kOpCount) op = f;
    t.op = labels[op];
    t.k = op == kLdAnc ? in.k - static_cast<uint32_t>(SKF_AD_OFF) : in.k;
    if (op == kJa) {
      t.jt = static_cast<uint16_t>(in.k + 1);  // checked: k < len - pc - 1 <= 4095
    } else {
      t.jt = static_cast<uint16_t>(in.jt + 1);
      t.jf = static_cast<uint16_t>(in.jf + 1);
    }
  }
  out->fn = threaded_entry;
  out->image = code->data();
  out->owner = std::move(code);
  return true;
}

}  // namespace

bool prepare_threaded(std::span<const Insn> prog, PreparedImage* out, std::string* err) {
  return prepare(prog, false, out, err);
}

bool prepare_threaded_bounded(std::span<const Insn> prog, PreparedImage* out, std::string* err) {
  return prepare(prog, true, out, err);
}

}  // namespace pktpath::bpf
