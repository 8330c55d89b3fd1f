// The JIT's code emitter: one pass over a checked program into a byte buffer. jit.cc runs
// passes until the jump encodings converge, then maps the last pass's bytes W^X.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bpf/insn.h"

namespace pktpath::bpf::jit_detail {

struct PassInput {
  std::span<const Insn> prog;
  // One flag per jump site (in emission order): true = a 2-byte rel8 encoding fits.
  // Sites beyond the vector's end are emitted near (rel32).
  const std::vector<uint8_t>* short_ok = nullptr;
  bool blind = false;
  bool predicated = false;  // the predicated form (jit.h JitForm); the program qualifies
  // With predicated: the first test (and tests of the same value right after it) branch
  // for real, and each region the branches lead to is predicated on its own (JitForm::Split).
  bool split = false;
  bool split_auto = false;  // with split: keep one region where splitting saves too little (JitForm::Auto)
  // A userland program run under kUserlandBound (check.h): the scratch cells it reads
  // start at 0, and each backward `ja` taken charges the program's length against a
  // budget, ending the run with 0 once the charges pass the bound, as the interpreters do.
  // Without it a backward jump is refused.
  bool bounded = false;
  // The LinearFn entry (program.h): the packet pointer, wire length and buffer length come
  // in rsi, edx, ecx instead of a PacketView; wire_len stays in esi, and a load's slow
  // path builds the linear view itself. Programs with ancillary loads are refused.
  bool linear = false;
  uint64_t blind_seed = 0;
};

struct PassOutput {
  std::vector<uint8_t> code;
  // For every jump site: whether rel8 would reach its target in this pass's layout.
  std::vector<uint8_t> fits_short;
  unsigned regions = 0;  // predicated regions emitted (0: the branching form)
};

// The most predicated regions the split form makes (each is a copy of the blocks it reaches).
inline constexpr size_t kMaxRegions = 4;

// Emits one pass. Throws (Xbyak::Error / std::exception) when the assembler refuses.
void emit_pass(const PassInput& in, PassOutput* out);

}  // namespace pktpath::bpf::jit_detail
