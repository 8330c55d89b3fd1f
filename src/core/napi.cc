// NAPI scheduling and net_rx_action (net/core/dev.c).
#include "core/napi.h"

#include "core/cpu.h"
#include "base/compiler.h"

namespace pktpath {

void napi_schedule_now(Napi& n) { n.cpu->napi_add(n); }

bool napi_complete_done(Napi& n, int /*work_done*/) {
  uint32_t v = n.state.load(std::memory_order_relaxed);
  uint32_t want;
  do {
    // With MISSED set, SCHED stays: the instance is polled once more.
    want = (v & Napi::kMissed) ? Napi::kSched : 0;
  } while (!n.state.compare_exchange_weak(v, want, std::memory_order_acq_rel));
  if (v & Napi::kMissed) {
    napi_schedule_now(n);
    return false;
  }
  return true;
}

// mirrors ____napi_schedule (local) and the RPS IPI's effect (remote).
void Cpu::napi_add(Napi& n) {
  if (tls_current_ == this) {
    poll_.push(&n);
    return;
  }
  {
    LockGuard g(remote_.lock);
    n.poll_next = nullptr;
    Napi* head = remote_.head.load(std::memory_order_relaxed);
    if (head) remote_.tail->poll_next = &n; else remote_.head.store(&n, std::memory_order_release);
    remote_.tail = &n;
  }
  wake();
}

void Cpu::splice_remote_polls() {
  if (PP_LIKELY(remote_.head.load(std::memory_order_acquire) == nullptr)) return;
  PollList got;
  {
    LockGuard g(remote_.lock);
    got.head = remote_.head.load(std::memory_order_relaxed);
    got.tail = remote_.tail;
    remote_.head.store(nullptr, std::memory_order_release);  // as the backlog's qlen
    remote_.tail = nullptr;
  }
  poll_.splice(got);
}

unsigned Cpu::napi_polling() const {
  unsigned k = 0;
  for (const Napi* n = poll_.head; n; n = n->poll_next) ++k;
  return k;
}

namespace {

// mirrors __napi_poll: poll with the instance's weight; one that used all of it stays
// scheduled and goes to the back (repoll), the driver having left its state alone.
int napi_poll(Napi& n, Cpu& cpu, bool& repoll) {
  const int weight = n.weight;
  int work = 0;
  if (n.state.load(std::memory_order_acquire) & Napi::kSched) work = n.poll(n, cpu, weight);
  if (PP_LIKELY(work < weight)) return work;
  repoll = true;
  return work;
}

}  // namespace

// mirrors net_rx_action (6.1): the defer list is flushed at the top of every round;
// the budget is checked after each poll (a poll may take its whole weight even when
// less budget is left, as in the kernel).
void Cpu::net_rx_action() {
  // The kick's handler (trigger_rx_softirq) clears the flag before the softirq runs.
  if (PP_UNLIKELY(defer_.ipi_scheduled.load(std::memory_order_relaxed)))
    defer_.ipi_scheduled.store(0, std::memory_order_release);
  splice_remote_polls();
  if (PP_LIKELY(poll_.head == nullptr)) {
    defer_free_flush();
    return;
  }
  PollList list;
  list.splice(poll_);
  PollList repoll;
  int budget = static_cast<int>(opts_.netdev_budget);
  const uint64_t time_limit = clock_->now_ns() + uint64_t{opts_.netdev_budget_usecs} * 1000;
  for (;;) {
    defer_free_flush();
    Napi* n = list.pop();
    if (!n) break;
    bool again = false;
    budget -= napi_poll(*n, *this, again);
    if (again) repoll.push(n);
    if (PP_UNLIKELY(budget <= 0 || clock_->now_ns() >= time_limit)) {
      stats_.time_squeeze.add();
      break;
    }
  }
  // What is left, what was scheduled meanwhile, then the instances to poll again.
  list.splice(poll_);
  list.splice(repoll);
  poll_.splice(list);
}

void napi_wait_idle(Napi& n) {
  while (n.scheduled()) {
    if (Cpu* c = Cpu::current(); c && c == n.cpu)
      c->net_rx_action();
    else
      cpu_relax();
  }
}

}  // namespace pktpath
