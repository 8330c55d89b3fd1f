// One emission pass of the classic BPF x86-64 JIT. The ideas follow Linux's
// arch/x86/net/bpf_jit_comp.c (do_jit: per-instruction emission into a buffer; the
// caller repeats passes until every jump's encoding has settled) and the historic cBPF
// JIT's plan of keeping A and X in registers with packet loads checked inline against
// the head length; the code is our own, written with the xbyak assembler.
#include "bpf/jit_emit.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <memory>
#include <stdexcept>

#include <xbyak/xbyak.h>

#include "bpf/blocks.h"
#include "bpf/check.h"
#include "bpf/packet_view.h"
#include "bpf/semantics.h"

namespace pktpath::bpf::jit_detail {

namespace {

// Slow-path helpers the image calls (System V ABI), in the semantics' by-value form:
// low 32 bits the value, kLoadFail in the high half when the program must end now.

// A packet read outside the head's fast path: fragments, negative offsets, or out of
// bounds (end returning 0). Mirrors bpf_skb_load_helper_* /
// bpf_internal_load_pointer_neg_helper through load_packet.
uint64_t helper_load(const PacketView* v, int32_t off, uint32_t size) { return load_packet(*v, off, size); }

// The same for a linear image (PassInput::linear), which has no view: the view the
// LinearFn entry stands for, built here on the slow path only.
uint64_t helper_load_linear(int32_t off, uint32_t size, const uint8_t* p, uint32_t buflen, uint32_t wire_len) {
  return load_packet(PacketView::linear(p, buflen, wire_len), off, size);
}

// An ancillary load; on kLoadFail the low half carries the current A, which the program
// then returns (the kernel's exit when skb->dev is NULL).
uint64_t helper_ancillary(const PacketView* v, uint32_t ad, uint32_t a, uint32_t x) {
  uint64_t r = load_ancillary(*v, ad, a, x);
  return load_failed(r) ? (kLoadFail | a) : r;
}

constexpr int kFrame = 120;      // keeps rsp 16-byte aligned at helper calls
constexpr int kSaveA = 64;       // frame slots after M[0..15]
constexpr int kSaveX = 68;
constexpr int kSaveV = 72;
constexpr int kSaveB = 80;       // the loop budget (r11) across a helper call
constexpr int kSaveP = 88;       // linear images: the packet pointer (rdi) and head length (r8d)
constexpr int kSaveH = 96;

// JitForm::Auto splits a program only when its longest path runs at least this many
// blocks fewer than the one straight line: a mispredicted branch (about 30–50% of packets
// on the ethertype split of mixed traffic, 15–20 cycles each) against predicated blocks'
// chain of cmp/cmov. `net 192.168.2.0/24` saves two: split, it measured 8% slower on one
// machine and 1.3–1.7× faster on another (docs/benchmarks.md); the five-term filter saves
// five (faster on both).
constexpr long kMinSplitGain = 2;

enum class Cond { Always, A, AE, E, NE, B, BE, L };

class Pass : public Xbyak::CodeGenerator {
 public:
  Pass(const PassInput& in, uint8_t* buf, size_t cap)
      : Xbyak::CodeGenerator(cap, buf),
        in_(in),
        n_(in.prog.size()),
        lab_(n_ + 1),
        head_(n_),
        pred_form_(in.predicated),
        rng_(in.blind_seed | 1) {}

  void run(PassOutput* out) {
    scan();
    prologue();
    if (!pred_form_) {
      for (size_t i = 0; i < n_; ++i) emit_insn(i);
    } else {
      // The split blocks branch for real (only block 0 and tests of its value: none
      // without JitForm::Split), then each region runs predicated and returns.
      for (size_t i = 0; i < n_; ++i)
        if (split_[b_.first[i]]) emit_insn(i);
      for (const Region& r : regions_) region(r);
    }
    L(lab_[n_]);  // branching: never reached, the last instruction is a RET
    for (Inst& s : insts_)
      if (needs_stub_[s.i]) stub(s);
    L(ret0_);
    xor_(eax, eax);
    L(exit_a_);
    epilogue();
    if (pred_form_ && ret_table_) {  // every RET is `ret #k`: its value by the leader of its block
      align(4);
      L(ret_values_);
      std::vector<uint32_t> value(n_, 0);
      for (size_t i = 0; i < n_; ++i)
        if (in_.prog[i].code == (BPF_RET | BPF_K)) value[b_.first[i]] = in_.prog[i].k;
      for (uint32_t k : value) dd(k);
    }

    out->regions = static_cast<unsigned>(regions_.size());
    const uint8_t* base = getCode();
    out->code.assign(base, base + getSize());
    out->fits_short.resize(sites_.size());
    for (size_t s = 0; s < sites_.size(); ++s) {
      const uint8_t* t = sites_[s].target->getAddress();
      ptrdiff_t rel = (t - base) - static_cast<ptrdiff_t>(sites_[s].start + 2);
      out->fits_short[s] = rel >= -128 && rel <= 127;
    }
  }

