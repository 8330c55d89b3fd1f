// The threaded-code engine (document 003): at load, each sock_filter instruction is
// decoded once into a ThreadedInsn holding its handler's address and pre-resolved
// operands (jump distances already +1, ancillary field numbers, scratch indexes), so
// running an instruction costs one indirect jump to the next handler — no opcode decode,
// no switch range check and no loop back-edge (Eric Dumazet's "one branch less").
#include <algorithm>
#include <cstring>
#include <vector>

#include "bpf/blocks.h"
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

// Handler ids; the order matches the label tables inside run_branching (up to kPBlk) and
// run_predicated (all).
enum Op : uint16_t {
  kAddX, kAddK, kSubX, kSubK, kMulX, kMulK, kDivX, kDivK, kModX, kModK, kAndX, kAndK,
  kOrX, kOrK, kXorX, kXorK, kLshX, kLshK, kRshX, kRshK, kNeg,
  kJa, kJgtK, kJgeK, kJeqK, kJsetK, kJgtX, kJgeX, kJeqX, kJsetX,
  kLdAbsW, kLdAbsH, kLdAbsB, kLdAnc, kLdIndW, kLdIndH, kLdIndB, kLdxMsh,
  kLdLen, kLdxLen, kLdImm, kLdxImm, kLdMem, kLdxMem, kTax, kTxa, kRetK, kRetA, kSt, kStx,
  // Bounded (userland) programs only: a backward `ja` (jt: distance back, jf: the charge)
  // and the prefix slot that zeroes scratch memory.
  kJaBack, kZeroMem,
  // Tests whose two targets are both `ret #k`: the handler returns the chosen constant
  // by a select, so that no data-dependent branch is taken (libpcap's last test before
  // its two returns). JEQ-or: a `jeq` whose false target is another `jeq` (on the same A)
  // with the same true target (`port 80 or port 443`, `ip6 protochain`'s header list) —
  // one slot tests both constants, reading the second `jeq` through its own jf, and takes
  // one branch instead of two; the second slot stays intact for jumps that land on it.
  kJeqOr, kJeqRet, kJgtRet, kJgeRet, kJsetRet, kJeqOrRet,
  // Fused groups: a load (`LD ABS`, `LD ABS; AND #mask`, `LD IND`) and the conditional
  // jump on K after it, run by the group's first slot, which jumps with the jump slot's
  // operands; the other slots stay intact for jumps that land on them. Saves one or two
  // dispatches per group — the common shape of libpcap's code (ldh [12]; jeq #0x800).
  // Index: kFused + (kind * 3 + size) * 5 + test, kind abs/and/ind, size W/H/B, test
  // JEQ/JGT/JGE/JSET/JEQ-or; kFusedRet the same with both targets `ret #k`.
  kFused,
  kFusedRet = kFused + 45,
  // Pairs: two groups of one shape whose true edges meet, the first's false edge reaching
  // the second — libpcap's `host`, `net` and `port` (source or destination). Both loads
  // and tests in the first slot, one branch (or none to two returns). Index: kPair +
  // kind * 3 + size, `jeq` tests with the second group right after the first; kPairRet
  // the same returning; kPairOr, kPairOrRet the same with JEQ-or tests (the second group
  // wherever the first's JEQ-or falls).
  kPair = kFusedRet + 45,
  kPairRet = kPair + 9,
  kPairOr = kPairRet + 9,
  kPairOrRet = kPairOr + 9,
  // Guarded tests (branching form, forward-only programs): a test with one way out to
  // `ret #0` and the other onward does not branch on the packet. It clears `live` where
  // the packet takes the way out and carries on along the other, so every packet follows
  // one dispatch sequence the indirect-branch predictor learns; every RET returns its
  // value masked by `live`, so a packet that took the way out still returns 0 (any
  // packet read past the head on the way returns 0 as well). Chosen only where the way
  // onward is short (kGuardReach). Only tests that follow a load: a lone test is mostly
  // the tail of a chain on one value (libpcap's ethertype list), whose branch the
  // predictor already gets right, and guarding it only adds work. kGuardFused + shape * 5
  // + test: a fused group, its load slot holding the way out (jf: 1 true, 0 false) and
  // the way onward right after the group; kGuardPair + shape, kGuardPairOr + shape:
  // pairs, the same.
  kGuardFused = kPairOrRet + 9,
  kGuardPair = kGuardFused + 45,
  kGuardPairOr = kGuardPair + 9,
  // libpcap's prologue to an IPv4 transport header in one slot, its groups guarded:
  // kFragMsh `ldh [k]; jset #m` (out when a fragment offset is set) then `ldxb
  // 4*([k]&0xf)`; kL4Hdr the same after `ldb [k]; jeq #p` (out when another protocol).
  // Every `tcp port`, `udp port` and `portrange` on IPv4 starts so.
  kFragMsh = kGuardPairOr + 9,
  kL4Hdr,
  // libpcap's protochain step over an IPv6 extension header (`ldb [x+k]; st M[m]; ldb
  // [x+k']; add #c; mul #d; add x; tax; ld M[m]`, X moving to the next header) in one
  // slot; the loop's `ja` after it is its own slot. Only the first slot's handler changes.
  kExtStep,
  kPBlk,
  // The predicated form (ThreadedForm::Predicated, see prepare_predicated): slots run in
  // sequence, never jump. kPBlk (k: the block's leader) enters a block; the block-end
  // slots (jt, jf: absolute successors) move `pc` on the path or put A and X back.
  kPJeqK = kPBlk + 1, kPJgtK, kPJgeK, kPJsetK, kPJeqX, kPJgtX, kPJgeX, kPJsetX, kPJa, kPRetK, kPRetA,
  kPSt, kPStx, kPEnd,
  // Whole blocks in one slot group (header k: the leader; then the block's own slots):
  // `Jcond K`, `LD ABS; Jcond K`, `LD ABS; AND K; Jcond K`, in the JEQ, JGT, JGE, JSET
  // order, the loads W, H, B.
  kPBJeq, kPBJgt, kPBJge, kPBJset,
  kPBLdWJeq, kPBLdWJgt, kPBLdWJge, kPBLdWJset, kPBLdHJeq, kPBLdHJgt, kPBLdHJge, kPBLdHJset,
  kPBLdBJeq, kPBLdBJgt, kPBLdBJge, kPBLdBJset,
  kPBLdWAndJeq, kPBLdWAndJgt, kPBLdWAndJge, kPBLdWAndJset, kPBLdHAndJeq, kPBLdHAndJgt,
  kPBLdHAndJge, kPBLdHAndJset, kPBLdBAndJeq, kPBLdBAndJgt, kPBLdBAndJge, kPBLdBAndJset,
  kOpCount
};
static_assert(kExtStep + 1 == kPBlk, "the common handlers come first: run_branching's table ends at kPBlk");

