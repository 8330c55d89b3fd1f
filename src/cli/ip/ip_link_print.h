// `ip link show` as a model and its two renderings: iproute2's text (ipaddress.c's
// print_linkinfo) and its JSON (`ip -j`, keys as iproute2 6.1 prints them). Execution
// fills the rows; printing formats them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace pktpath::cli {

struct LinkRow {
  int ifindex = 0;
  std::string name;
  std::vector<std::string> flags;  // BROADCAST, NOARP, UP, LOWER_UP, ...
  uint32_t mtu = 0;
  std::string qdisc;               // "noop" when down
  std::string operstate;           // UP, DOWN, UNKNOWN
  uint32_t txqlen = 0;
  uint32_t num_tx_queues = 0;
  uint32_t promiscuity = 0;
  uint32_t min_mtu = 68, max_mtu = 65535;
  std::string link_kind;           // dummy, testdrv, ... (shown with -d)
  std::string link;                // the peer, printed NAME@LINK (veth)
  std::string link_type = "ether"; // ether, loopback
  std::string address;
  std::string broadcast = "ff:ff:ff:ff:ff:ff";
  uint64_t rx_bytes = 0, rx_packets = 0, rx_dropped = 0;
  uint64_t tx_bytes = 0, tx_packets = 0, tx_dropped = 0;
};

struct LinkShowFormat {
  bool json = false;
  bool pretty = false;  // -p: indented JSON
  bool stats = false;   // -s: the RX/TX counters
  bool details = false; // -d: promiscuity, MTU bounds, the kind and its queues
};

void print_links(std::FILE* out, const std::vector<LinkRow>& rows, const LinkShowFormat& f);

}  // namespace pktpath::cli
