// The qdisc watchdog (struct qdisc_watchdog): a Cpu timer that reschedules its qdisc
// when a packet the qdisc holds back becomes eligible (tbf's tokens, netem's
// time_to_send). Armed from dequeue under the root lock, pinned to the dequeuing Cpu.
#pragma once

#include <cstdint>

#include "core/cpu.h"
#include "sched/qdisc.h"

namespace pktpath {

class QdiscWatchdog {
 public:
  explicit QdiscWatchdog(Qdisc* q) : timer_(&QdiscWatchdog::fired, q) {}
  // mirrors qdisc_watchdog_cancel: synchronous, whatever Cpu armed it.
  ~QdiscWatchdog() { cancel(); }
  QdiscWatchdog(const QdiscWatchdog&) = delete;
  QdiscWatchdog& operator=(const QdiscWatchdog&) = delete;

  // mirrors qdisc_watchdog_schedule_range_ns (delta 0): nothing once deactivated; a
  // timer already queued for this expiry stays; else (re)armed, pinned to this Cpu.
  void schedule_ns(Cpu& cpu, uint64_t expires) {
    if (static_cast<Qdisc*>(timer_.owner())->deactivated()) return;
    if (timer_.queued() && timer_.expires_ns() == expires) return;
    cpu.arm_timer(&timer_, expires);
  }
  void cancel() { timer_.cancel(); }
  bool queued() const { return timer_.queued(); }
  uint64_t expires_ns() const { return timer_.expires_ns(); }

 private:
  // mirrors qdisc_watchdog: reschedule the qdisc's root (qdisc_root) on the Cpu the timer
  // fired on; a leaf (netem under an htb class) is dequeued through its parents, never on
  // its own. Takes no lock: reset and destroy cancel it synchronously, possibly under the
  // root lock.
  static void fired(CpuTimer& t, Cpu& cpu) {
    Qdisc* q = static_cast<Qdisc*>(t.owner());
    while (Qdisc* up = q->parent_qdisc()) q = up;
    q->schedule(cpu);
  }

  CpuTimer timer_;
};

}  // namespace pktpath