 private:
  struct Site {
    size_t start;
    const Xbyak::Label* target;
  };

  // One emitted copy of an instruction (the split form emits a block once per region
  // that reaches it): its slow-path entry and, predicated, where that path comes back.
  struct Inst {
    size_t i = 0;
    bool pred = false;
    Xbyak::Label stub, after;
  };

  // A predicated region: the blocks reachable from its head (by leader), run in program
  // order, with the restore flags of that order alone (restores_within).
  struct Region {
    uint32_t head = 0;
    std::vector<uint8_t> member, restore_a, restore_x;
  };

  // Instruction i in the current mode (pred_), as a fresh copy.
  void emit_insn(size_t i) {
    cur_ = &insts_.emplace_back();
    cur_->i = i;
    cur_->pred = pred_;
    if (!pred_) L(lab_[i]);  // a branching instruction is emitted once
    if (pred_ && b_.leader[i]) block_enter(i);
    insn(i);
    if (pred_) {
      L(cur_->after);  // where a predicated load's slow path comes back
      if (last_in_block(i) && !ends_block(in_.prog[i])) {
        mov(r9d, static_cast<uint32_t>(i + 1));  // the block falls through into the next
        commit(i);
      }
    }
  }

  // A predicated region: r10d starts at its head; after its last block r10d is the
  // leader of the path's RET block.
  void region(const Region& r) {
    L(head_[r.head]);
    pred_ = true;
    ra_ = &r.restore_a;
    rx_ = &r.restore_x;
    if (r.head == 0) xor_(r10d, r10d);
    else mov(r10d, r.head);
    if (!ret_table_) xor_(r11d, r11d);
    for (size_t i = r.head; i < n_; ++i)
      if (r.member[b_.first[i]]) emit_insn(i);
    if (ret_table_) {
      lea(rdx, ptr[rip + ret_values_]);
      mov(eax, dword[rdx + r10 * 4]);
    } else {  // r11d holds the path's RET value
      mov(eax, r11d);
    }
    epilogue();
    pred_ = false;
  }

  // The conditional jump ending a split block: a real branch to a split block or a region.
  void split_jump(const Insn& in, size_t i) {
    const Cond t = compare(in);
    jump(t, target(i + 1 + in.jt));
    jump(Cond::Always, target(i + 1 + in.jf));
  }
  const Xbyak::Label& target(size_t l) const { return split_[l] ? lab_[l] : head_[l]; }

  // Decides which parts of the machine a program needs.
  void scan() {
    needs_stub_.assign(n_, 0);
    for (size_t i = 0; i < n_; ++i) {
      const Insn& in = in_.prog[i];
      uint16_t cls = bpf_class(in.code), mode = bpf_mode(in.code);
      bool ld = cls == BPF_LD || cls == BPF_LDX;
      if (ld && (mode == BPF_ABS || mode == BPF_IND || mode == BPF_MSH)) {
        packet_ = true;
        if (!is_ancillary_load(in)) needs_stub_[i] = 1;
      }
      if ((ld && mode == BPF_MEM) || cls == BPF_ST || cls == BPF_STX) frame_ = true;
      if (in.code == (BPF_JMP | BPF_JA) && static_cast<int32_t>(in.k) < 0) {
        if (!in_.bounded) throw std::runtime_error("backward jump in an unbounded program");
        loop_ = true;
      }
    }
    if (pred_form_) scan_blocks();
  }

  // The predicated form (jit.h JitForm): basic blocks in program order (a topological
  // order, jumps being forward). r10d holds the leader of the block the packet's path
  // enters next; a block runs unconditionally on A and X and at its end, when r10d is its
  // own leader, moves r10d to its successor, otherwise puts back (from ebx, ebp, saved at
  // its entry) what a path jumping over it still reads (Blocks::restore_a, _x). A RET
  // block leaves r10d at its leader; exactly one path runs, so after the last block the
  // result is a table lookup by r10d when every RET is `ret #k`, otherwise r11d, where a
  // RET on the path stored its value.
  //
  // The split form (JitForm::Split): block 0 ends in a real branch when it ends in a test
  // with two targets, and so does a block that is that test's target, holds nothing but
  // a test of the same A and has no other predecessor (libpcap's ethertype chain: `jeq
  // #0x800`, then `jeq #0x86dd`); every other target of those branches heads a region,
  // predicated alone, so a packet runs only the blocks its branch reaches.
  void scan_blocks() {
    b_ = find_blocks(in_.prog);
    for (size_t i = 0; i < n_; ++i)
      if (in_.prog[i].code == (BPF_RET | BPF_A)) ret_table_ = false;
    split_.assign(n_, 0);
    if (in_.split) choose_splits();
    build_regions();
    if (in_.split_auto && regions_.size() > 1 && split_gain() < kMinSplitGain) {
      split_.assign(n_, 0);  // too little to win back a mispredicted branch: one region
      regions_.clear();
      build_regions();
    }
    for (const Region& r : regions_)
      for (size_t i = 0; i < n_; ++i) saves_ |= r.restore_a[i] || r.restore_x[i];
  }