// What the handlers read of a packet, in registers: the head, its length and the wire
// length; `view` is the PacketView they came from, or nullptr when the LinearFn entry
// passed a linear buffer (then a slow-path read builds that view itself, and the program
// has no ancillary load, which would need one).
struct Packet {
  const uint8_t* data;
  uint32_t headlen;
  uint32_t wire_len;
  const PacketView* view;
};

// The packet as scalars, not a reference: a Packet whose address is taken would be
// stored to the stack at every entry for this rare call.
PP_NOINLINE uint64_t load_slow(const uint8_t* data, uint32_t headlen, uint32_t wire_len, const PacketView* view,
                               uint32_t off, uint32_t size) {
  if (view) return load_packet(*view, static_cast<int32_t>(off), size);
  return load_packet(PacketView::linear(data, headlen, wire_len), static_cast<int32_t>(off), size);
}

// load_fast on a Packet: a read inside the head, else the slow path.
template <uint32_t Size>
PP_ALWAYS_INLINE uint64_t load_at(const Packet& pkt, uint32_t off) {
  if (PP_LIKELY(in_head<Size>(pkt.headlen, off))) return read_be<Size>(pkt.data + off);
  return load_slow(pkt.data, pkt.headlen, pkt.wire_len, pkt.view, off, Size);
}

// The labels of threaded_handlers.inc, in Op order (add_x .. indb_pair_or_ret).
#define THREADED_COMMON_LABELS \
      &&add_x, &&add_k, &&sub_x, &&sub_k, &&mul_x, &&mul_k, &&div_x, &&div_k, &&mod_x, \
      &&mod_k, &&and_x, &&and_k, &&or_x, &&or_k, &&xor_x, &&xor_k, &&lsh_x, &&lsh_k, \
      &&rsh_x, &&rsh_k, &&neg, &&ja, &&jgt_k, &&jge_k, &&jeq_k, &&jset_k, &&jgt_x, \
      &&jge_x, &&jeq_x, &&jset_x, &&ld_abs_w, &&ld_abs_h, &&ld_abs_b, &&ld_anc, \
      &&ld_ind_w, &&ld_ind_h, &&ld_ind_b, &&ldx_msh, &&ld_len, &&ldx_len, &&ld_imm, \
      &&ldx_imm, &&ld_mem, &&ldx_mem, &&tax, &&txa, &&ret_k, &&ret_a, &&st, &&stx, \
      &&ja_back, &&zero_mem, &&jeq_or, &&jeq_ret, &&jgt_ret, &&jge_ret, &&jset_ret, &&jeq_or_ret, \
      THREADED_FUSED_LABELS(), THREADED_FUSED_LABELS(_ret), THREADED_PAIR_LABELS(), THREADED_PAIR_LABELS(_ret), \
      THREADED_PAIR_LABELS(_or), THREADED_PAIR_LABELS(_or_ret), \
      THREADED_FUSED_LABELS(_guard), THREADED_PAIR_LABELS(_guard), THREADED_PAIR_LABELS(_or_guard), \
      &&frag_msh, &&l4_hdr, &&ext_step
#define THREADED_TEST_LABELS(group, tail) \
  &&group##_jeq##tail, &&group##_jgt##tail, &&group##_jge##tail, &&group##_jset##tail, &&group##_jeq_or##tail
