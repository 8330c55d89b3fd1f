// Load-time checkers for classic BPF, in two acceptance modes:
//   Kernel    the kernel's rules (bpf_check_classic followed by check_load_and_stores,
//             then the jump-offset limit of bpf_convert_filter's translation to eBPF):
//             sockets, cls_bpf, taps. Jumps go forward, scratch cells are written before
//             they are read, so a program runs on any engine without further checks.
//   Userland  libpcap's rules (pcap_validate_filter, what bpf_filter runs): an
//             unconditional jump may go backward (libpcap's `protochain` loops), scratch
//             cells may be read before they are written (they read 0 here). Such programs
//             run with a bound on executed work (kUserlandBound).
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
  // Refused only by the translation rule (check_ebpf_jumps): every classic check passed.
  bool translation = false;
};

enum class Acceptance : uint8_t { Kernel, Userland };
const char* acceptance_name(Acceptance a);  // "kernel", "userland"

// True for the opcodes the kernel accepts in a socket filter (chk_code_allowed); libpcap's
// bpf_validate accepts the same set.
bool opcode_allowed(uint16_t code);

// Kernel: mirrors bpf_check_classic (+ check_load_and_stores, + check_ebpf_jumps).
// Userland: mirrors pcap_validate_filter, plus the rule both modes share that an ancillary
// offset (SKF_AD_OFF + n) must name a known field.
CheckResult check_program(std::span<const Insn> prog, Acceptance mode = Acceptance::Kernel);

// The kernel translates every accepted classic program to eBPF (bpf_convert_filter,
// net/core/filter.c) and refuses it when a jump of the translation does not fit the 16-bit
// `off` field. ebpf_expansion is how many eBPF instructions one classic instruction becomes
// (x86-64: efficient unaligned access, little-endian bitfields); check_ebpf_jumps applies
// the limit to a program that passed the classic checks (forward jumps inside it).
int ebpf_expansion(const Insn& in);
CheckResult check_ebpf_jumps(std::span<const Insn> prog);

// True when the program has an unconditional jump backward (only Userland accepts it).
bool has_backward_jump(std::span<const Insn> prog);

// The scratch cells that some path may read before it has written them (bit k: M[k]):
// the only cells a bounded program's run must clear first. A must-write analysis along
// every jump, backward ones included; cells only read after a store on every path
// (libpcap's protochain) need nothing.
uint16_t scratch_read_unset(std::span<const Insn> prog);

// Userland programs that the kernel would refuse run bounded: every backward jump taken
// charges the program's length, and a run whose charges pass this bound ends returning 0
// (the packet is not accepted). At most kUserlandBound + 4096 instructions run; every
// engine stops at the same jump, so results agree even at the bound.
inline constexpr int64_t kUserlandBound = int64_t{1} << 24;

}  // namespace pktpath::bpf
