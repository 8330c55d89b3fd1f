// Where received packets end: pktpath has no IP stack, so what passes the receive hooks
// is delivered to its Net's host sink, which counts and frees it. One protocol is
// answered: an ICMP echo request (icmp_echo) when the Net answers them
// (net.ipv4.icmp_echo_ignore_all=0; 1 by default here, since nothing else replies),
// so ping-style traffic can be generated and answered on lo and veth.
#pragma once

#include <cstdint>

#include "core/cpu.h"
#include "core/packet.h"

namespace pktpath {

class Net;

struct HostStats {
  uint64_t delivered = 0;     // packets that reached the sink
  uint64_t in_echos = 0;      // ICMP echo requests (Icmp InEchos)
  uint64_t out_echo_reps = 0; // replies sent (Icmp OutEchoReps)
  uint64_t in_echo_reps = 0;  // echo replies received (Icmp InEchoReps)
};

// Delivery of one packet (takes it). Any datapath thread.
void host_deliver(Cpu& cpu, Packet* p);
HostStats host_stats(Net& net);
bool host_echo_enabled(Net& net);

}  // namespace pktpath
