// The qdisc watchdog (struct qdisc_watchdog): a Cpu timer that reschedules a shaping
// qdisc (tbf, htb) when its next packet may leave. Root lock held when scheduling.
#pragma once

#include <cstdint>

#include "core/cpu.h"
#include "sched/qdisc.h"

namespace pktpath {

class QdiscWatchdog {
 public:
  explicit QdiscWatchdog(Qdisc& q) : timer_(&QdiscWatchdog::fired, &q) {}
  // mirrors qdisc_watchdog_cancel: synchronous, whatever Cpu armed it.
  ~QdiscWatchdog() { cancel(); }
  void cancel() { timer_.cancel(); }

  // mirrors qdisc_watchdog_schedule_range_ns (delta 0): nothing once deactivated; a
  // timer already queued for this expiry stays; else (re)armed, pinned to this Cpu.
  void schedule(Cpu& cpu, uint64_t expires) {
    auto* q = static_cast<Qdisc*>(timer_.owner());
    if (q->deactivated()) return;
    if (timer_.queued() && timer_.expires_ns() == expires) return;
    cpu.arm_timer(&timer_, expires);
  }

 private:
  // mirrors qdisc_watchdog: reschedule the qdisc on the Cpu the timer fired on. Takes no
  // lock: reset and destroy cancel it synchronously, possibly under the root lock.
  static void fired(CpuTimer& t, Cpu& cpu) { static_cast<Qdisc*>(t.owner())->schedule(cpu); }

  CpuTimer timer_;
};

}  // namespace pktpath
