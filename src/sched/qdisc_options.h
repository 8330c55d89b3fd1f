// Typed options a qdisc is created or changed with. The CLI turns tc's words into these;
// disciplines never parse text (STYLE.md: configuration parsing lives in src/cli).
#pragma once

#include <array>
#include <cstdint>
#include <variant>

namespace pktpath {

inline constexpr unsigned kTcPrioMax = 15;  // TC_PRIO_MAX: priomap has 16 entries

// pfifo / bfifo: limit in packets (pfifo) or bytes (bfifo). Unset: the device's
// tx_queue_len (times the MTU for bfifo), as fifo_init does.
struct FifoOptions {
  uint32_t limit = 0;
  bool limit_set = false;
};

// prio: number of bands (2..16) and the priority -> band map.
struct PrioOptions {
  uint32_t bands = 3;
  std::array<uint8_t, kTcPrioMax + 1> priomap = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
};

// tbf: rate in bytes/s, bucket size (burst) in bytes, and either a byte limit or a
// latency from which the limit is derived (tc computes limit = rate * latency + burst).
struct TbfOptions {
  uint64_t rate_bytes_ps = 0;
  uint32_t burst = 0;
  uint32_t limit = 0;
  uint64_t latency_ns = 0;
  bool limit_set = false;
  bool latency_set = false;
};

using QdiscOptions = std::variant<std::monostate, FifoOptions, PrioOptions, TbfOptions>;

}  // namespace pktpath
