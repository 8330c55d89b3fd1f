// Basic blocks of a forward-only classic BPF program, in program order (a topological
// order, since every jump goes forward): what the predicated forms of the JIT and the
// threaded engine run as one straight line (jit.h JitForm, program.h ThreadedForm).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bpf/insn.h"

namespace pktpath::bpf {

// A jump or a return ends its block; what follows it starts one.
inline bool ends_block(const Insn& in) { return bpf_class(in.code) == BPF_JMP || bpf_class(in.code) == BPF_RET; }

// Which of A and X an instruction reads and writes (ancillary loads that call a helper
// read both).
struct AxUse {
  bool use_a = false, use_x = false, def_a = false, def_x = false;
};
inline AxUse ax_use(const Insn& in) {
  AxUse u;
  const uint16_t code = in.code, cls = bpf_class(code);
  switch (cls) {
    case BPF_LD:
      u.def_a = true;
      u.use_x = bpf_mode(code) == BPF_IND;
      if (bpf_mode(code) == BPF_ABS && in_ancillary_window(in.k)) u.use_a = u.use_x = true;
      break;
    case BPF_LDX: u.def_x = true; break;
    case BPF_ALU:
      u.use_a = u.def_a = true;
      u.use_x = bpf_src(code) == BPF_X && bpf_op(code) != BPF_NEG;
      break;
    case BPF_JMP:
      u.use_a = bpf_op(code) != BPF_JA;
      u.use_x = u.use_a && bpf_src(code) == BPF_X;
      break;
    case BPF_RET: u.use_a = bpf_rval(code) == BPF_A; break;
    case BPF_ST: u.use_a = true; break;
    case BPF_STX: u.use_x = true; break;
    default:  // BPF_MISC
      if (code == (BPF_MISC | BPF_TAX)) u.use_a = u.def_x = true;
      else u.use_x = u.def_a = true;
      break;
  }
  return u;
}

struct Blocks {
  std::vector<uint8_t> leader;   // leader[i]: instruction i starts a block
  std::vector<uint32_t> first;   // first[i]: the leader of i's block
  std::vector<uint8_t> writes_a; // by leader: some instruction of the block writes A
  std::vector<uint8_t> writes_x; // by leader: ... writes X
  // By leader: the block writes A (X) and a jump over it lands where A (X) is still read,
  // so a path that skips the block needs its A (X) back. Otherwise a block off the path
  // may leave A (X) as it made it.
  std::vector<uint8_t> restore_a, restore_x;
  std::vector<uint8_t> live_a, live_x;  // by instruction (and n): A (X) is read before written from here
  bool last_in_block(size_t i) const { return i + 1 == leader.size() || leader[i + 1]; }
};

// Blocks::restore_a, _x for the blocks of `region` (by leader: the block is in it) run
// alone in program order: only the region's own jumps skip a block. The whole program's
// flags are those of the region holding every block.
inline void restores_within(std::span<const Insn> prog, const Blocks& b, const std::vector<uint8_t>& region,
                            std::vector<uint8_t>* restore_a, std::vector<uint8_t>* restore_x) {
  const size_t n = prog.size();
  restore_a->assign(n, 0);
  restore_x->assign(n, 0);
  for (size_t p = 0; p < n; ++p) {
    if (bpf_class(prog[p].code) != BPF_JMP || !region[b.first[p]]) continue;
    const Successors next = successors(prog[p], p);
    for (unsigned e = 0; e < next.n; ++e) {
      const size_t q = next.to[e];
      // Every block of the region strictly between p's block and q is skipped by this edge.
      for (size_t l = p + 1; l < q; ++l) {
        if (!b.leader[l] || !region[l]) continue;
        (*restore_a)[l] |= b.writes_a[l] && b.live_a[q];
        (*restore_x)[l] |= b.writes_x[l] && b.live_x[q];
      }
    }
  }
}

// The program must be checked and forward-only (every jump target inside it).
inline Blocks find_blocks(std::span<const Insn> prog) {
  const size_t n = prog.size();
  Blocks b;
  b.leader.assign(n, 0);
  b.first.assign(n, 0);
  b.writes_a.assign(n, 0);
  b.writes_x.assign(n, 0);
  if (n == 0) return b;
  b.leader[0] = 1;
  for (size_t i = 0; i < n; ++i) {
    const Insn& in = prog[i];
    if (bpf_class(in.code) == BPF_JMP) {
      const Successors next = successors(in, i);
      for (unsigned e = 0; e < next.n; ++e) b.leader[next.to[e]] = 1;
    }
    if (ends_block(in) && i + 1 < n) b.leader[i + 1] = 1;
  }
  size_t l = 0;
  for (size_t i = 0; i < n; ++i) {
    if (b.leader[i]) l = i;
    b.first[i] = static_cast<uint32_t>(l);
    const uint16_t code = prog[i].code, cls = bpf_class(code);
    if (cls == BPF_LD || cls == BPF_ALU || code == (BPF_MISC | BPF_TXA)) b.writes_a[l] = 1;
    if (cls == BPF_LDX || code == (BPF_MISC | BPF_TAX)) b.writes_x[l] = 1;
  }
  // Liveness of A and X at each instruction's entry (one backward pass: jumps go forward).
  std::vector<uint8_t> live_a(n + 1, 0), live_x(n + 1, 0);
  for (size_t i = n; i-- > 0;) {
    const AxUse u = ax_use(prog[i]);
    const Successors next = successors(prog[i], i);
    bool out_a = false, out_x = false;
    for (unsigned e = 0; e < next.n; ++e) {
      out_a = out_a || live_a[next.to[e]];
      out_x = out_x || live_x[next.to[e]];
    }
    live_a[i] = u.use_a || (out_a && !u.def_a);
    live_x[i] = u.use_x || (out_x && !u.def_x);
  }
  b.live_a = std::move(live_a);
  b.live_x = std::move(live_x);
  restores_within(prog, b, std::vector<uint8_t>(n, 1), &b.restore_a, &b.restore_x);
  return b;
}

}  // namespace pktpath::bpf
