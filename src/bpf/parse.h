// Program sources: tc's bytecode string, bytecode files (tc form or `tcpdump -ddd`),
// `tcpdump -dd` C arrays, and pcap-filter expressions compiled by libpcap.
// Every function returns false on bad input with *err naming the line/instruction index
// and the field ("insn 2: field jt: 300 out of range 0..255").
#pragma once

#include <string>
#include <string_view>

#include "bpf/insn.h"

namespace pktpath::bpf {

// tc's form: "N,code jt jf k,code jt jf k,..." — a count then N instructions, separated by
// commas or newlines (so `tcpdump -ddd` output parses too); a trailing separator is fine.
// Numbers are decimal or 0x-hex. The count must equal the number of instructions.
bool parse_bytecode(std::string_view text, Insns* out, std::string* err);

// `tcpdump -dd` form: "{ 0x28, 0, 0, 0x0000000c },\n..." — every {code, jt, jf, k} group.
bool parse_c_array(std::string_view text, Insns* out, std::string* err);

// A bytecode file: C-array form when it contains '{', else parse_bytecode. `#` starts a
// comment to the end of the line (whole-line or trailing); blank lines are skipped.
bool parse_bytecode_file_text(std::string_view text, Insns* out, std::string* err);
bool read_bytecode_file(const std::string& path, Insns* out, std::string* err);

struct CompileOptions {
  int linktype = 1;         // DLT_EN10MB
  int snaplen = 262144;
  bool optimize = true;
  uint32_t netmask = 0xffffffff;  // PCAP_NETMASK_UNKNOWN
  // When set, compile on this capture's own handle (pcap_open_offline), as `tcpdump -r`
  // does: its link type and snapshot length apply (linktype/snaplen above are ignored)
  // and libpcap refuses what a savefile cannot support (e.g. `inbound` on some DLTs).
  std::string savefile;
};

// pcap_compile on pcap_open_dead(linktype, snaplen), or on the savefile's handle.
bool compile_expression(const std::string& expr, const CompileOptions& opt, Insns* out,
                        std::string* err);

// "EN10MB", "DLT_EN10MB", "en10mb" or a number -> DLT value; -1 if unknown.
int parse_linktype(std::string_view name);

}  // namespace pktpath::bpf
