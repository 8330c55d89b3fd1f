// tcpdump's one line per packet (`tcpdump -n`, with -e the link-level header, with -v the
// IP header's fields and the checksums tcpdump verifies at -v), for Ethernet and Linux
// cooked (SLL) captures: IPv4, IPv6, ARP, ICMP and ICMPv6, TCP (flags, relative sequence
// numbers as tcpdump keeps them per conversation, options, HTTP lines), UDP and DNS on
// port 53. What it does not decode is listed in docs/capture.md.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "core/result.h"

namespace pktpath::cli {

class PacketPrinter {
 public:
  // linktype: DLT_EN10MB or DLT_LINUX_SLL (others print the hex dump alone); verbose:
  // the number of -v.
  PacketPrinter(int linktype, bool link_header, int verbose = 0)
      : linktype_(linktype), link_header_(link_header), verbose_(verbose) {}
  // The packet's text, newline-terminated; timestamp in UTC.
  std::string format(const pcap_pkthdr& h, const uint8_t* data);

 private:
  struct Cursor;
  void ether(std::string& o, Cursor c);
  void cooked(std::string& o, Cursor c);
  void by_ethertype(std::string& o, uint16_t et, Cursor c, bool prefix);
  void ipv4(std::string& o, Cursor c, bool prefix);
  void ipv6(std::string& o, Cursor c, bool prefix);
  void arp(std::string& o, Cursor c, bool prefix);
  void tcp(std::string& o, Cursor c, uint32_t length, const uint8_t* src, const uint8_t* dst,
           int alen);
  void udp(std::string& o, Cursor c, uint32_t length, const std::string& src,
           const std::string& dst);
  void icmp_verbose(std::string& o, Cursor c, uint32_t length);
  // The transport checksum's pseudo-header sum for the packet being printed.
  uint64_t pseudo_sum(uint8_t proto, uint32_t length) const;

  int linktype_;
  bool link_header_;
  int verbose_;
  // The network header of the packet being printed, for checksums: its addresses and
  // whether it is a fragment (tcpdump verifies no checksum of a fragment).
  const uint8_t* l3_src_ = nullptr;
  const uint8_t* l3_dst_ = nullptr;
  int l3_alen_ = 0;
  bool l3_fragment_ = false;
  // tcpdump's tcp_seq_hash: per conversation (addresses and ports in one collating
  // order), the initial sequence numbers that relative ones count from.
  struct TcpBase {
    uint32_t seq = 0, ack = 0;
  };
  std::map<std::tuple<std::string, std::string, uint32_t>, TcpBase> tcp_seq_;
};

// tcpdump -r FILE [-c N] [-e] [-w OUT [-U]] [filter]: print (or, with -w, copy) the
// packets of a pcap or pcapng file that pass the filter, compiled for the file's link
// type and snapshot length. The "reading from file" line goes to stderr. false with
// err.msg on a bad file or filter (what was read before a read error is printed).
struct ReadRequest {
  std::string path, filter, write;
  uint64_t count = 0;
  bool link_header = false, packet_buffered = false;
  int verbose = 0;
};
bool tcpdump_read(const ReadRequest& r, std::FILE* out, ::pktpath::Error& err);

// A pcap file's packets printed as above (a tap's file read back); false on a bad file.
bool print_pcap_file(const std::string& path, bool link_header, std::FILE* out, std::string* err, int verbose = 0);

}  // namespace pktpath::cli
