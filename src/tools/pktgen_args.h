// The `pktgen` script line: the flags of the kernel's
// samples/pktgen/pktgen_bench_xmit_mode_queue_xmit.sh (parameters.sh), so a line from a
// netdev report runs as written, plus pktpath's run controls.
//
//   pktgen -i DEV [-n COUNT] [-t THREADS] [-f FIRST_THREAD] [-s SIZE] [-m DST_MAC]
//          [-d DST_IP[/PREFIX]] [-p PORT[-PORT]] [-k] [-b BURST] [-c CLONE] [-w DELAY_NS]
//          [-v] [-x] [--mode start_xmit|queue_xmit|netif_receive] [--duration S]
//          [--repeat R] [--ab 'SETTING=A|B' [--ab-order abba|random[:SEED]]] [--pin|--no-pin]
//          [--rps] [--json]
//
// As the sample script: xmit_mode queue_xmit, flags QUEUE_MAP_CPU and NO_TIMESTAMP,
// COUNT 10000000, SIZE 60, DST_IP 198.18.0.42, DST_MAC 90:e2:ba:ff:ff:ff, and a burst
// above 1 refused in queue_xmit mode.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/ab_schedule.h"
#include "tools/pktgen_config.h"

namespace pktpath {

class Cpu;

struct PktgenAb {
  std::string setting;
  std::string a, b;
  AbOrder order = AbOrder::kBalanced;  // --ab-order abba|random[:SEED]
  uint64_t seed = 0;                   // random's; drawn from the clock when not given
};

struct PktgenCommand {
  PktgenConfig cfg;
  unsigned threads = 1;
  int first_core = 0;
  bool pin = false;
  bool no_pin = false;  // --no-pin: repeated and A/B runs float as single runs do
  bool rps = false;  // --rps: netif_receive on a partner thread's Cpu (see PktgenRunOptions)
  unsigned repeat = 1;
  std::optional<PktgenAb> ab;
  bool json = false;
  Cpu* caller_cpu = nullptr;  // PktgenRunOptions::caller_cpu
};

// Parses the words after `pktgen`. On error returns nullopt and sets *err to a message
// naming the offending flag or value, and *bad_word (if given) to that word.
std::optional<PktgenCommand> parse_pktgen_args(const std::vector<std::string>& words, std::string* err,
                                               std::string* bad_word = nullptr);

// "198.18.0.0/15" -> [min, max] host order (parse_addr in samples/pktgen/functions.sh).
bool parse_ipv4_range(std::string_view s, uint32_t* min, uint32_t* max);

}  // namespace pktpath
