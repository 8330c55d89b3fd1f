// The kernel's load-time checker for classic BPF: bpf_check_classic followed by
// check_load_and_stores. A program that passes can run on any engine without further
// bounds checks on jumps or scratch memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "bpf/insn.h"

namespace pktpath::bpf {

struct CheckResult {
  bool ok = true;
  int index = -1;      // offending instruction, -1 for whole-program reasons
  std::string reason;  // empty when ok; "insn 3: ..." otherwise
};

// True for the opcodes the kernel accepts in a socket filter (chk_code_allowed).
bool opcode_allowed(uint16_t code);

// Mirrors bpf_check_classic (+ check_load_and_stores).
CheckResult check_program(std::span<const Insn> prog);

}  // namespace pktpath::bpf