#define THREADED_FUSED_LABELS(tail) \
  THREADED_TEST_LABELS(ldw, tail), THREADED_TEST_LABELS(ldh, tail), THREADED_TEST_LABELS(ldb, tail), \
  THREADED_TEST_LABELS(ldw_and, tail), THREADED_TEST_LABELS(ldh_and, tail), THREADED_TEST_LABELS(ldb_and, tail), \
  THREADED_TEST_LABELS(indw, tail), THREADED_TEST_LABELS(indh, tail), THREADED_TEST_LABELS(indb, tail)
#define THREADED_PAIR_LABELS(tail) \
  &&ldw_pair##tail, &&ldh_pair##tail, &&ldb_pair##tail, &&ldw_and_pair##tail, &&ldh_and_pair##tail, \
  &&ldb_and_pair##tail, &&indw_pair##tail, &&indh_pair##tail, &&indb_pair##tail

// Dispatch: to the next slot, or by a condition to the slot jt or jf ahead.
#define NEXT \
  do {       \
    ++ip;    \
    goto* ip->op; \
  } while (0)
#define JUMP(cond)   \
  do {               \
    if (cond) STEP(ip->jt, 1); \
    else STEP(ip->jf, 1);      \
    goto* ip->op;    \
  } while (0)
// Advances ip by distance d, read from a slot, expected to be `fall` (the slots right
// after the group): then by that constant, behind a predicted branch, so that the next
// slot's address does not wait for the load of d — a distance added straight from
// memory puts a load on every jump's dependency chain (about 7 cycles a slot). The empty
// asm keeps the compiler from merging the two arms back into ip += d.
#define STEP(d, fall)                          \
  do {                                         \
    const uint32_t d_ = (d);                   \
    if (PP_LIKELY(d_ == (fall))) {             \
      ip += (fall);                            \
      asm("" : "+r"(ip));                      \
    } else {                                   \
      ip += d_;                                \
    }                                          \
  } while (0)

// What both run functions start with: called with ip == nullptr, publish the label table;
// otherwise the packet and the machine state threaded_handlers.inc works on (`budget` is
// read only by ja_back).
#define THREADED_ENTRY(labels)                     \
  if (PP_UNLIKELY(ip == nullptr)) {                \
    *table = labels;                               \
    return 0;                                      \
  }                                                \
  const Packet pkt{data, headlen, wire_len, view}; \
  uint32_t A = 0, X = 0;                           \
  uint32_t live = ~0u; /* guarded tests */         \
  uint64_t r;                                      \
  uint32_t M[kMemWords];                           \
  int64_t budget = kUserlandBound

// Runs a decoded program in the branching form: only the common handlers, `on` a constant,
// so none of the predicated form's state takes a register. Called once with ip == nullptr
// to publish the label table (label addresses exist only inside this function).
// The packet comes as scalars (a struct of this size would be passed in memory).
uint32_t run_branching(const ThreadedInsn* ip, const uint8_t* data, uint32_t headlen, uint32_t wire_len,
                       const PacketView* view, const void* const** table) {
  static const void* const kLabels[] = {THREADED_COMMON_LABELS};
  static_assert(sizeof kLabels / sizeof kLabels[0] == kPBlk);
  THREADED_ENTRY(kLabels);
  constexpr uint32_t on = ~0u;      // every slot is on the path

  goto* ip->op;

#include "bpf/threaded_handlers.inc"
}

