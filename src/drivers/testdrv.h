// testdrv: a driver whose behaviour tests (and scripts) control, for fault tests:
// return BUSY on every Nth call, drop every Nth packet, spend a fixed time in each
// transmit, stop the queue after N packets, record the order of transmitted packets (by
// their `mark`). Uses the per-queue tx lock (not LLTX), so the locked driver hand-off is
// exercised too. Transmitted and dropped packets are counted and freed.
//
// Scripts set the knobs as link options (LinkKind::options):
//   ip link add dev t0 type testdrv busy_every 7 drop_every 11 xmit_delay_us 5
//   ip link set dev t0 type testdrv busy_every 0
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/netdevice.h"

namespace pktpath {

struct TestDrvState final : DriverState {
  // Behaviour (set while no traffic runs).
  uint32_t busy_every = 0;     // N > 0: every Nth start_xmit call returns BUSY
  uint32_t drop_every = 0;     // N > 0: every Nth packet taken is dropped (tx_dropped)
  uint32_t xmit_delay_us = 0;  // busy-wait this long in every start_xmit (a slow device)
  uint32_t stop_after = 0;     // N > 0: stop the queue after N more transmitted packets
  bool record = false;         // record marks of transmitted packets (up to capacity)
  // Observations (read after traffic).
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> busy_returned{0};
  std::atomic<uint64_t> taken{0};  // packets not handed back with BUSY
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> transmitted{0};
  std::atomic<uint64_t> xmit_more_seen{0};
  std::vector<uint32_t> marks;  // reserved up front: no allocation while sending
  // Copies of transmitted frames' linear bytes, for tests that check what was sent.
  // Allocates per packet: leave off for anything measured.
  bool record_frames = false;
  std::vector<std::vector<uint8_t>> frames;
};

TestDrvState& testdrv_state(NetDevice& dev);

}  // namespace pktpath