  void build_regions() {
    std::vector<uint8_t> head(n_, 0);
    bool any_split = false;
    for (size_t l = 0; l < n_; ++l) {
      if (!split_[l]) continue;
      any_split = true;
      const size_t j = last_of(l);
      for (size_t t : {j + 1 + in_.prog[j].jt, j + 1 + in_.prog[j].jf})
        if (!split_[t]) head[t] = 1;
    }
    if (!any_split) head[0] = 1;
    for (size_t h = 0; h < n_; ++h) {
      if (!head[h]) continue;
      Region& r = regions_.emplace_back();
      r.head = static_cast<uint32_t>(h);
      r.member = reachable_from(h);
      restores_within(in_.prog, b_, r.member, &r.restore_a, &r.restore_x);
    }
  }

  // By leader: the blocks a path from block h can run (program order is topological:
  // one forward sweep).
  std::vector<uint8_t> reachable_from(size_t h) const {
    std::vector<uint8_t> m(n_, 0);
    m[h] = 1;
    for (size_t l = h; l < n_; ++l)
      if (b_.leader[l] && m[l])
        for (size_t t : successors(last_of(l))) m[t] = 1;
    return m;
  }

  // Blocks other than a RET: what a predicated straight line pays for, a block each.
  size_t tests_in(const std::vector<uint8_t>& m) const {
    size_t c = 0;
    for (size_t l = 0; l < n_; ++l) c += m[l] && bpf_class(in_.prog[l].code) != BPF_RET;
    return c;
  }

  // Blocks the split form saves on its longest path (every split block and the largest
  // region) against the one straight line.
  long split_gain() const {
    size_t most = 0, splits = 0;
    for (const Region& r : regions_) most = std::max(most, tests_in(r.member));
    for (size_t l = 0; l < n_; ++l) splits += split_[l];
    return static_cast<long>(tests_in(reachable_from(0))) - static_cast<long>(most + splits);
  }

  size_t last_of(size_t l) const {
    size_t j = l;
    while (!last_in_block(j)) ++j;
    return j;
  }

  // Where the path goes after block-ending instruction j (none after a RET).
  std::vector<size_t> successors(size_t j) const {
    const Successors next = bpf::successors(in_.prog[j], j);
    return std::vector<size_t>(next.to, next.to + next.n);
  }

  static bool two_way(const Insn& in) {
    return bpf_class(in.code) == BPF_JMP && bpf_op(in.code) != BPF_JA && in.jt != in.jf;
  }

  void choose_splits() {
    if (!two_way(in_.prog[last_of(0)])) return;
    split_[0] = 1;
    // Predecessor counts, all and split ones, by leader (program order: a block's
    // predecessors are decided before it).
    std::vector<uint32_t> preds(n_, 0);
    for (size_t l = 0; l < n_; ++l)
      if (b_.leader[l])
        for (size_t t : successors(last_of(l))) ++preds[t];
    size_t heads = 2;
    for (size_t l = 1; l < n_; ++l) {
      if (!b_.leader[l] || !two_way(in_.prog[l]) || heads + 1 > kMaxRegions) continue;
      uint32_t from_split = 0;
      for (size_t p = 0; p < l; ++p)
        if (b_.leader[p] && split_[p])
          for (size_t t : successors(last_of(p))) from_split += t == l;
      if (from_split == 0 || from_split != preds[l]) continue;
      split_[l] = 1;
      ++heads;  // one target of a split block turns into two
    }
  }

  bool last_in_block(size_t i) const { return b_.last_in_block(i); }

  void block_enter(size_t i) {
    if ((*ra_)[i]) mov(ebx, eax);
    if ((*rx_)[i]) mov(ebp, ecx);
  }

  // Block end of instruction i's block, r9d = the successor on the path: cmp r10d with
  // the leader, A and X back where the block is off the path, r10d moved where it is on.
  void commit(size_t i) {
    const uint32_t l = b_.first[i];
    cmp(r10d, l);
    restore_if_off_path(l);
    cmove(r10d, r9d);
  }

  // After `cmp r10d, leader`: A and X as they were at the block's entry when it is off the path.
  void restore_if_off_path(uint32_t l) {
    if ((*ra_)[l]) cmovne(eax, ebx);
    if ((*rx_)[l]) cmovne(ecx, ebp);
  }

  void pred_cond_jump(size_t i, const Insn& in) {
    const uint32_t t = static_cast<uint32_t>(i + 1 + in.jt), f = static_cast<uint32_t>(i + 1 + in.jf);
    if (t == f) {
      mov(r9d, t);
    } else {
      const Cond c = compare(in);
      mov(r9d, f);  // movs keep the flags
      mov(edx, t);
      switch (c) {
        case Cond::A: cmova(r9d, edx); break;
        case Cond::AE: cmovae(r9d, edx); break;
        case Cond::E: cmove(r9d, edx); break;
        default: cmovne(r9d, edx); break;
      }
    }
    commit(i);
  }

