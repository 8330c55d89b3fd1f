// NAPI: a receive queue polled in batches (struct napi_struct). A driver schedules its
// instance when packets arrive (napi_schedule); the instance's Cpu polls it from
// net_rx_action with min(weight, remaining budget); a poll that did less than its
// weight completes it (napi_complete_done), one that used its whole weight is polled
// again.
//
// Concurrency: napi_schedule may be called from any thread; the SCHED bit makes sure an
// instance is on at most one poll list. Only the instance's Cpu (its owner thread) runs
// the poll function and napi_complete_done.
#pragma once

#include <atomic>
#include <cstdint>

namespace pktpath {

class Cpu;

struct Napi {
  static constexpr uint32_t kSched = 1u << 0;   // NAPI_STATE_SCHED: on a poll list or polling
  static constexpr uint32_t kMissed = 1u << 1;  // NAPI_STATE_MISSED: scheduled while polling

  // Returns the packets handled, at most `budget`. Fewer than budget: the poll has
  // called napi_complete_done (or the instance stays scheduled by its own choice).
  using PollFn = int (*)(Napi& n, Cpu& cpu, int budget);

  PollFn poll = nullptr;
  void* ctx = nullptr;  // the driver's queue
  int weight = 64;      // NAPI_POLL_WEIGHT
  Cpu* cpu = nullptr;   // the Cpu that polls it (where its interrupt would land)
  std::atomic<uint32_t> state{0};
  Napi* poll_next = nullptr;  // on a poll list, under that list's owner

  bool scheduled() const { return state.load(std::memory_order_acquire) & kSched; }
};

// mirrors napi_schedule_prep: true if the caller set SCHED and must put the instance on
// a poll list; false if it was already scheduled (then MISSED is set so the running poll
// looks once more).
inline bool napi_schedule_prep(Napi& n) {
  uint32_t v = n.state.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t want = (v & Napi::kSched) ? (v | Napi::kMissed) : (v | Napi::kSched);
    if (n.state.compare_exchange_weak(v, want, std::memory_order_acq_rel)) return !(v & Napi::kSched);
  }
}

// mirrors __napi_schedule: onto n.cpu's poll list (the local one from its owner thread,
// otherwise the remote list, waking the Cpu's thread if it sleeps).
void napi_schedule_now(Napi& n);

// mirrors napi_schedule.
inline void napi_schedule(Napi& n) {
  if (napi_schedule_prep(n)) napi_schedule_now(n);
}

// napi_disable's wait: returns once a scheduled poll of `n` has run out. The poll runs
// here when this thread drives n.cpu; otherwise n.cpu's own thread runs it.
void napi_wait_idle(Napi& n);

// mirrors napi_complete_done: clears SCHED, unless MISSED was set meanwhile, in which
// case the instance is put back on the poll list and false is returned.
bool napi_complete_done(Napi& n, int work_done);

}  // namespace pktpath
