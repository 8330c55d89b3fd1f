#include "tools/pktgen.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <ctime>
#include <memory>
#include <thread>

#include "core/cpu_thread.h"
#include "core/dev_rx.h"
#include "core/dev_xmit.h"
#include "core/net.h"
#include "core/rcu.h"
#include "tools/pktgen_packet.h"
#include "tools/pktgen_template.h"

namespace pktpath {

namespace {

uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// pktgen's spin(): wait until `until` on the monotonic clock; sleep for long waits,
// busy-wait for the last stretch so short delays stay precise.
void wait_until(const Clock& clock, uint64_t until) {
  for (;;) {
    uint64_t now = clock.now_ns();
    if (now >= until) return;
    uint64_t left = until - now;
    if (left > 100'000) {
      timespec ts{0, static_cast<long>(left - 50'000)};
      nanosleep(&ts, nullptr);
    } else {
      cpu_relax();
    }
  }
}

}  // namespace

uint64_t PktgenResult::packets() const {
  uint64_t s = 0;
  for (const auto& t : threads) s += t.sofar;
  return s;
}
uint64_t PktgenResult::errors() const {
  uint64_t s = 0;
  for (const auto& t : threads) s += t.errors;
  return s;
}
uint64_t PktgenResult::elapsed_ns() const {
  uint64_t longest = 0, first = UINT64_MAX, last = 0;
  bool stamped = !threads.empty();
  for (const auto& t : threads) {
    longest = std::max(longest, t.elapsed_ns);
    stamped = stamped && t.end_ns != 0 && t.end_ns >= t.start_ns;
    first = std::min(first, t.start_ns);
    last = std::max(last, t.end_ns);
  }
  return stamped ? std::max(last - first, longest) : longest;
}
double PktgenResult::pps() const {
  const uint64_t ns = elapsed_ns();
  return ns ? static_cast<double>(packets()) * 1e9 / static_cast<double>(ns) : 0;
}
double PktgenResult::mbps() const {
  const uint64_t ns = elapsed_ns();
  double bits = 0;
  for (const auto& t : threads) bits += static_cast<double>(t.sofar) * 8.0 * t.pkt_size;
  return ns ? bits * 1e9 / static_cast<double>(ns) / 1e6 : 0;
}

const char* pktgen_end_name(PktgenEnd e) {
  switch (e) {
    case PktgenEnd::kCount: return "count";
    case PktgenEnd::kDuration: return "duration";
    case PktgenEnd::kStopped: return "stopped";
    case PktgenEnd::kDeviceDown: return "device down";
    case PktgenEnd::kNoCarrier: return "no carrier";
  }
  return "?";
}

Pktgen::Pktgen(NetDevice& dev, PacketPool& pool, PktgenConfig cfg, PktgenRunOptions opts)
    : dev_(dev), pool_(pool), cfg_(std::move(cfg)), opts_(opts) {
  if (opts_.threads == 0) opts_.threads = 1;
}

PktgenResult Pktgen::run() {
  PktgenResult res;
  res.mode = cfg_.mode;
  // pktgen_setup_dev refuses a device that is not running (-ENETDOWN).
  if (!dev_.is_up()) {
    res.error = "device is not up: \"" + dev_.name() + "\"";
    return res;
  }
  // Without paged fragments a frame must fit one buffer; else every allocation would fail.
  const uint32_t room = pool_.buf_size() - pool_.headroom();
  if (std::max(cfg_.min_pkt_size, cfg_.max_pkt_size) > room) {
    res.error = "pkt_size " + std::to_string(std::max(cfg_.min_pkt_size, cfg_.max_pkt_size)) +
                " does not fit a packet buffer (" + std::to_string(room) + " bytes)";
    return res;
  }
  res.threads.resize(opts_.threads);
  // The caller's Cpu runs its pending work meanwhile: woken by a schedule onto it (its
  // waker) or a generator ending, and at least every millisecond for its timers.
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    unsigned left;
    bool kicked = false;
  } wait;
  wait.left = opts_.threads;
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < opts_.threads; ++i)
    ts.emplace_back([this, i, &res, &wait] {
      res.threads[i] = pktgen_thread_worker(i);
      std::lock_guard g(wait.mu);
      --wait.left;
      wait.cv.notify_one();
    });
  if (Cpu* c = opts_.caller_cpu) {
    c->set_waker(
        [](void* ctx) {
          auto* w = static_cast<Wait*>(ctx);
          std::lock_guard g(w->mu);
          w->kicked = true;
          w->cv.notify_one();
        },
        &wait);
    std::unique_lock lk(wait.mu);
    while (wait.left) {
      // Straight on while instances wait to be polled; else until kicked (a timer
      // armed for later keeps has_pending true and must not make this spin).
      if (c->napi_polling() == 0 && !c->remote_pending())
        wait.cv.wait_for(lk, std::chrono::milliseconds(1), [&] { return wait.kicked || wait.left == 0; });
      wait.kicked = false;
      lk.unlock();
      c->run_pending();
      lk.lock();
    }
    lk.unlock();
    c->set_waker(nullptr, nullptr);
  }
  for (auto& t : ts) t.join();
  return res;
}

namespace {

// The receive side of --rps: a thread with its own Cpu draining one generator's packets
// from its input queue (process_backlog on the CPU enqueue_to_backlog steered them to).
class RpsPartner {
 public:
  RpsPartner(PacketPool& pool, const Cpu::Options& opts) : cpu_(pool, opts) {
    cpu_.set_rx_handler([](Cpu& c, Packet* p) { netif_receive_skb(c, p); });
    thread_ = std::thread([this] { run(); });
  }
  ~RpsPartner() { stop(); }
  RpsPartner(const RpsPartner&) = delete;
  RpsPartner& operator=(const RpsPartner&) = delete;