  void pred_ret(size_t i, const Insn& in) {
    const uint32_t l = b_.first[i];
    if (ret_table_) {  // the value is looked up by r10d after the last block
      if ((*ra_)[l] || (*rx_)[l]) {
        cmp(r10d, l);
        restore_if_off_path(l);
      }
      return;
    }
    if (bpf_rval(in.code) == BPF_K) {
      mov(edx, in.k);
      cmp(r10d, l);
      cmove(r11d, edx);
    } else {
      cmp(r10d, l);
      cmove(r11d, eax);
    }
    restore_if_off_path(l);
  }

  // A scratch store that happens only on the path (another path may still read the cell).
  void pred_store(size_t i, const Xbyak::Reg32& r, uint32_t k) {
    mov(edx, dword[rsp + static_cast<int>(4 * k)]);
    cmp(r10d, b_.first[i]);
    cmove(edx, r);
    mov(dword[rsp + static_cast<int>(4 * k)], edx);
  }

  void prologue() {
    if (pred_form_ && saves_) {  // ebx, ebp (callee-saved) hold A and X at a block's entry
      push(rbx);
      push(rbp);
    }
    if (frame_) sub(rsp, kFrame);
    if (in_.linear) {  // (image, p, wire_len, buflen): the head in rdi, r8d; wire_len in esi
      mov(r8d, ecx);
      mov(rdi, rsi);
      mov(esi, edx);
    }
    xor_(eax, eax);  // A = 0, X = 0 as the kernel starts them
    xor_(ecx, ecx);
    if (in_.bounded) zero_read_cells();
    if (loop_) mov(r11d, static_cast<uint32_t>(kUserlandBound));
    if (packet_ && !in_.linear) reload_packet();
  }

  // A bounded program's scratch memory starts zeroed (check.h): a read before any write
  // gives 0. Only the cells the program reads can show it, so only they are cleared
  // (eax is 0 here).
  void zero_read_cells() {
    bool read[kMemWords] = {};
    for (const Insn& in : in_.prog) {
      const uint16_t cls = bpf_class(in.code);
      if ((cls == BPF_LD || cls == BPF_LDX) && bpf_mode(in.code) == BPF_MEM) read[in.k] = true;
    }
    for (uint32_t k = 0; k < kMemWords; ++k)
      if (read[k]) mov(dword[rsp + static_cast<int>(4 * k)], eax);
  }

  // A backward `ja` (bounded programs only): charge the program's length; once the
  // charges pass kUserlandBound the run ends with 0, at the same jump as the interpreters
  // (interp_threaded.cc ja_back: budget -= len; budget < 0 returns 0). The charge is the
  // program's length, not an immediate of the program, so blinding leaves it as it is.
  void back_jump(size_t target) {
    sub(r11d, static_cast<uint32_t>(n_));
    jump(Cond::L, ret0_);
    jump(Cond::Always, lab_[target]);
  }

  void epilogue() {
    if (frame_) add(rsp, kFrame);
    if (pred_form_ && saves_) {
      pop(rbp);
      pop(rbx);
    }
    ret();
  }

  void reload_packet() {
    if (in_.linear) {  // saved by save_for_call: a linear image has no view to read them from
      mov(rdi, qword[rsp + kSaveP]);
      mov(r8d, dword[rsp + kSaveH]);
      return;
    }
    mov(rdi, qword[rsi + static_cast<int>(offsetof(PacketView, data))]);
    mov(r8d, dword[rsi + static_cast<int>(offsetof(PacketView, headlen))]);
  }

  // A jump whose encoding the convergence passes choose: rel8 once a previous pass
  // showed it fits, rel32 until then.
  void jump(Cond c, const Xbyak::Label& target) {
    size_t id = sites_.size();
    bool s = in_.short_ok && id < in_.short_ok->size() && (*in_.short_ok)[id];
    sites_.push_back({getSize(), &target});
    LabelType t = s ? T_SHORT : T_NEAR;
    switch (c) {
      case Cond::Always: jmp(target, t); break;
      case Cond::A: ja(target, t); break;
      case Cond::AE: jae(target, t); break;
      case Cond::E: je(target, t); break;
      case Cond::NE: jne(target, t); break;
      case Cond::B: jb(target, t); break;
      case Cond::BE: jbe(target, t); break;
      case Cond::L: jl(target, t); break;
    }
  }

  uint32_t next_key() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return static_cast<uint32_t>(rng_ >> 11) | 1u;
  }

  // Puts K in r9d, blinded when asked (the image then never holds K itself).
  void imm_to_r9(uint32_t k) {
    if (in_.blind) {
      uint32_t key = next_key();
      mov(r9d, k ^ key);
      xor_(r9d, key);
    } else {
      mov(r9d, k);
    }
  }

