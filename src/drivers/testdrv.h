// testdrv: a driver whose behaviour tests (and scripts) control, for fault tests:
// return BUSY on every Nth call, stop the queue after N packets, record the order of
// transmitted packets (by their `mark`). Uses the per-queue tx lock (not LLTX), so the
// locked driver hand-off is exercised too. Transmitted packets are counted and freed.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/netdevice.h"

namespace pktpath {

struct TestDrvState final : DriverState {
  // Behaviour (set while no traffic runs).
  uint32_t busy_every = 0;  // N > 0: every Nth start_xmit call returns BUSY
  uint32_t stop_after = 0;  // N > 0: stop the queue after N more transmitted packets
  bool record = false;      // record marks of transmitted packets (up to capacity)
  // Observations (read after traffic).
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> busy_returned{0};
  std::atomic<uint64_t> transmitted{0};
  std::atomic<uint64_t> xmit_more_seen{0};
  std::vector<uint32_t> marks;  // reserved up front: no allocation while sending
};

TestDrvState& testdrv_state(NetDevice& dev);

}  // namespace pktpath
