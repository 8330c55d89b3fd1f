// PacketSet: many packets in one contiguous buffer with a PacketView per packet — what
// `pktpath bpf run/bench`, the tests and the benchmarks feed the engines. Read from a
// pcap/pcapng file (libpcap), or made synthetically (deterministic Ethernet frames).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bpf/packet_view.h"

namespace pktpath::bpf {

class PacketSet {
 public:
  // Appends a packet of caplen bytes that was wirelen bytes long on the wire.
  void add(const uint8_t* p, uint32_t caplen, uint32_t wirelen);
  // Views point into this set's buffer; valid until the next add().
  const std::vector<PacketView>& views() const;
  size_t size() const { return lens_.size(); }
  const uint8_t* bytes(size_t i) const { return buf_.data() + offs_[i]; }
  uint32_t caplen(size_t i) const { return lens_[i]; }
  uint32_t wirelen(size_t i) const { return wire_[i]; }

  int linktype = 1;      // DLT_EN10MB
  int snaplen = 262144;

 private:
  std::vector<uint8_t> buf_;
  std::vector<size_t> offs_;
  std::vector<uint32_t> lens_, wire_;
  mutable std::vector<PacketView> views_;
  mutable bool views_ok_ = false;
};

// pcap or pcapng (pcap_open_offline); keeps the file's link type and snapshot length.
// On a read error (a file cut mid-record, say) *out still holds the packets read before
// it, as tcpdump prints them before the error. At most kMaxPcapBytes of packet data.
inline constexpr size_t kMaxPcapBytes = size_t{1} << 30;
bool read_pcap(const std::string& path, PacketSet* out, std::string* err);

// n deterministic frames of 60..128 bytes: Ethernet with IPv4/IPv6 (UDP, TCP, ICMP),
// ARP and 802.1Q VLAN-tagged IPv4; about 30% have an address in 192.168.2.0/24, some
// UDP/TCP use port 53, TCP flags vary (SYN in about a quarter).
PacketSet make_synthetic(size_t n, uint64_t seed = 1);

}  // namespace pktpath::bpf