  void mov_imm(const Xbyak::Reg32& r, uint32_t k) {
    if (in_.blind && k != 0) {
      uint32_t key = next_key();
      mov(r, k ^ key);
      xor_(r, key);
    } else if (k == 0) {
      xor_(r, r);
    } else {
      mov(r, k);
    }
  }

  void insn(size_t i) {
    const Insn& in = in_.prog[i];
    const uint32_t K = in.k;
    const bool bl = in_.blind;
    switch (in.code) {
      case BPF_ALU | BPF_ADD | BPF_X: add(eax, ecx); break;
      case BPF_ALU | BPF_SUB | BPF_X: sub(eax, ecx); break;
      case BPF_ALU | BPF_MUL | BPF_X: imul(eax, ecx); break;
      case BPF_ALU | BPF_AND | BPF_X: and_(eax, ecx); break;
      case BPF_ALU | BPF_OR | BPF_X: or_(eax, ecx); break;
      case BPF_ALU | BPF_XOR | BPF_X: xor_(eax, ecx); break;
      case BPF_ALU | BPF_LSH | BPF_X: shl(eax, cl); break;  // x86 masks the count to 5 bits
      case BPF_ALU | BPF_RSH | BPF_X: shr(eax, cl); break;
      case BPF_ALU | BPF_DIV | BPF_X:
      case BPF_ALU | BPF_MOD | BPF_X:
        test(ecx, ecx);
        jump(Cond::E, ret0_);  // division by X == 0 ends the program with 0
        xor_(edx, edx);
        div(ecx);
        if (bpf_op(in.code) == BPF_MOD) mov(eax, edx);
        break;
      case BPF_ALU | BPF_ADD | BPF_K:
        if (bl) { imm_to_r9(K); add(eax, r9d); } else add(eax, K);
        break;
      case BPF_ALU | BPF_SUB | BPF_K:
        if (bl) { imm_to_r9(K); sub(eax, r9d); } else sub(eax, K);
        break;
      case BPF_ALU | BPF_MUL | BPF_K:
        if (bl) { imm_to_r9(K); imul(eax, r9d); } else imul(eax, eax, static_cast<int>(K));
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        if (bl) { imm_to_r9(K); and_(eax, r9d); } else and_(eax, K);
        break;
      case BPF_ALU | BPF_OR | BPF_K:
        if (bl) { imm_to_r9(K); or_(eax, r9d); } else or_(eax, K);
        break;
      case BPF_ALU | BPF_XOR | BPF_K:
        if (bl) { imm_to_r9(K); xor_(eax, r9d); } else xor_(eax, K);
        break;
      case BPF_ALU | BPF_LSH | BPF_K: if (K) shl(eax, static_cast<int>(K)); break;  // K < 32 (checker)
      case BPF_ALU | BPF_RSH | BPF_K: if (K) shr(eax, static_cast<int>(K)); break;
      case BPF_ALU | BPF_DIV | BPF_K:
      case BPF_ALU | BPF_MOD | BPF_K: div_k(in.code, K); break;  // K != 0 (checker)
      case BPF_ALU | BPF_NEG: neg(eax); break;

      case BPF_JMP | BPF_JA:
        if (static_cast<int32_t>(K) < 0) {  // the checker: the target lies in the program
          back_jump(static_cast<size_t>(static_cast<int64_t>(i) + 1 + static_cast<int32_t>(K)));
        } else if (pred_) {
          mov(r9d, static_cast<uint32_t>(i + 1 + K));
          commit(i);
        } else if (K) {
          jump(Cond::Always, lab_[i + 1 + K]);
        }
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
      case BPF_JMP | BPF_JGE | BPF_K:
      case BPF_JMP | BPF_JEQ | BPF_K:
      case BPF_JMP | BPF_JSET | BPF_K:
      case BPF_JMP | BPF_JGT | BPF_X:
      case BPF_JMP | BPF_JGE | BPF_X:
      case BPF_JMP | BPF_JEQ | BPF_X:
      case BPF_JMP | BPF_JSET | BPF_X:
        if (pred_) pred_cond_jump(i, in);
        else if (pred_form_) split_jump(in, i);
        else cond_jump(i, in);
        break;

      case BPF_LD | BPF_W | BPF_ABS:
      case BPF_LD | BPF_H | BPF_ABS:
      case BPF_LD | BPF_B | BPF_ABS:
        if (in_ancillary_window(K)) ancillary(K - static_cast<uint32_t>(SKF_AD_OFF));
        else load_abs(size_of(in.code), K);
        break;
      case BPF_LD | BPF_W | BPF_IND:
      case BPF_LD | BPF_H | BPF_IND:
      case BPF_LD | BPF_B | BPF_IND: load_ind(size_of(in.code), K); break;
      case BPF_LDX | BPF_B | BPF_MSH:
        if (K < 0x80000000u) {
          cmp(r8d, K + 1);
          jump(Cond::B, cur_->stub);
          movzx(ecx, byte[rdi + static_cast<int>(K)]);
          and_(ecx, 0xf);
          shl(ecx, 2);
        } else {
          jump(Cond::Always, cur_->stub);  // negative offsets: the helper's job
        }
        break;
      case BPF_LD | BPF_W | BPF_LEN: load_len(eax); break;
      case BPF_LDX | BPF_W | BPF_LEN: load_len(ecx); break;
      case BPF_LD | BPF_IMM: mov_imm(eax, K); break;
      case BPF_LDX | BPF_IMM: mov_imm(ecx, K); break;
      case BPF_LD | BPF_MEM: mov(eax, dword[rsp + static_cast<int>(4 * K)]); break;
      case BPF_LDX | BPF_MEM: mov(ecx, dword[rsp + static_cast<int>(4 * K)]); break;
      case BPF_ST:
        if (pred_) pred_store(i, eax, K);
        else mov(dword[rsp + static_cast<int>(4 * K)], eax);
        break;
      case BPF_STX:
        if (pred_) pred_store(i, ecx, K);
        else mov(dword[rsp + static_cast<int>(4 * K)], ecx);
        break;
      case BPF_MISC | BPF_TAX: mov(ecx, eax); break;
      case BPF_MISC | BPF_TXA: mov(eax, ecx); break;
      case BPF_RET | BPF_K:
        if (pred_) {
          pred_ret(i, in);
          break;
        }
        mov_imm(eax, K);
        epilogue();
        break;
      case BPF_RET | BPF_A:
        if (pred_) pred_ret(i, in);
        else epilogue();
        break;
      default:
        throw std::runtime_error("jit: opcode not handled");  // unreachable after the checker
    }
  }

