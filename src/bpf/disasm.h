// Listings of a program: the `tcpdump -ddd` form (count, then "code jt jf k" lines, which
// parse_bytecode reads back), the tc one-line form, and a readable disassembly in the
// style of `tcpdump -d` / bpf_dbg, with ancillary loads named as bpf_asm writes them.
#pragma once

#include <string>

#include "bpf/insn.h"

namespace pktpath::bpf {

std::string format_ddd(const Insns& prog);       // "4\n40 0 0 12\n..."
std::string format_tc(const Insns& prog);        // "4,40 0 0 12,..."
std::string disassemble_insn(const Insn& in, size_t pc);  // "(000) ldh      [12]"
std::string disassemble(const Insns& prog);      // one line per instruction

}  // namespace pktpath::bpf