// The same for the predicated form (prepare_predicated): the common handlers with `on` a
// variable, and the predicated slots.
uint32_t run_predicated(const ThreadedInsn* ip, const uint8_t* data, uint32_t headlen, uint32_t wire_len,
                        const PacketView* view, const void* const** table) {
  static const void* const kLabels[kOpCount] = {
      THREADED_COMMON_LABELS,
      &&p_blk, &&p_jeq_k, &&p_jgt_k, &&p_jge_k, &&p_jset_k, &&p_jeq_x, &&p_jgt_x, &&p_jge_x,
      &&p_jset_x, &&p_ja, &&p_ret_k, &&p_ret_a, &&p_st, &&p_stx, &&p_end,
      &&pb_jeq, &&pb_jgt, &&pb_jge, &&pb_jset,
      &&pb_ldw_jeq, &&pb_ldw_jgt, &&pb_ldw_jge, &&pb_ldw_jset, &&pb_ldh_jeq, &&pb_ldh_jgt,
      &&pb_ldh_jge, &&pb_ldh_jset, &&pb_ldb_jeq, &&pb_ldb_jgt, &&pb_ldb_jge, &&pb_ldb_jset,
      &&pb_ldw_and_jeq, &&pb_ldw_and_jgt, &&pb_ldw_and_jge, &&pb_ldw_and_jset, &&pb_ldh_and_jeq,
      &&pb_ldh_and_jgt, &&pb_ldh_and_jge, &&pb_ldh_and_jset, &&pb_ldb_and_jeq, &&pb_ldb_and_jgt,
      &&pb_ldb_and_jge, &&pb_ldb_and_jset};
  static_assert(sizeof kLabels / sizeof kLabels[0] == kOpCount);
  THREADED_ENTRY(kLabels);
  // The leader of the block the path enters next, whether the current block is on the
  // path, A and X at its entry, and the path's RET value. A failed load or a division by
  // zero ends the program only on the path (run_branching's `on` is always true).
  // `on` is a mask (all ones on the path): the selects below are masks, not ?:, which
  // the compiler would turn back into the branches this form exists to avoid.
  uint32_t pc = 0, A0 = 0, X0 = 0, res = 0;
  uint32_t on = ~0u;

  goto* ip->op;

#include "bpf/threaded_handlers.inc"

  // Predicated slots. COMMIT(next): at a block's end, the path moves on to `next` when
  // the block is on it; off the path A and X go back to their values at its entry.
#define SEL(m, a, b) (((a) & (m)) | ((b) & ~(m)))   // m all ones: a; m == 0: b
#define MASK(c) (0u - static_cast<uint32_t>(static_cast<bool>(c)))
#define TARGET(c) SEL(MASK(c), uint32_t{ip->jt}, uint32_t{ip->jf})
#define COMMIT(next)                   \
  do {                                 \
    const uint32_t nx = (next);        \
    pc = SEL(on, nx, pc);              \
    A = SEL(on, A, A0);                \
    X = SEL(on, X, X0);                \
  } while (0)
#define ENTER(leader)         \
  do {                        \
    on = MASK(pc == (leader)); \
    A0 = A;                   \
    X0 = X;                   \
  } while (0)
p_blk: ENTER(ip->k); NEXT;
p_jeq_k: COMMIT(TARGET(A == ip->k)); NEXT;
p_jgt_k: COMMIT(TARGET(A > ip->k)); NEXT;
p_jge_k: COMMIT(TARGET(A >= ip->k)); NEXT;
p_jset_k: COMMIT(TARGET(A & ip->k)); NEXT;
p_jeq_x: COMMIT(TARGET(A == X)); NEXT;
p_jgt_x: COMMIT(TARGET(A > X)); NEXT;
p_jge_x: COMMIT(TARGET(A >= X)); NEXT;
p_jset_x: COMMIT(TARGET(A & X)); NEXT;
p_ja: COMMIT(ip->jt); NEXT;
p_ret_k: res = SEL(on, ip->k, res); COMMIT(pc); NEXT;
p_ret_a: res = SEL(on, A, res); COMMIT(pc); NEXT;
p_st: M[ip->k] = SEL(on, A, M[ip->k]); NEXT;
p_stx: M[ip->k] = SEL(on, X, M[ip->k]); NEXT;
p_end: return res;

  // Whole blocks: the header's k is the leader; the block writes at most A, so only A
  // goes back off the path.
#define PB_JUMP(cond)                                  \
  do {                                                 \
    pc = SEL(on, TARGET(cond), pc);                    \
    ++ip;                                              \
    goto* ip->op;                                      \
  } while (0)
#define PB(label, cond)    \
  label:                   \
  on = MASK(pc == ip->k);  \
  ++ip;                    \
  PB_JUMP(cond);
  PB(pb_jeq, A == ip->k)
  PB(pb_jgt, A > ip->k)
  PB(pb_jge, A >= ip->k)
  PB(pb_jset, A & ip->k)
#undef PB
#define PB_LD(label, size, cond)                           \
  label:                                                   \
  on = MASK(pc == ip->k);                                  \
  r = load_at<size>(pkt, ip[1].k);                         \
  if (PP_UNLIKELY(load_failed(r)) && on) return 0;         \
  A0 = A;                                                  \
  A = static_cast<uint32_t>(r);                            \
  ip += 2;                                                 \
  A = SEL(on, A, A0);                                      \
  PB_JUMP(cond);
#define PB_LD_AND(label, size, cond)                       \
  label:                                                   \
  on = MASK(pc == ip->k);                                  \
  r = load_at<size>(pkt, ip[1].k);                         \
  if (PP_UNLIKELY(load_failed(r)) && on) return 0;         \
  A0 = A;                                                  \
  A = static_cast<uint32_t>(r) & ip[2].k;                  \
  ip += 3;                                                 \
  A = SEL(on, A, A0);                                      \
  PB_JUMP(cond);
  PB_LD(pb_ldw_jeq, 4, A == ip->k)
  PB_LD(pb_ldw_jgt, 4, A > ip->k)
  PB_LD(pb_ldw_jge, 4, A >= ip->k)
  PB_LD(pb_ldw_jset, 4, A & ip->k)
  PB_LD(pb_ldh_jeq, 2, A == ip->k)
  PB_LD(pb_ldh_jgt, 2, A > ip->k)
  PB_LD(pb_ldh_jge, 2, A >= ip->k)
  PB_LD(pb_ldh_jset, 2, A & ip->k)
  PB_LD(pb_ldb_jeq, 1, A == ip->k)
  PB_LD(pb_ldb_jgt, 1, A > ip->k)
  PB_LD(pb_ldb_jge, 1, A >= ip->k)
  PB_LD(pb_ldb_jset, 1, A & ip->k)
  PB_LD_AND(pb_ldw_and_jeq, 4, A == ip->k)
  PB_LD_AND(pb_ldw_and_jgt, 4, A > ip->k)
  PB_LD_AND(pb_ldw_and_jge, 4, A >= ip->k)
  PB_LD_AND(pb_ldw_and_jset, 4, A & ip->k)
  PB_LD_AND(pb_ldh_and_jeq, 2, A == ip->k)
  PB_LD_AND(pb_ldh_and_jgt, 2, A > ip->k)
  PB_LD_AND(pb_ldh_and_jge, 2, A >= ip->k)
  PB_LD_AND(pb_ldh_and_jset, 2, A & ip->k)
  PB_LD_AND(pb_ldb_and_jeq, 1, A == ip->k)
  PB_LD_AND(pb_ldb_and_jgt, 1, A > ip->k)
  PB_LD_AND(pb_ldb_and_jge, 1, A >= ip->k)
  PB_LD_AND(pb_ldb_and_jset, 1, A & ip->k)
#undef PB_LD
#undef PB_LD_AND
#undef PB_JUMP
#undef COMMIT
#undef ENTER
#undef SEL
#undef MASK
#undef TARGET
}
#undef NEXT
#undef JUMP
#undef STEP
#undef THREADED_COMMON_LABELS
#undef THREADED_TEST_LABELS
#undef THREADED_FUSED_LABELS
#undef THREADED_PAIR_LABELS
#undef THREADED_ENTRY

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