  static uint32_t size_of(uint16_t code) {
    switch (bpf_size(code)) {
      case BPF_W: return 4;
      case BPF_H: return 2;
      default: return 1;
    }
  }

  void div_k(uint16_t code, uint32_t k) {
    bool mod = bpf_op(code) == BPF_MOD;
    if (!in_.blind && (k & (k - 1)) == 0) {  // a power of two: shift or mask
      if (mod) {
        and_(eax, k - 1);
      } else {
        int sh = __builtin_ctz(k);
        if (sh) shr(eax, sh);
      }
      return;
    }
    imm_to_r9(k);
    xor_(edx, edx);
    div(r9d);
    if (mod) mov(eax, edx);
  }

  void load_abs(uint32_t size, uint32_t k) {
    if (k >= 0x80000000u) {  // SKF_NET_OFF / SKF_LL_OFF and beyond: the helper decides
      jump(Cond::Always, cur_->stub);
      return;
    }
    // The read fits the head when headlen >= k + size (no overflow: k < 2^31).
    cmp(r8d, k + size);
    jump(Cond::B, cur_->stub);
    const int d = static_cast<int>(k);
    if (size == 4) {
      mov(eax, dword[rdi + d]);
      bswap(eax);
    } else if (size == 2) {
      movzx(eax, word[rdi + d]);
      rol(ax, 8);
    } else {
      movzx(eax, byte[rdi + d]);
    }
  }

  void load_ind(uint32_t size, uint32_t k) {
    // off = X + k with 32-bit wrap-around, then the 64-bit end compared with headlen.
    lea(edx, ptr[rcx + static_cast<int>(k)]);
    lea(r9, ptr[rdx + static_cast<int>(size)]);
    cmp(r9, r8);
    jump(Cond::A, cur_->stub);
    if (size == 4) {
      mov(eax, dword[rdi + rdx]);
      bswap(eax);
    } else if (size == 2) {
      movzx(eax, word[rdi + rdx]);
      rol(ax, 8);
    } else {
      movzx(eax, byte[rdi + rdx]);
    }
  }

  // Around a helper call: a program without scratch memory has no frame, so the call
  // makes one for itself (keeping rsp 16-byte aligned at the call).
  void save_for_call() {
    if (!frame_) sub(rsp, kFrame);
    mov(dword[rsp + kSaveA], eax);
    mov(dword[rsp + kSaveX], ecx);
    mov(qword[rsp + kSaveV], rsi);  // the view, or a linear image's wire_len
    if (in_.linear) {
      mov(qword[rsp + kSaveP], rdi);
      mov(dword[rsp + kSaveH], r8d);
    }
    if (loop_) mov(dword[rsp + kSaveB], r11d);  // caller-saved: the call may clobber it
  }

  // Restores X and the view; the saved A comes back in r9d for whoever needs it.
  void restore_after_call() {
    mov(rsi, qword[rsp + kSaveV]);
    mov(ecx, dword[rsp + kSaveX]);
    mov(r9d, dword[rsp + kSaveA]);
    if (loop_) mov(r11d, dword[rsp + kSaveB]);
    reload_packet();  // a linear image's head comes back from the frame: before it goes
    if (!frame_) add(rsp, kFrame);
  }

  // LD/LDX LEN: the view's wire_len, or a linear image's esi.
  void load_len(const Xbyak::Reg32& r) {
    if (in_.linear) mov(r, esi);
    else mov(r, dword[rsi + static_cast<int>(offsetof(PacketView, wire_len))]);
  }

