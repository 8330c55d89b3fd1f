// SIGINT, SIGTERM and SIGHUP as requests to stop, so that every writer (a pcap tx device,
// `capture -w`, --trace) is flushed on the way out, as tcpdump flushes on all three.
// A long wait (a replay, `sleep`, pktgen) polls pending_stop_signal() and ends early;
// SIGINT ends only that wait (the script goes on, as Ctrl-C stops one kernel pktgen
// run), SIGTERM and SIGHUP end the run after the line. A signal handler can reach only
// static state: the pending signal and one stop target are the process's whole share.
#pragma once

#include <atomic>

namespace pktpath {

// While one lives, the three signals are caught (nested scopes share the outermost's
// handlers). Leaving the outermost with SIGTERM or SIGHUP still pending raises it again
// under the handler that was there before: outside a run the process ends as it would
// have.
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};
// The last stop signal not yet consumed, or 0.
int pending_stop_signal();
// A wait that ended on SIGINT consumes it; SIGTERM and SIGHUP stay pending.
void consume_interrupt();
// The pending stop signal, now handled by the caller (the run that ends on it), or 0.
int take_stop_signal();

// While it lives, a stop signal also stores true into `flag` (a running pktgen's stop).
class StopTarget {
 public:
  explicit StopTarget(std::atomic<bool>* flag);
  ~StopTarget();
  StopTarget(const StopTarget&) = delete;
  StopTarget& operator=(const StopTarget&) = delete;

 private:
  std::atomic<bool>* prev_;
};

}  // namespace pktpath
