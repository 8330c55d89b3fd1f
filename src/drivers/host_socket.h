// What the drivers over host kernel sockets (afpacket, xdp) share: opening them in a
// kernel network namespace, the receive interrupt thread that schedules a NAPI
// instance, and the coalesced transmit doorbell run as deferred work.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu.h"
#include "core/napi.h"

namespace pktpath::host_socket {

// Runs fn() (returning bool) here when `ns` is empty, else on a thread that entered
// /var/run/netns/NS (what `ip netns add NS` makes); sockets it opens then work from any
// thread. False with err when the namespace cannot be entered, else fn's result.
template <typename Fn>
bool in_netns(const std::string& ns, std::string& err, Fn fn) {
  if (ns.empty()) return fn();
  bool ok = false;
  std::thread t([&] {
    const std::string path = "/var/run/netns/" + ns;
    const int nsfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) {
      err = "netns " + ns + ": " + path + ": " + std::strerror(errno) +
            (errno == ENOENT ? " (make it with ip netns add " + ns + ")" : "");
      return;
    }
    if (::setns(nsfd, CLONE_NEWNET) != 0) {
      err = "netns " + ns + ": setns: " + std::strerror(errno) + (errno == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
      ::close(nsfd);
      return;
    }
    ::close(nsfd);
    ok = fn();
  });
  t.join();
  return ok;
}

// The receive interrupt: a thread sleeping in poll() on the sockets; one readable
// schedules the NAPI instance, then the thread waits until the poll completes it
// (complete(): napi_complete_done re-arms it, as a driver re-enables its interrupt).
// complete(true) also has it fire after kRetryMs with nothing readable: a poll that could
// not refill its receive ring gets another try (virtio_net's delayed refill work).
class RxIrq {
 public:
  static constexpr int kRetryMs = 1;

  ~RxIrq() { stop(); }
  // Starts the thread on `fds`; false with err.
  bool start(Napi& napi, std::vector<int> fds, std::string& err) {
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) {
      err = std::string("eventfd: ") + std::strerror(errno);
      return false;
    }
    stopping_.store(false);
    saw_error_.store(false);
    armed_.store(1);
    std::vector<pollfd> p;
    for (int fd : fds) p.push_back({fd, POLLIN, 0});
    p.push_back({stop_fd_, POLLIN, 0});
    thread_ = std::thread([this, &napi, p = std::move(p)]() mutable { loop(napi, p); });
    return true;
  }
  // A socket reported an error (POLLERR) since start.
  bool saw_error() const { return saw_error_.load(std::memory_order_relaxed); }
  // The poll ran dry and completed the instance: the interrupt may fire again; with
  // `retry`, by itself after kRetryMs too.
  void complete(bool retry = false) {
    retry_.store(retry, std::memory_order_relaxed);
    armed_.store(1, std::memory_order_release);
    armed_.notify_one();
  }
  // Ends the thread (if started) and closes its eventfd.
  void stop() {
    if (thread_.joinable()) {
      stopping_.store(true, std::memory_order_release);
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t w = ::write(stop_fd_, &one, sizeof one);
      complete();
      thread_.join();
    }
    if (stop_fd_ >= 0) ::close(stop_fd_);
    stop_fd_ = -1;
  }

 private:
  void loop(Napi& napi, std::vector<pollfd>& fds) {
    while (!stopping_.load(std::memory_order_acquire)) {
      for (pollfd& f : fds) f.revents = 0;
      const bool retry = retry_.exchange(false, std::memory_order_relaxed);
      const int rc = ::poll(fds.data(), fds.size(), retry ? kRetryMs : -1);
      if (rc < 0 && errno != EINTR) break;
      if (stopping_.load(std::memory_order_acquire)) break;
      bool ready = rc == 0;  // the retry's time
      for (size_t i = 0; i + 1 < fds.size(); ++i) ready = ready || (fds[i].revents & POLLIN);
      if (!ready) {
        // POLLERR (IF went down): the socket's error is taken; a socket that keeps
        // saying so is looked at again after a millisecond, not in a spin.
        bool error = false;
        for (size_t i = 0; i + 1 < fds.size(); ++i)
          if (fds[i].revents & POLLERR) {
            int e = 0;
            socklen_t l = sizeof e;
            ::getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &e, &l);
            error = true;
            saw_error_.store(true, std::memory_order_relaxed);
          }
        if (error) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      armed_.store(0, std::memory_order_relaxed);
      napi_schedule(napi);
      while (armed_.load(std::memory_order_acquire) == 0 && !stopping_.load(std::memory_order_acquire))
        armed_.wait(0, std::memory_order_acquire);
    }
  }

