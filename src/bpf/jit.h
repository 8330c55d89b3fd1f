// The x86-64 JIT for classic BPF: a checked program becomes one straight-line
// machine-code image (xbyak), mapped W^X — written while read+write, then switched to
// read+execute, never both. Program::load(…, Engine::Jit) uses it; when the JIT cannot
// compile a program, the program runs on the threaded engine and says why
// (Program::jit_fallback_reason).
//
// Register plan (System V, the RunFn signature `u32 (const void* image, const PacketView&)`):
//   eax = A, ecx = X (shift-by-X uses cl directly), rsi = the PacketView,
//   rdi = packet head pointer, r8 = head length, edx/r9 scratch (div uses edx:eax).
//   M[16] and the slow-path save slots live in a 120-byte frame, made at entry only when
//   the program uses scratch memory (otherwise only around slow-path helper calls).
//   r11 = the budget left of a bounded program with a backward jump (saved across calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "bpf/insn.h"
#include "bpf/program.h"

namespace pktpath::bpf {

// The two shapes of code the JIT emits for a program:
//   Branching   one x86 branch per cBPF conditional jump (any program);
//   Predicated  the whole (forward-only) program as one straight line that every packet
//               runs: each basic block runs unconditionally, then commits or undoes its
//               effect on A and X with cmov depending on whether the packet's path is in
//               it (a "next block" register chooses the path, branch-free). No
//               data-dependent branch is left to mispredict on mixed traffic; the price is
//               running every block, so it is chosen only for short programs.
//   Split       Predicated after a real branch on the program's first test (and on the
//               tests of the same value that follow it alone, as libpcap's ethertype
//               chain): each region those branches lead to is one predicated straight
//               line, so a packet runs only the blocks its branch can reach.
enum class JitForm : uint8_t {
  Auto,        // for a program of at most kPredicatedMaxInsns instructions that
               // qualifies: Split where the regions save enough blocks' runs on the
               // longest path (jit_emit.cc kMinSplitGain), else Predicated; otherwise
               // Branching
  Branching,
  Predicated,  // whenever the program qualifies; Branching otherwise
  Split,       // likewise
};

// Which programs qualify for the predicated form: no constant blinding (checked by the
// JIT), forward jumps only, and only instructions it handles (every load, ALU op and jump
// except division or modulo by X and the ancillary loads that call a helper or can end
// the program early).
inline constexpr size_t kPredicatedMaxInsns = 64;
bool predicated_jit_ok(std::span<const Insn> prog);

struct JitOptions {
  JitForm form = JitForm::Auto;
  // Constant blinding (as Linux's bpf_jit_harden): every immediate that reaches the
  // image is stored XORed with a random key and decoded at run time.
  bool blind = false;
  // Program::load: when the JIT fails, run on the threaded engine (true) or reject the
  // program (false: the tests, so that a silent fallback cannot hide a JIT bug).
  bool allow_fallback = true;
  // Tests: make the compiler fail, to exercise the fallback to the threaded engine.
  bool force_failure = false;
};

// The executable image a PreparedImage from the JIT owns (PreparedImage.owner).
struct JitCode {
  void* mem = nullptr;     // start of the mapping: the entry point
  size_t map_len = 0;      // bytes mapped (whole pages)
  size_t code_len = 0;     // bytes of code
  unsigned passes = 0;     // emission passes until the jump encodings converged
  bool blinded = false;    // immediates stored XORed with a random key (JitOptions::blind)
  bool predicated = false; // emitted in the predicated form (JitForm)
  unsigned regions = 0;    // predicated straight lines in the image (1: Predicated; more: Split)
  JitCode() = default;
  JitCode(const JitCode&) = delete;  // owns the mapping
  JitCode& operator=(const JitCode&) = delete;
  ~JitCode();
};

// Compiles with explicit options; prepare_jit (program.h) is this with JitOptions{}.
bool prepare_jit_with(std::span<const Insn> prog, const JitOptions& opt, PreparedImage* out,
                      std::string* err);
// The same for a program that passed only userland rules (check.h) and runs bounded:
// the scratch cells it reads start at 0, and a backward `ja` charges the program's length
// against kUserlandBound, the run ending with 0 at the same jump as on the interpreters.
// Such a program compiles in the branching form when it loops (the predicated forms take
// forward jumps only).
bool prepare_jit_bounded(std::span<const Insn> prog, const JitOptions& opt, PreparedImage* out,
                         std::string* err);

// The JitCode behind an image prepare_jit made (nullptr for other engines' images).
const JitCode* jit_code_of(const PreparedImage& img);

}  // namespace pktpath::bpf