  // The address of PacketView field `off` (offsetof) through the view in rsi.
  Xbyak::RegExp view_field(size_t off) const { return Xbyak::RegExp(rsi) + static_cast<int>(off); }

  // Ancillary loads that only read the view's metadata are inline (what
  // convert_bpf_extensions turns into single loads); nlattr, pay_offset and random call
  // load_ancillary. The inline forms equal load_ancillary's cases one for one.
  bool ancillary_inline(uint32_t ad) {
    constexpr size_t m = offsetof(PacketView, meta);
    switch (ad) {
      case SKF_AD_PROTOCOL:  // ntohs(skb->protocol)
        movzx(eax, word[view_field(m + offsetof(PacketMeta, protocol))]);
        rol(ax, 8);
        return true;
      case SKF_AD_VLAN_TPID:
        movzx(eax, word[view_field(m + offsetof(PacketMeta, vlan_proto))]);
        rol(ax, 8);
        return true;
      case SKF_AD_PKTTYPE:
        movzx(eax, byte[view_field(m + offsetof(PacketMeta, pkt_type))]);
        and_(eax, 7);
        return true;
      case SKF_AD_IFINDEX:
      case SKF_AD_HATYPE:  // no device: the program ends returning A
        cmp(byte[view_field(m + offsetof(PacketMeta, has_dev))], 0);
        jump(Cond::E, exit_a_);
        if (ad == SKF_AD_IFINDEX) mov(eax, dword[view_field(m + offsetof(PacketMeta, ifindex))]);
        else movzx(eax, word[view_field(m + offsetof(PacketMeta, hatype))]);
        return true;
      case SKF_AD_MARK: mov(eax, dword[view_field(m + offsetof(PacketMeta, mark))]); return true;
      case SKF_AD_RXHASH: mov(eax, dword[view_field(m + offsetof(PacketMeta, hash))]); return true;
      case SKF_AD_CPU: mov(eax, dword[view_field(m + offsetof(PacketMeta, cpu))]); return true;
      case SKF_AD_QUEUE: movzx(eax, word[view_field(m + offsetof(PacketMeta, queue_mapping))]); return true;
      case SKF_AD_VLAN_TAG: movzx(eax, word[view_field(m + offsetof(PacketMeta, vlan_tci))]); return true;
      case SKF_AD_VLAN_TAG_PRESENT:
        static_assert(sizeof(PacketMeta::vlan_present) == 1 && sizeof(PacketMeta::has_dev) == 1);
        movzx(eax, byte[view_field(m + offsetof(PacketMeta, vlan_present))]);
        return true;
      case SKF_AD_ALU_XOR_X: xor_(eax, ecx); return true;
      default: return false;
    }
  }

  void ancillary(uint32_t ad) {
    if (in_.linear) throw std::runtime_error("ancillary load in a linear image");
    if (ancillary_inline(ad)) return;
    save_for_call();
    mov(edx, eax);
    mov(rdi, rsi);
    mov(esi, ad);
    // ecx already holds X, the fourth argument.
    mov(rax, reinterpret_cast<uint64_t>(&helper_ancillary));
    call(rax);
    restore_after_call();
    mov(rdx, rax);
    shr(rdx, 32);
    jump(Cond::NE, exit_a_);  // the program ends returning A (eax)
  }

  // The out-of-line slow path of packet load i: call load_packet, then continue at i+1.
  void stub(Inst& s) {
    const size_t i = s.i;
    const bool pred = s.pred;
    const Insn& in = in_.prog[i];
    const bool ind = bpf_mode(in.code) == BPF_IND;
    const bool msh = bpf_class(in.code) == BPF_LDX;
    L(s.stub);
    if (pred) {  // off the path: nothing to load
      cmp(r10d, b_.first[i]);
      jump(Cond::NE, s.after);
    }
    save_for_call();
    // The offset: the wrapped X + k the fast path computed, or k. helper_load_linear
    // takes it first, helper_load second (after the view).
    const Xbyak::Reg32 off = in_.linear ? edi : esi;
    if (ind) mov(off, edx);
    else mov(off, in.k);
    if (in_.linear) {  // helper_load_linear(off, size, p, buflen, wire_len)
      mov(esi, size_of(in.code));
      mov(rdx, qword[rsp + kSaveP]);
      mov(ecx, dword[rsp + kSaveH]);
      mov(r8d, dword[rsp + kSaveV]);
      mov(rax, reinterpret_cast<uint64_t>(&helper_load_linear));
    } else {
      mov(rdi, qword[rsp + kSaveV]);
      mov(edx, size_of(in.code));
      mov(rax, reinterpret_cast<uint64_t>(&helper_load));
    }
    call(rax);
    restore_after_call();
    mov(rdx, rax);
    shr(rdx, 32);
    jump(Cond::NE, ret0_);  // outside the packet: the program returns 0
    if (msh) {
      and_(eax, 0xf);
      shl(eax, 2);
      mov(ecx, eax);
      mov(eax, r9d);  // A as it was before the load
    }
    if (pred) {  // the call clobbered r10, r11: on the path they are this block and 0
      mov(r10d, b_.first[i]);
      if (!ret_table_) mov(r11d, 0);
      jump(Cond::Always, s.after);
    } else {
      jump(Cond::Always, lab_[i + 1]);
    }
  }

