// libFuzzer target for tcpdump's per-packet lines (`tcpdump -r`, capture printing): the
// input's first byte picks the link type, -e and -v, the rest is one packet, printed as
// captured and again as cut to half its length. Reads stay within the captured bytes
// (ASan checks), and every line ends in one newline.
#include <pcap/pcap.h>

#include <cstdlib>
#include <string>

#include "cli/tcpdump_print.h"

using pktpath::cli::PacketPrinter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  const int dlt = mode & 1 ? DLT_LINUX_SLL : DLT_EN10MB;
  PacketPrinter printer(dlt, mode & 2, mode & 4 ? 1 : 0);
  for (const size_t caplen : {size, size / 2}) {
    pcap_pkthdr h{};
    h.caplen = static_cast<uint32_t>(caplen);
    h.len = static_cast<uint32_t>(size) + (mode & 8 ? 100 : 0);  // the wire length may exceed it
    const std::string line = printer.format(h, data);
    if (line.empty() || line.back() != '\n') std::abort();
  }
  return 0;
}