bool is_ret_k(std::span<const Insn> prog, size_t i) { return prog[i].code == (BPF_RET | BPF_K); }

// The jump at prog[j] as the threaded slots run it: its test (cond_index, or 4 for JEQ-or:
// a `jeq` whose false target is a `jeq` with the same true target) and its true and false
// targets (JEQ-or: the second `jeq`'s false target). test < 0: not a conditional jump on K.
struct Test {
  int test = -1;
  size_t t = 0, f = 0;
  bool returns = false;  // both targets are `ret #k`
};
Test test_at(std::span<const Insn> prog, size_t j) {
  Test r;
  r.test = cond_index(prog[j]);
  if (r.test < 0) return r;
  r.t = j + 1 + prog[j].jt;
  r.f = j + 1 + prog[j].jf;
  if (r.test == 0 && cond_index(prog[r.f]) == 0 && r.f + 1 + prog[r.f].jt == r.t) {
    r.test = 4;
    r.f = r.f + 1 + prog[r.f].jf;
  }
  r.returns = is_ret_k(prog, r.t) && is_ret_k(prog, r.f);
  return r;
}

// A fused group starting at prog[s]: its kind (abs, and, ind), size (W, H, B) and jump.
struct Group {
  int kind = -1, size = 0;
  size_t jump = 0;
};
Group group_at(std::span<const Insn> prog, size_t s) {
  Group g;
  const uint16_t code = prog[s].code;
  if (bpf_class(code) != BPF_LD || (bpf_mode(code) != BPF_ABS && bpf_mode(code) != BPF_IND)) return g;
  if (bpf_mode(code) == BPF_ABS && is_known_ancillary(prog[s].k)) return g;
  const int size = bpf_size(code) == BPF_W ? 0 : bpf_size(code) == BPF_H ? 1 : bpf_size(code) == BPF_B ? 2 : -1;
  if (size < 0 || s + 1 >= prog.size()) return g;
  const bool ind = bpf_mode(code) == BPF_IND;
  if (cond_index(prog[s + 1]) >= 0) {
    g = {ind ? 2 : 0, size, s + 1};
  } else if (!ind && prog[s + 1].code == (BPF_ALU | BPF_AND | BPF_K) && s + 2 < prog.size() &&
             cond_index(prog[s + 2]) >= 0) {
    g = {1, size, s + 2};
  }
  return g;
}

// The pair starting at group g1 (it and the group its false edge reaches, of one shape, both
// testing `jeq` — the second right after the first — or both JEQ-or, with one true
// target): the second group's jump, or 0.
size_t pair_at(std::span<const Insn> prog, const Group& g1) {
  const Test t1 = test_at(prog, g1.jump);
  if (t1.test != 4 && (t1.test != 0 || t1.f != g1.jump + 1)) return 0;
  const Group g2 = group_at(prog, t1.f);
  if (g2.kind != g1.kind || g2.size != g1.size) return 0;
  const Test t2 = test_at(prog, g2.jump);
  if (t2.test != t1.test || t2.t != t1.t) return 0;
  return g2.jump;
}

// Whether libpcap's protochain step over an IPv6 extension header (kExtStep) starts at
// instruction i: both loads bytes at X, the cell stored the cell loaded back.
bool ext_step_at(std::span<const Insn> prog, size_t i) {
  if (i + 8 >= prog.size()) return false;  // the slot after the step: at least the RET
  const Insn* p = &prog[i];
  constexpr uint16_t kLdIndB = BPF_LD | BPF_IND | BPF_B;
  return p[0].code == kLdIndB && p[1].code == BPF_ST && p[2].code == kLdIndB &&
         p[3].code == (BPF_ALU | BPF_ADD | BPF_K) && p[4].code == (BPF_ALU | BPF_MUL | BPF_K) &&
         p[5].code == (BPF_ALU | BPF_ADD | BPF_X) && p[6].code == (BPF_MISC | BPF_TAX) &&
         p[7].code == (BPF_LD | BPF_MEM | BPF_W) && p[7].k == p[1].k;
}

