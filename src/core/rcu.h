// RCU (liburcu, QSBR flavour): the one read-copy-update facility for configuration the
// datapath reads without a lock (tc filter lists, capture taps, netfilter hooks, nft
// rule snapshots).
//
// The contract (mirrors the kernel's rcu_read_lock_bh around nf_hook_egress, with QSBR's
// "quiescent state" replacing the explicit unlock):
//  - Reader threads (datapath Cpus that run hooks, filters or taps) register once with
//    rcu_reader_register() (or hold an RcuReader for their lifetime)
//    and call rcu_quiescent() regularly from their loop, at a point where they hold no
//    RCU-published pointer (between packets or bursts). A reader that
//    blocks or sleeps for long goes offline (rcu_offline / rcu_online) so writers do
//    not wait for it. Everything read through a published pointer stays valid until the
//    reader's next quiescent state.
//  - A thread that is not registered must not read published pointers while another thread
//    writes configuration (single-threaded use, e.g. tests and scripts, needs no
//    registration because writes and reads never overlap).
//  - Writers take an RcuWriterScope before their mutex, publish the new object (RcuPtr or
//    rcu_publish: a release store) and free the old one after a grace period: at once
//    with rcu_replace / RcuPtr::replace (synchronize_rcu, then free), or in batches with
//    an RcuRetireList (call_rcu). Writers may be registered readers too: liburcu takes a
//    registered caller offline while it waits, so this does not deadlock, provided the
//    caller holds no published pointer.
#pragma once

#include <cstdint>
#include <atomic>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace pktpath {

void rcu_reader_register();    // rcu_register_thread
void rcu_reader_unregister();  // rcu_unregister_thread
void rcu_quiescent();          // rcu_quiescent_state: "I hold no RCU-protected pointer"
void rcu_offline();            // rcu_thread_offline: about to block
void rcu_online();             // rcu_thread_online
// synchronize_rcu: returns once every registered reader has passed a quiescent state
// (or been offline) since the call started.
void rcu_synchronize();

// Writer-side guard: a registered reader thread that is online goes offline for the scope
// of a configuration change, so that it cannot hold up the grace period another writer is
// waiting for while it waits for that writer's mutex (which would deadlock). Every writer
// entry point (tc, taps, netfilter hooks, nft) takes one before its mutex.
class RcuWriterScope {
 public:
  RcuWriterScope();
  ~RcuWriterScope();
  RcuWriterScope(const RcuWriterScope&) = delete;
  RcuWriterScope& operator=(const RcuWriterScope&) = delete;

 private:
  bool was_online_;
};

// RAII registration for a reader thread's lifetime.
class RcuReader {
 public:
  RcuReader() { rcu_reader_register(); }
  ~RcuReader() { rcu_reader_unregister(); }
  RcuReader(const RcuReader&) = delete;
  RcuReader& operator=(const RcuReader&) = delete;
};

// rcu_assign_pointer on a head that lives elsewhere (a device's published pointers):
// publishes `next` with a release store and hands back what it replaced, for the caller to
// free after a grace period (rcu_replace, or an RcuRetireList).
template <typename T, typename D>
std::unique_ptr<const T, D> rcu_publish(std::atomic<const T*>& head, std::unique_ptr<const T, D> next) {
  return std::unique_ptr<const T, D>(head.exchange(next.release(), std::memory_order_acq_rel));
}

// Publish `next`, wait for a grace period, free the old object (rcu_replace_pointer,
// synchronize_rcu, kfree).
template <typename T, typename D>
void rcu_replace(std::atomic<const T*>& head, std::unique_ptr<const T, D> next) {
  std::unique_ptr<const T, D> old = rcu_publish(head, std::move(next));
  if (old) rcu_synchronize();
}

// An RCU-published pointer that owns what it points to: readers get() (an acquire load,
// rcu_dereference), writers replace() or exchange(). Destroying it frees the object at
// once: no reader may be left (the owner's own contract, e.g. a device being destroyed).
template <typename T, typename D = std::default_delete<const T>>
class RcuPtr {
 public:
  RcuPtr() = default;
  ~RcuPtr() { std::unique_ptr<const T, D> last(head_.load(std::memory_order_relaxed)); }
  RcuPtr(const RcuPtr&) = delete;
  RcuPtr& operator=(const RcuPtr&) = delete;

  const T* get() const { return head_.load(std::memory_order_acquire); }
  bool empty() const { return head_.load(std::memory_order_relaxed) == nullptr; }
  // Publish `next`; the old object is the caller's to retire.
  std::unique_ptr<const T, D> exchange(std::unique_ptr<const T, D> next) {
    return rcu_publish(head_, std::move(next));
  }
  // Publish `next`, wait for a grace period, free the old object.
  void replace(std::unique_ptr<const T, D> next) { rcu_replace(head_, std::move(next)); }
  std::atomic<const T*>& head() { return head_; }

 private:
  std::atomic<const T*> head_{nullptr};
};

// call_rcu in batches: retired objects are freed after one grace period that covers a
// whole batch, so a writer changing things in a loop does not wait for the readers once
// per change. Not thread-safe: the writer's mutex guards it.
//
// A staging list (RcuRetireList::staging()) never waits by itself: a writer collects in
// it what becomes unreachable only once its next publication is made, then splices it
// into the real list after publishing.
class RcuRetireList {
 public:
  static constexpr size_t kBatch = 64;
  RcuRetireList() = default;
  static RcuRetireList staging() { return RcuRetireList(SIZE_MAX); }
  RcuRetireList(RcuRetireList&& o) noexcept : pending_(std::move(o.pending_)), batch_(o.batch_) { o.pending_.clear(); }
  ~RcuRetireList() { barrier(); }
  RcuRetireList(const RcuRetireList&) = delete;
  RcuRetireList& operator=(const RcuRetireList&) = delete;

  template <typename T, typename D>
  void retire(std::unique_ptr<T, D> obj) {
    if (!obj) return;
    pending_.push_back([p = std::shared_ptr<T>(std::move(obj))]() mutable { p.reset(); });
    if (pending_.size() >= batch_) barrier();
  }
  // Takes over what `staged` holds (now unreachable: its publication was made).
  void splice(RcuRetireList& staged) {
    for (auto& fn : staged.pending_) pending_.push_back(std::move(fn));
    staged.pending_.clear();
    if (pending_.size() >= batch_) barrier();
  }
  // rcu_barrier: wait for a grace period and free everything retired so far.
  void barrier() {
    if (pending_.empty()) return;
    rcu_synchronize();
    for (auto& fn : pending_) fn();
    pending_.clear();
  }

 private:
  explicit RcuRetireList(size_t batch) : batch_(batch) {}
  std::vector<std::function<void()>> pending_;
  size_t batch_ = kBatch;
};

}  // namespace pktpath
