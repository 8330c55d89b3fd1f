// tcpdump's command line, as the `capture`/`tcpdump` script line and `pktpath tcpdump`
// take it: getopt's rules (flags combine, `-ni eth0`, `-c10` or `-c 10`, options may
// follow the filter words, `--` ends them) and the filter as the remaining words joined
// with spaces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/tap.h"

namespace pktpath::cli {

struct TcpdumpArgs {
  std::string dev;                        // -i DEV, or "any"; empty: none given
  uint64_t count = 0;                     // -c N (0: none)
  uint32_t snaplen = kTapDefaultSnaplen;  // -s N (0 means 262144, as tcpdump)
  std::string write;                      // -w FILE, "-" for standard output
  std::string read;                       // -r FILE
  int dump = 0;                           // -d / -dd / -ddd: the number of d's (3 and more: -ddd)
  int verbose = 0;                        // -v: the IP header's fields and checksums (more v: as -v)
  bool link_header = false;               // -e
  bool packet_buffered = false;           // -U
  bool json = false;                      // --json (pktpath's own)
  TapDirection direction = TapDirection::InOut;  // -Q in|out|inout
  std::string filter;                            // the words after the options, joined with spaces
  bool any() const { return dev == "any"; }
};

// `cmd` names the command in messages ("capture", "tcpdump"). On error: false, with
// err.word the offending word and err.msg naming it.
bool parse_tcpdump_args(const std::vector<std::string>& words, const std::string& cmd,
                        TcpdumpArgs& out, ::pktpath::Error& err);

// The link type a filter is compiled for: DLT_LINUX_SLL for -i any, else DLT_EN10MB.
inline int tcpdump_linktype(const TcpdumpArgs& a) {
  return a.any() ? kTapLinkCooked : kTapLinkEthernet;
}

}  // namespace pktpath::cli

namespace pktpath::cli {

// The netmask tcpdump compiles with when pcap_lookupnet has none (a savefile, no
// interface, an interface without an IPv4 address, as every pktpath device): 0, so that
// `ip broadcast` compiles.
inline constexpr uint32_t kTcpdumpNetmask = 0;

// The filter compiled as tcpdump compiles it: for the savefile with -r, else for the link
// type (-i any: LINUX_SLL) and -s snapshot length. false with *err (libpcap's message).
bool tcpdump_compile(const TcpdumpArgs& a, bpf::Insns* out, std::string* err);
// -d / -dd / -ddd's listing (bpf_dump) of a program.
std::string tcpdump_listing(const bpf::Insns& prog, int dump);

}  // namespace pktpath::cli
