// Listings of a program, byte-identical to libpcap's bpf_dump() (what `tcpdump -d`, `-dd`
// and `-ddd` print) and to bpf_image() for one instruction, plus tc's one-line form.
// Written by hand (no libpcap call) so the output does not depend on the installed
// libpcap; tests compare it with libpcap 1.10's bpf_image/bpf_dump and with tcpdump.
#pragma once

#include <string>

#include "bpf/insn.h"

namespace pktpath::bpf {

std::string format_ddd(const Insns& prog);  // -ddd: "4\n40 0 0 12\n..." (parse_bytecode reads it)
std::string format_dd(const Insns& prog);   // -dd:  "{ 0x28, 0, 0, 0x0000000c },\n..."
std::string format_tc(const Insns& prog);   // tc:   "4,40 0 0 12,..."
// -d, one instruction: "(000) ldh      [12]" (mirrors bpf_image, no newline).
std::string disassemble_insn(const Insn& in, size_t pc);
std::string disassemble(const Insns& prog);  // -d: one bpf_image line per instruction

}  // namespace pktpath::bpf