  Cpu& cpu() { return cpu_; }
  // Drains what is queued, then ends the thread.
  void stop() {
    if (!thread_.joinable()) return;
    stop_.store(true, std::memory_order_release);
    thread_.join();
  }

 private:
  void run() {
    cpu_.bind();
    RcuReader reader;
    uint32_t n = 0;
    while (!stop_.load(std::memory_order_acquire) || cpu_.backlog_len() != 0) {
      if (cpu_.has_pending()) cpu_.run_pending();
      else cpu_relax();
      if ((++n & 255) == 0) rcu_quiescent();
    }
    for (int i = 0; i < 1000 && cpu_.has_pending(); ++i) cpu_.run_pending();
  }

  Cpu cpu_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// What the transmit loop reads every round, copied out of the config so calls into the
// datapath cannot make the compiler load them again. The fast case (kFast) fixes them
// at compile time: queue_xmit of a template frame, a fresh packet per send, no delay,
// no RPS partner (document 000's path).
struct XmitParams {
  uint64_t limit;  // count, or no limit (count 0): one compare per round
  uint64_t clone_skb;
  uint64_t delay_ns;
  PktgenMode mode;
  bool use_template;
  bool timestamps;
  RpsPartner* rps;
};

// The loop's running state: locals of the loop, so the counters stay in registers.
struct XmitState {
  uint64_t sofar = 0;
  uint64_t errors = 0;
  uint64_t tx_bytes = 0;
  Packet* skb = nullptr;  // the packet being sent (again, with clone_skb)
  uint64_t clone_count = 0;
  uint64_t next_tx = 0;
  uint32_t last_pkt_size = 0;
  bool last_ok = true;  // the last attempt went through (else: retry, no new packet)
};

}  // namespace

// One generator thread's device state (pktgen_dev's per-thread part): header state, the
// frame template, end conditions and results.
struct Pktgen::Worker {
  Worker(Pktgen& g, unsigned index, const Cpu::Options& opts)
      : g(g), dev(g.dev_), cfg(g.cfg_), index(index), cpu(g.pool_, opts), clock(cpu.clock()) {}

  // The run: the thread's loop with the end conditions, then the partner's figures.
  void run();
  // The transmit loop: one pktgen_xmit per round, the end conditions every 256 rounds.
  // Instantiated twice: the general loop, and the fast case with its parameters fixed.
  template <bool kFast>
  void xmit_loop(const XmitParams& params);
  // mirrors pktgen_xmit: one send attempt in the configured mode; false ends the run.
  template <bool kFast>
  PP_ALWAYS_INLINE bool pktgen_xmit(const XmitParams& p, XmitState& x);

  // The modes' send steps (pktgen_xmit's switch on xmit_mode).
  template <bool kFast>
  PP_ALWAYS_INLINE bool xmit_queue(const XmitParams& p, XmitState& x);
  bool xmit_rps(RpsPartner& rps, XmitState& x);
  bool xmit_netif_receive(XmitState& x);
  bool xmit_start(XmitState& x);