  // Sets the flags for conditional jump `in`; returns the condition under which it is
  // taken (unsigned compares, as cBPF's).
  Cond compare(const Insn& in) {
    const bool x = bpf_src(in.code) == BPF_X;
    const uint16_t op = bpf_op(in.code);
    if (op == BPF_JSET) {
      if (x) test(eax, ecx);
      else if (in_.blind) { imm_to_r9(in.k); test(eax, r9d); }
      else test(eax, in.k);
      return Cond::NE;  // taken when A & K != 0
    }
    if (x) cmp(eax, ecx);
    else if (in_.blind) { imm_to_r9(in.k); cmp(eax, r9d); }
    else cmp(eax, in.k);
    switch (op) {
      case BPF_JGT: return Cond::A;
      case BPF_JGE: return Cond::AE;
      default: return Cond::E;
    }
  }

  // Conditional jump: compare, then branch to jt/jf with fall-through where one is 0.
  void cond_jump(size_t i, const Insn& in) {
    if (in.jt == in.jf) {  // both ways lead to one place: no test needed
      if (in.jt) jump(Cond::Always, lab_[i + 1 + in.jt]);
      return;
    }
    const Cond t = compare(in);
    Cond f;  // the not-taken condition
    switch (t) {
      case Cond::A: f = Cond::BE; break;
      case Cond::AE: f = Cond::B; break;
      case Cond::E: f = Cond::NE; break;
      default: f = Cond::E; break;
    }
    if (!in_.blind && is_ret_k(i + 1 + in.jt) && is_ret_k(i + 1 + in.jf)) {
      // Both ways return a constant (the last test of most libpcap filters): choose the
      // value with a cmov instead of a branch that mixed traffic would mispredict.
      // Plain movs keep the flags (mov_imm's xor would not).
      mov(eax, in_.prog[i + 1 + in.jf].k);
      mov(edx, in_.prog[i + 1 + in.jt].k);
      switch (t) {
        case Cond::A: cmova(eax, edx); break;
        case Cond::AE: cmovae(eax, edx); break;
        case Cond::E: cmove(eax, edx); break;
        default: cmovne(eax, edx); break;
      }
      epilogue();
      return;
    }
    if (in.jt == 0) {  // fall through on true
      jump(f, lab_[i + 1 + in.jf]);
      return;
    }
    jump(t, lab_[i + 1 + in.jt]);
    if (in.jf) jump(Cond::Always, lab_[i + 1 + in.jf]);
  }

  bool is_ret_k(size_t target) const { return in_.prog[target].code == (BPF_RET | BPF_K); }

  const PassInput& in_;
  const size_t n_;
  std::vector<Xbyak::Label> lab_;   // lab_[i]: start of instruction i
  std::vector<Xbyak::Label> head_;  // head_[l]: entry of the region headed by block l
  Xbyak::Label ret0_, exit_a_;
  std::deque<Inst> insts_;  // every emitted instruction copy (a deque: labels stay put)
  Inst* cur_ = nullptr;     // the copy being emitted
  std::vector<uint8_t> needs_stub_;
  Blocks b_;  // predicated form: the basic blocks
  std::vector<uint8_t> split_;  // by leader: the block ends in a real branch (split form)
  std::vector<Region> regions_;
  const std::vector<uint8_t>* ra_ = nullptr;  // the current region's restore flags
  const std::vector<uint8_t>* rx_ = nullptr;
  bool saves_ = false;     // some block saves A or X at entry (ebx, ebp pushed)
  bool ret_table_ = true;  // every RET is `ret #k`: the result is looked up, not cmov'd
  Xbyak::Label ret_values_;
  const bool pred_form_;  // the predicated form (split or not)
  bool pred_ = false;     // the instruction being emitted is predicated
  std::vector<Site> sites_;
  bool frame_ = false, packet_ = false;
  bool loop_ = false;  // a backward jump: r11d holds the budget left (bounded programs)
  uint64_t rng_;
};

}  // namespace

void emit_pass(const PassInput& in, PassOutput* out) {
  // Generous per-instruction budget: the longest instruction plus its slow path is
  // well under 160 bytes; xbyak throws if a program ever exceeds it.
  const size_t cap = 256 + in.prog.size() * 160 * (in.split ? kMaxRegions + 1 : 1);
  std::vector<uint8_t> buf(cap);
  auto pass = std::make_unique<Pass>(in, buf.data(), cap);
  pass->run(out);
}

}  // namespace pktpath::bpf::jit_detail
