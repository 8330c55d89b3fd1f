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

struct Blocks {
  std::vector<uint8_t> leader;   // leader[i]: instruction i starts a block
  std::vector<uint32_t> first;   // first[i]: the leader of i's block
  std::vector<uint8_t> writes_a; // by leader: some instruction of the block writes A
  std::vector<uint8_t> writes_x; // by leader: ... writes X
  bool last_in_block(size_t i) const { return i + 1 == leader.size() || leader[i + 1]; }
};

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
      if (bpf_op(in.code) == BPF_JA) b.leader[i + 1 + in.k] = 1;
      else b.leader[i + 1 + in.jt] = b.leader[i + 1 + in.jf] = 1;
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
  return b;
}

}  // namespace pktpath::bpf