  // A packet counted toward `count`.
  template <bool kFast>
  PP_ALWAYS_INLINE void sent(XmitState& x) {
    ++x.sofar;
    ++st.seq_num;
    if constexpr (!kFast) x.tx_bytes += x.last_pkt_size;
  }
  // Every 256 rounds: report progress, pass an RCU quiescent state, and say whether to
  // stop (the flag, the clock past the deadline, or the device no longer running or
  // without carrier: pktgen_xmit stops such a device).
  bool should_stop(uint64_t sofar);
  // After a failed attempt: a device that went down or lost its carrier ends the run at once.
  PP_ALWAYS_INLINE bool down() {
    if (PP_LIKELY(dev.is_up() && dev.carrier_ok())) return false;
    r.end = dev.is_up() ? PktgenEnd::kNoCarrier : PktgenEnd::kDeviceDown;
    return true;
  }

  Pktgen& g;
  NetDevice& dev;
  // The config and the Cpu held here, not referred to: the loop reaches them at a fixed
  // offset from the worker instead of loading a pointer after every send.
  const PktgenConfig cfg;
  const unsigned index;
  Cpu cpu;
  const Clock& clock;
  PktgenState st;
  PktgenTemplate tmpl;  // headers that never change: a prebuilt frame
  bool use_template = false;
  bool headers_ready = true;  // the first packet takes the values set up at start
  uint64_t start = 0;
  uint64_t deadline = UINT64_MAX;
  std::unique_ptr<RpsPartner> rps;
  PktgenThreadResult r;
  uint64_t reported = 0;  // packets already added to the generator's live count
  Packet* held = nullptr;  // the packet the loop ended with (clone_skb), freed at the end
};

bool Pktgen::Worker::should_stop(uint64_t sofar) {
  g.live_.fetch_add(sofar - reported, std::memory_order_relaxed);
  reported = sofar;
  rcu_quiescent();
  if (g.stop_.load(std::memory_order_relaxed)) r.end = PktgenEnd::kStopped;
  else if (clock.now_ns() >= deadline) r.end = PktgenEnd::kDuration;
  else if (!dev.is_up()) r.end = PktgenEnd::kDeviceDown;
  else if (!dev.carrier_ok()) r.end = PktgenEnd::kNoCarrier;
  else return false;
  return true;
}

template <bool kFast>
void Pktgen::Worker::xmit_loop(const XmitParams& params) {
  // The fast case's parameters are constants: the compiler drops the clone, delay and
  // other modes' branches from this instantiation.
  const XmitParams p = kFast ? XmitParams{params.limit, 0, 0, PktgenMode::kQueueXmit, true,
                                          params.timestamps, nullptr}
                             : params;
  // Softirq-style work (tx work of a rescheduled qdisc, deferred frees): after every
  // round, or every 16 in the fast case — that only moves when such work runs, never
  // whether it does.
  constexpr uint32_t kPendingMask = kFast ? 15 : 0;
  XmitState x;
  x.next_tx = start;
  uint32_t check = 0;
  // The loop is one section (as the kernel's pktgen xmits with bottom halves off):
  // packets for other Cpus' backlogs go over in batches at each softirq-style round.
  cpu.bh_disable();
  while (x.sofar < p.limit) {
    if (PP_UNLIKELY((++check & kPendingMask) == 0)) {
      if ((check & 255) == 0 && should_stop(x.sofar)) break;
      if (cpu.has_pending()) cpu.run_pending();
      if ((check & 15) == 0 || p.delay_ns) cpu.rps_flush();  // every 16, or each paced packet
    }
    if (PP_UNLIKELY(!pktgen_xmit<kFast>(p, x))) break;
  }
  cpu.bh_enable();
  if constexpr (kFast) x.tx_bytes = x.sofar * pktgen_frame_len(st);
  r.sofar = x.sofar;
  r.errors = x.errors;
  r.tx_bytes = x.tx_bytes;
  held = x.skb;
}

template <bool kFast>
bool Pktgen::Worker::pktgen_xmit(const XmitParams& p, XmitState& x) {
  // A new packet when there is none or the clone budget is spent (clone_skb).
  if (!x.skb || (x.last_ok && ++x.clone_count >= p.clone_skb)) {
    if (x.skb) cpu.free(x.skb);
    const uint64_t now = p.timestamps ? realtime_ns() : 0;
    if (p.use_template) {
      x.skb = tmpl.fill(cpu, cfg, st, now);  // the template sets dev
    } else {
      if (!headers_ready) pktgen_mod_cur_headers(cfg, st, index, dev.real_num_tx_queues());
      headers_ready = false;
      x.skb = pktgen_fill_packet_ipv4(cpu, cfg, st, now);
      if (x.skb) x.skb->dev = &dev;
    }
    if (PP_UNLIKELY(!x.skb)) {
      ++r.alloc_fail;
      cpu.run_pending();  // let deferred frees come home before retrying
      std::this_thread::yield();
      return true;
    }
    x.last_pkt_size = x.skb->len;
    x.clone_count = 0;
  }
  if (p.delay_ns && x.last_ok) {
    wait_until(clock, x.next_tx);
    x.next_tx += p.delay_ns;
  }
  switch (p.mode) {
    case PktgenMode::kQueueXmit: return xmit_queue<kFast>(p, x);
    case PktgenMode::kNetifReceive: return p.rps ? xmit_rps(*p.rps, x) : xmit_netif_receive(x);
    case PktgenMode::kStartXmit: break;
  }
  return xmit_start(x);
}

template <bool kFast>
bool Pktgen::Worker::xmit_queue(const XmitParams& p, XmitState& x) {
  // pktgen takes a user so it can send the packet again (clone_skb). Without clones the
  // packet is never sent twice: hand it over instead and save the two atomic operations
  // of taking and dropping that user.
  Packet* out = x.skb;
  if (p.clone_skb) x.skb->get();
  else x.skb = nullptr;
  if (PP_LIKELY(dev_queue_xmit(cpu, out) == 0)) {
    sent<kFast>(x);
    return true;
  }
  ++x.errors;
  return !down();
}

bool Pktgen::Worker::xmit_rps(RpsPartner& partner, XmitState& x) {
  // RPS: enqueue_to_backlog on the partner Cpu (through this Cpu's RPS stage); it runs
  // netif_receive_skb and frees.
  // Every hand-off counts toward the count; a full backlog is an error too.
  Cpu& rx = partner.cpu();
  x.skb->get();
  sent<false>(x);
  if (PP_LIKELY(cpu.rps_enqueue(rx, x.skb))) return true;  // staged: over in batches
  cpu.free_reason(x.skb, DropReason::CPU_BACKLOG);
  ++x.errors;
  if (down()) return false;
  // Like a BUSY driver: back off until the partner has drained half its queue (flushing
  // our defer list meanwhile) instead of counting a flood of drops.
  const uint32_t half = rx.max_backlog() / 2;
  while (rx.backlog_queued() > half && !g.stop_.load(std::memory_order_relaxed) &&
         clock.now_ns() < deadline) {
    if (cpu.has_pending()) cpu.run_pending();
    std::this_thread::yield();
  }
  return true;
}

bool Pktgen::Worker::xmit_netif_receive(XmitState& x) {
  // pktgen's netif_receive mode: the same packet handed to the receive path, a user
  // taken for each hand-off. As pktgen_xmit: every call counts toward the count (sofar),
  // and a drop also counts as an error.
  uint32_t burst = cfg.burst;
  bool dropped = false;
  do {
    x.skb->get();
    if (PP_UNLIKELY(netif_receive_skb(cpu, x.skb) != NET_RX_SUCCESS)) {
      ++x.errors;
      dropped = true;
    }
    sent<false>(x);
  } while (--burst > 0 && (cfg.count == 0 || x.sofar < cfg.count));
  return !(PP_UNLIKELY(dropped) && down());
}

bool Pktgen::Worker::xmit_start(XmitState& x) {
  // start_xmit: straight to the driver on the packet's queue, under the tx lock unless
  // the driver is lockless, with xmit_more for bursts.
  Packet* skb = x.skb;
  TxQueue& txq = dev.txq(skb->queue_mapping < dev.real_num_tx_queues() ? skb->queue_mapping : 0);
  const bool lock = !dev.lltx();
  if (lock) txq.xmit_lock.lock();
  if (PP_UNLIKELY(txq.stopped())) {
    x.last_ok = false;
    if (lock) txq.xmit_lock.unlock();
    return true;
  }
  uint32_t burst = cfg.burst;
  skb->users.fetch_add(burst, std::memory_order_relaxed);
  for (;;) {
    skb->xmit_more = --burst > 0;
    NetdevTx rc = dev.ops().start_xmit(cpu, skb, dev, txq);
    if (PP_UNLIKELY(rc != NetdevTx::OK)) {
      skb->users.fetch_sub(1, std::memory_order_relaxed);  // BUSY: retry next time
      x.last_ok = false;
      break;
    }
    x.last_ok = true;
    sent<false>(x);
    if (burst == 0 || txq.stopped() || (cfg.count && x.sofar >= cfg.count)) break;
  }
  if (burst) skb->users.fetch_sub(burst, std::memory_order_relaxed);
  if (lock) txq.xmit_lock.unlock();
  return true;
}

void Pktgen::Worker::run() {
  start = clock.now_ns();
  r.start_ns = start;
  if (cfg.duration_s > 0) deadline = start + static_cast<uint64_t>(cfg.duration_s * 1e9);
  // Headers that never change: advance them once, then copy a prebuilt frame per packet.
  pktgen_mod_cur_headers(cfg, st, index, dev.real_num_tx_queues());
  use_template = tmpl.build(cfg, st, g.pool_, &dev);

  XmitParams p{cfg.count ? cfg.count : UINT64_MAX, cfg.clone_skb, cfg.delay_ns, cfg.mode,
               use_template, !(cfg.flags & F_NO_TIMESTAMP), rps.get()};
  if (p.mode == PktgenMode::kQueueXmit && p.use_template && p.clone_skb == 0 && p.delay_ns == 0 &&
      !p.rps) {
    xmit_loop<true>(p);  // document 000's path
  } else {
    xmit_loop<false>(p);
  }
  r.end_ns = clock.now_ns();
  r.elapsed_ns = r.end_ns - start;
  if (rps) {
    // The partner drains what is queued; its frees beyond defer_max come straight back.
    rps->stop();
    cpu.run_pending();
    const CpuStats& rs = rps->cpu().stats();
    r.rx_processed = rs.backlog_processed.get();
    r.defer_queued = rs.defer_queued.get();
    r.defer_nodefer = rs.defer_nodefer.get();
    r.defer_flushes = cpu.stats().defer_flushes.get();
  }
  g.live_.fetch_add(r.sofar - reported, std::memory_order_relaxed);
  if (held) cpu.free(held);
  r.pkt_size = st.cur_pkt_size;
}

// mirrors pktgen_thread_worker: the thread binds its Cpu, registers as an RCU reader,
// runs its device until an end condition, and lets its Cpu's work finish.
PktgenThreadResult Pktgen::pktgen_thread_worker(unsigned index) {
  Cpu::Options co = dev_.net().cpu_options();  // the Net's sysctls
  co.defer_free = opts_.defer_free;
  if (opts_.pin) co.core = opts_.first_core + static_cast<int>(index);
  Worker w(*this, index, co);
  Cpu& cpu = w.cpu;
  cpu.bind();
  // This thread reads hook configuration (tc filters, nft chains) without a lock while
  // the control thread may change it: an RCU reader, quiescent between packets.
  RcuReader rcu_reader;
  w.st.init(cfg_, dev_.mac().data(), index + 1);
  // RPS partner: a receive thread with its own Cpu draining this generator's packets.
  if (opts_.rps && cfg_.mode == PktgenMode::kNetifReceive) {
    Cpu::Options ro = co;
    if (opts_.pin) ro.core = co.core + static_cast<int>(opts_.threads);
    w.rps = std::make_unique<RpsPartner>(pool_, ro);
  }
  w.run();
  // Let this Cpu's tx work (qdiscs it scheduled) and deferred frees finish, and the
  // datapath Cpus finish what this thread handed them (they free onto this Cpu).
  for (int i = 0; i < 1000 && cpu.has_pending(); ++i) cpu.run_pending();
  if (CpuSet* set = dev_.net().cpu_set()) {
    while (!set->idle()) {
      cpu.run_pending();
      std::this_thread::yield();
    }
  }
  for (int i = 0; i < 1000 && cpu.has_pending(); ++i) cpu.run_pending();
  return w.r;
}

std::string pktgen_result_text(const PktgenThreadResult& r) {
  uint64_t usec = r.elapsed_ns / 1000;
  uint64_t pps = r.elapsed_ns ? r.sofar * 1'000'000'000ull / r.elapsed_ns : 0;
  uint64_t bps = pps * 8 * r.pkt_size;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "OK: %" PRIu64 "(c%" PRIu64 "+d0) usec, %" PRIu64 " (%ubyte,0frags)\n  %" PRIu64
                "pps %" PRIu64 "Mb/sec (%" PRIu64 "bps) errors: %" PRIu64,
                usec, usec, r.sofar, r.pkt_size, pps, bps / 1'000'000, bps, r.errors);
  return buf;
}

}  // namespace pktpath