// What slot i of the branching form runs, when a superinstruction or fused group: its
// handler, its test (as Test), whether it returns by a select, and for a pair's load slot
// the pair's targets. op < 0: the instruction's own handler.
struct SlotPlan {
  int op = -1, test = -1;
  int shape = -1;  // a fused group's or pair's kind * 3 + size; -1 for a lone jump slot
  bool returns = false, pair = false;
  size_t t = 0, f = 0;  // the slot's targets (a pair's, a JEQ-or's second false edge)
};
SlotPlan plan_slot(std::span<const Insn> prog, size_t i) {
  SlotPlan p;
  if (const Test j = test_at(prog, i); j.test >= 0) {
    p.test = j.test;
    p.returns = j.returns;
    p.t = j.t;
    p.f = j.f;
    if (j.returns) p.op = kJeqRet + j.test;
    else if (j.test == 4) p.op = kJeqOr;
    return p;
  }
  const Group g = group_at(prog, i);
  if (g.kind < 0) return p;
  const Test j = test_at(prog, g.jump);
  const int shape = g.kind * 3 + g.size;
  p.test = j.test;
  p.shape = shape;
  if (const size_t j2 = pair_at(prog, g); j2 != 0) {
    p.pair = true;
    p.t = j.t;
    p.f = test_at(prog, j2).f;
    p.returns = is_ret_k(prog, p.t) && is_ret_k(prog, p.f);
    p.op = (j.test == 4 ? (p.returns ? kPairOrRet : kPairOr) : (p.returns ? kPairRet : kPair)) + shape;
  } else {
    p.returns = j.returns;
    p.t = j.t;
    p.f = j.f;
    p.op = (j.returns ? kFusedRet : kFused) + shape * 5 + j.test;
  }
  return p;
}

// How long the way onward from a guarded test may be, in instructions on its longest
// path to a RET: a packet that took the way out runs it all before returning 0, trading
// a mispredicted dispatch (15–20 cycles on mixed traffic) for a few predicted ones.
constexpr uint32_t kGuardReach = 24;

// By instruction: the most instructions a path from it runs, its RET included
// (forward-only programs: one backward sweep).
std::vector<uint32_t> longest_runs(std::span<const Insn> prog) {
  std::vector<uint32_t> run(prog.size(), 0);
  for (size_t i = prog.size(); i-- > 0;) {
    const Successors next = successors(prog[i], i);
    uint32_t most = 0;
    for (unsigned e = 0; e < next.n; ++e) most = std::max(most, run[next.to[e]]);
    run[i] = 1 + most;
  }
  return run;
}

// Whether the program draws random numbers (SKF_AD_RANDOM): a per-thread state that a
// run of blocks off the packet's path would advance, changing the next draw.
bool reads_random(std::span<const Insn> prog) {
  for (const Insn& in : prog)
    if (bpf_class(in.code) == BPF_LD && bpf_mode(in.code) == BPF_ABS && in.k == ancillary_k(SKF_AD_RANDOM))
      return true;
  return false;
}

// Guarded tests (and the header prologue) only where every path ends within the
// program's length (no loops) and running blocks off the path has no effect (no
// random draws).
bool guards_allowed(std::span<const Insn> prog) { return !has_backward_jump(prog) && !reads_random(prog); }

bool is_ret0(std::span<const Insn> prog, size_t i) { return is_ret_k(prog, i) && prog[i].k == 0; }

// Where a guarded handler carries on, in slots from the load slot: right after the group
// (its second `jeq` too for JEQ-or) or the pair, laid out one after the other as libpcap
// emits them (threaded_handlers.inc GUARDED's `fall`).
size_t guard_fall(const SlotPlan& p) {
  const size_t g = p.shape / 3 == 1 ? 3 : 2;  // slots of one group: load [, and], jump
  const size_t group = p.test == 4 ? g + 1 : g;
  return p.pair ? 2 * group : group;
}

// Which slots of a program run guarded (kGuardFused) or as the header prologue (kL4Hdr,
// kFragMsh); none where guards_allowed says no.
class GuardPlan {
 public:
  explicit GuardPlan(std::span<const Insn> prog)
      : prog_(prog), allowed_(guards_allowed(prog)), runs_(allowed_ ? longest_runs(prog) : std::vector<uint32_t>{}) {}

  struct Guard {
    int op = -1;            // the guarded handler, or -1
    bool out_true = false;  // the way out is the test holding
  };

  // For slot i's plan: a group's or pair's test that does not return by a select, with
  // exactly one target `ret #0` and a short way onward that starts right after it
  // (guard_fall).
  Guard at(size_t i, const SlotPlan& p) const {
    if (!allowed_ || p.test < 0 || p.returns || p.shape < 0) return {};
    const bool out_t = is_ret0(prog_, p.t), out_f = is_ret0(prog_, p.f);
    if (out_t == out_f) return {};
    const size_t onward = out_t ? p.f : p.t;
    if (runs_[onward] > kGuardReach || onward != i + guard_fall(p)) return {};
    if (p.pair) return {(p.test == 4 ? kGuardPairOr : kGuardPair) + p.shape, out_t};
    return {kGuardFused + p.shape * 5 + p.test, out_t};
  }