  std::thread thread_;
  int stop_fd_ = -1;                   // wakes the thread to end
  std::atomic<bool> stopping_{false};
  std::atomic<uint32_t> armed_{1};     // 1: the interrupt may fire; 0: the poll runs
  std::atomic<bool> retry_{false};     // set with armed_ by complete(true)
  std::atomic<bool> saw_error_{false};  // a socket reported an error (its link went down)
};

// A tx ring's doorbell, run as deferred work on the Cpu that sent a burst's last frame.
// `scheduled` keeps it on at most one Cpu's list. While frames keep coming it waits one
// more round of that Cpu's pending work, up to kCoalesce frames (a NIC's tx interrupt
// coalescing, from the other side): the sender's next burst shares the syscall.
// ring() makes the kernel send what is marked; the driver calls it when its ring is
// full too.
class Doorbell : public CpuWork {
 public:
  static constexpr uint32_t kCoalesce = 128;

  // One frame marked for sending, by the holder of the tx queue's lock (the one writer).
  void mark() { marked_.store(marked_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  // After a frame: the burst's last one (no xmit_more) schedules the doorbell on `cpu`,
  // unless one is already due (it sends this frame too: it clears `scheduled` before it
  // rings). The exchange orders the frame's marking before the look at `scheduled`.
  void after_frame(Cpu& cpu, bool more) {
    if (!more && !scheduled_.exchange(true, std::memory_order_seq_cst)) cpu.schedule_work(this);
  }
  // Sends what is marked; returns how many frames that is.
  uint32_t ring() {
    const uint32_t m = marked_.load(std::memory_order_relaxed);
    const uint32_t n = m - rung_.exchange(m, std::memory_order_relaxed);
    send(n);
    return n;
  }
  bool pending() const { return scheduled_.load(std::memory_order_acquire); }
  // The first errno a doorbell met (then cleared), 0 if none.
  int take_error() { return error_.exchange(0); }

  void run(Cpu& cpu) override {
    const uint32_t m = marked_.load(std::memory_order_relaxed);
    if (m != seen_ && m - rung_.load(std::memory_order_relaxed) < kCoalesce) {
      seen_ = m;
      cpu.schedule_work(this);
      return;
    }
    seen_ = m;
    scheduled_.store(false, std::memory_order_seq_cst);  // a frame marked after this schedules anew
    ring();
  }

 protected:
  // The syscall: the kernel sends what the ring holds (`n` frames marked since the last).
  virtual void send(uint32_t n) = 0;
  void fail(int e) {
    int none = 0;
    error_.compare_exchange_strong(none, e);
  }

 private:
  std::atomic<bool> scheduled_{false};
  std::atomic<uint32_t> marked_{0};  // frames marked for sending, ever (wraps)
  std::atomic<uint32_t> rung_{0};    // `marked_` at the last doorbell
  uint32_t seen_ = 0;                // `marked_` at the work's last look (the work only)
  std::atomic<int> error_{0};
};

// Waits (bounded) until no doorbell in [first, first + n) is due: the calling thread's
// own Cpu runs its pending work, another's is waited for. The runner has run every Cpu's
// pending work before a device goes down; this covers the rest.
template <typename Ring>
void wait_doorbells(Ring* first, size_t n) {
  for (int spin = 0; spin < 100000; ++spin) {
    bool pending = false;
    for (size_t i = 0; i < n; ++i) pending = pending || first[i].pending();
    if (!pending) return;
    if (Cpu* cpu = Cpu::current()) cpu->run_pending();
    std::this_thread::yield();
  }
}

}  // namespace pktpath::host_socket
