#include "core/stop_signal.h"

#include <signal.h>

namespace pktpath {

namespace {
std::atomic<int> g_pending{0};
std::atomic<std::atomic<bool>*> g_target{nullptr};
int g_depth = 0;  // scopes open (the threads that open them are the control thread)
struct sigaction g_old[3];
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

void on_stop_signal(int sig) {
  // SIGTERM/SIGHUP are not downgraded by a later SIGINT.
  int cur = g_pending.load(std::memory_order_relaxed);
  if (cur == 0 || cur == SIGINT) g_pending.store(sig, std::memory_order_relaxed);
  if (std::atomic<bool>* t = g_target.load(std::memory_order_relaxed)) t->store(true, std::memory_order_relaxed);
}
}  // namespace

StopSignalScope::StopSignalScope() {
  if (g_depth++ > 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a sleeping wait wakes to look
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &g_old[i]);
}

StopSignalScope::~StopSignalScope() {
  if (--g_depth > 0) return;
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_old[i], nullptr);
  consume_interrupt();
  if (const int sig = g_pending.exchange(0)) ::raise(sig);
}

int pending_stop_signal() { return g_pending.load(std::memory_order_relaxed); }

void consume_interrupt() {
  int expected = SIGINT;
  g_pending.compare_exchange_strong(expected, 0);
}

int take_stop_signal() { return g_pending.exchange(0); }

StopTarget::StopTarget(std::atomic<bool>* flag) : prev_(g_target.exchange(flag)) {
  if (pending_stop_signal() && flag) flag->store(true, std::memory_order_relaxed);
}
StopTarget::~StopTarget() { g_target.store(prev_); }

}  // namespace pktpath