  // kL4Hdr or kFragMsh where slot i starts that prologue with each group guarded, else -1.
  int header_at(size_t i) const {
    if (frag_msh(i + 2) && guarded(i, kAbsB, 0, false)) return kL4Hdr;
    return frag_msh(i) ? kFragMsh : -1;
  }

 private:
  static constexpr int kAbsH = 1, kAbsB = 2;  // shapes: kind abs (0) * 3 + size

  bool guarded(size_t s, int shape, int test, bool out_true) const {
    if (s >= prog_.size()) return false;
    const SlotPlan p = plan_slot(prog_, s);
    const Guard g = at(s, p);
    return !p.pair && p.shape == shape && p.test == test && g.op >= 0 && g.out_true == out_true;
  }
  bool frag_msh(size_t s) const {
    return guarded(s, kAbsH, 3, true) && s + 2 < prog_.size() && prog_[s + 2].code == (BPF_LDX | BPF_B | BPF_MSH);
  }

  std::span<const Insn> prog_;
  bool allowed_;
  std::vector<uint32_t> runs_;  // longest_runs, where allowed
};

using RunThreaded = uint32_t (*)(const ThreadedInsn*, const uint8_t*, uint32_t, uint32_t, const PacketView*,
                                 const void* const**);

template <RunThreaded Run>
uint32_t threaded_entry(const void* image, const PacketView& v) {
  return Run(static_cast<const ThreadedInsn*>(image), v.data, v.headlen, v.wire_len, &v, nullptr);
}

template <RunThreaded Run>
uint32_t threaded_linear_entry(const void* image, const uint8_t* p, uint32_t wire_len, uint32_t buflen) {
  return Run(static_cast<const ThreadedInsn*>(image), p, buflen, wire_len, nullptr, nullptr);
}

// The image's entries into Run: the LinearFn one too where the program has no ancillary load.
template <RunThreaded Run>
void set_entries(std::span<const Insn> prog, std::shared_ptr<std::vector<ThreadedInsn>> code, PreparedImage* out) {
  out->fn = threaded_entry<Run>;
  out->image = code->data();
  if (!(view_needs(prog) & kViewNeedsMeta)) {
    out->linear = threaded_linear_entry<Run>;
    out->linear_image = code->data();
  }
  out->owner = std::move(code);
}

}  // namespace

