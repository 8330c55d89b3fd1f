// tcpdump's line for a DNS message on UDP port 53 (print-domain.c, `-n` and `-v`).
#pragma once

#include <cstdint>
#include <string>

namespace pktpath::cli {

// Appends the message's summary ("4660+ A? example.com. (29)", "4660 1/0/0 A 1.2.3.4
// (45)"; with `verbose` each answer names its owner). `msg` holds `caplen` captured bytes
// of a `length`-byte UDP payload; what the capture cuts off ends the text "[|domain]".
void dns_print(std::string& o, const uint8_t* msg, uint32_t caplen, uint32_t length, bool verbose);

}  // namespace pktpath::cli