namespace {

// Offset of any conditional jump (K or X) within the predicated jump slots, or -1.
int jump_index(const Insn& j) {
  if (bpf_class(j.code) != BPF_JMP) return -1;
  const int x = bpf_src(j.code) == BPF_X ? 4 : 0;
  switch (bpf_op(j.code)) {
    case BPF_JEQ: return x;
    case BPF_JGT: return x + 1;
    case BPF_JGE: return x + 2;
    case BPF_JSET: return x + 3;
    default: return -1;
  }
}

// The predicated form: every block in program order, each as [kPBlk leader] + its
// instructions (loads and ALU ops as in the branching form, scratch stores predicated)
// + a block-end slot, or as one whole-block slot group for the shapes libpcap emits most
// (a lone test, a load and a test, a load, a mask and a test). Then kPEnd returns the
// path's RET value. Every packet runs the same slot sequence, so the dispatch jumps
// follow one fixed order that the indirect-branch predictor learns.
bool prepare_predicated(std::span<const Insn> prog, PreparedImage* out, std::string* err) {
  const void* const* labels = nullptr;
  run_predicated(nullptr, nullptr, 0, 0, nullptr, &labels);
  const Blocks b = find_blocks(prog);
  auto code = std::make_shared<std::vector<ThreadedInsn>>();
  code->reserve(2 * prog.size() + 2);
  auto slot = [&](int op, uint32_t k, size_t jt = 0, size_t jf = 0) {
    code->push_back({labels[op], k, static_cast<uint16_t>(jt), static_cast<uint16_t>(jf)});
  };
  for (const Insn& in : prog) {
    const uint16_t cls = bpf_class(in.code);
    // Blocks off the path read cells no path has written (and predicated stores read
    // the cell they may keep): every cell starts defined, 0 as in a bounded program.
    if (cls == BPF_ST || cls == BPF_STX || ((cls == BPF_LD || cls == BPF_LDX) && bpf_mode(in.code) == BPF_MEM)) {
      slot(kZeroMem, 0);
      break;
    }
  }
  const size_t n = prog.size();
  for (size_t l = 0; l < n;) {
    size_t e = l;
    while (!b.last_in_block(e)) ++e;
    const Insn& last = prog[e];
    const uint32_t leader = static_cast<uint32_t>(l);
    const int c = cond_index(last);
    const size_t t = e + 1 + last.jt, f = e + 1 + last.jf;
    const Op first = op_of(prog[l]);
    const int size_index = first == kLdAbsW ? 0 : first == kLdAbsH ? 1 : first == kLdAbsB ? 2 : -1;
    if (c >= 0 && e == l) {
      slot(kPBJeq + c, leader);
      slot(kPJeqK + c, last.k, t, f);
    } else if (c >= 0 && e == l + 1 && size_index >= 0) {
      slot(kPBLdWJeq + 4 * size_index + c, leader);
      slot(first, prog[l].k);
      slot(kPJeqK + c, last.k, t, f);
    } else if (c >= 0 && e == l + 2 && size_index >= 0 && prog[l + 1].code == (BPF_ALU | BPF_AND | BPF_K)) {
      slot(kPBLdWAndJeq + 4 * size_index + c, leader);
      slot(first, prog[l].k);
      slot(kAndK, prog[l + 1].k);
      slot(kPJeqK + c, last.k, t, f);
    } else {
      slot(kPBlk, leader);
      for (size_t i = l; i <= e; ++i) {
        const Insn& in = prog[i];
        const Op op = op_of(in);
        if (op == kOpCount) {
          if (err) *err = "threaded: unknown opcode";
          return false;
        }
        if (op == kJa) slot(kPJa, 0, i + 1 + in.k);
        else if (int j = jump_index(in); j >= 0) slot(kPJeqK + j, in.k, i + 1 + in.jt, i + 1 + in.jf);
        else if (op == kRetK) slot(kPRetK, in.k);
        else if (op == kRetA) slot(kPRetA, 0);
        else if (op == kSt) slot(kPSt, in.k);
        else if (op == kStx) slot(kPStx, in.k);
        else slot(op, op == kLdAnc ? in.k - static_cast<uint32_t>(SKF_AD_OFF) : in.k);
      }
      if (!ends_block(last)) slot(kPJa, 0, e + 1);  // falls through into the next block
    }
    l = e + 1;
  }
  slot(kPEnd, 0);
  set_entries<run_predicated>(prog, std::move(code), out);
  return true;
}

bool prepare(std::span<const Insn> prog, bool bounded, PreparedImage* out, std::string* err) {
  const void* const* labels = nullptr;
  run_branching(nullptr, nullptr, 0, 0, nullptr, &labels);
  // A bounded program that may read a cell before writing it starts with the slot that
  // zeroes scratch memory; jumps are relative, so the slots after it keep their distances.
  const size_t first = bounded && scratch_read_unset(prog) != 0 ? 1 : 0;
  auto code = std::make_shared<std::vector<ThreadedInsn>>(prog.size() + first);
  const GuardPlan guards(prog);
  if (first) (*code)[0].op = labels[kZeroMem];
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
    t.op = labels[op];
    t.k = op == kLdAnc ? in.k - static_cast<uint32_t>(SKF_AD_OFF) : in.k;
    if (op == kJa) {
      t.jt = static_cast<uint16_t>(in.k + 1);  // checked: k < len - pc - 1 <= 4095
      continue;
    }
    t.jt = static_cast<uint16_t>(in.jt + 1);
    t.jf = static_cast<uint16_t>(in.jf + 1);
    // Superinstructions. Jump slots keep their distances (JEQ-or reads the second `jeq`
    // through jf); a pair's load slot gets the pair's targets (every target lies within
    // the program, so distances fit 16 bits).
    const SlotPlan p = plan_slot(prog, i);
    if (p.op >= 0) t.op = labels[p.op];
    if (p.pair) {
      t.jt = static_cast<uint16_t>(p.t - i);
      t.jf = static_cast<uint16_t>(p.f - i);
    }
    if (const GuardPlan::Guard g = guards.at(i, p); g.op >= 0) {
      t.op = labels[g.op];
      t.jf = g.out_true ? 1 : 0;  // the load slot: the way out
    }
    if (const int h = guards.header_at(i); h >= 0) t.op = labels[h];
    if (ext_step_at(prog, i)) t.op = labels[kExtStep];
  }
  set_entries<run_branching>(prog, std::move(code), out);
  return true;
}

}  // namespace

ThreadedShapes threaded_shapes(std::span<const Insn> prog) {
  ThreadedShapes n;
  const GuardPlan guards(prog);
  for (size_t i = 0; i < prog.size(); ++i) {
    n.ext_steps += ext_step_at(prog, i);
    const SlotPlan p = plan_slot(prog, i);
    if (p.test < 0) continue;
    if (p.pair) ++n.pairs, n.pairs_or += p.test == 4;
    else n.jeq_or += p.test == 4;
    n.returning += p.returns;
    n.guarded += guards.at(i, p).op >= 0;
    // A prologue once, by its first slot (kL4Hdr's jset group also qualifies alone).
    const bool inner = i >= 2 && guards.header_at(i - 2) == kL4Hdr;
    n.headers += !inner && guards.header_at(i) >= 0;
  }
  return n;
}

bool threaded_predicated(std::span<const Insn> prog, ThreadedForm form) {
  return form == ThreadedForm::Predicated && !prog.empty() && guards_allowed(prog);
}

bool prepare_threaded_form(std::span<const Insn> prog, bool bounded, ThreadedForm form, PreparedImage* out,
                           std::string* err) {
  if (threaded_predicated(prog, form)) return prepare_predicated(prog, out, err);
  return prepare(prog, bounded, out, err);
}

bool prepare_threaded(std::span<const Insn> prog, PreparedImage* out, std::string* err) {
  return prepare_threaded_form(prog, false, ThreadedForm::Auto, out, err);
}

bool prepare_threaded_bounded(std::span<const Insn> prog, PreparedImage* out, std::string* err) {
  return prepare_threaded_form(prog, true, ThreadedForm::Auto, out, err);
}

}  // namespace pktpath::bpf
