#include "tools/pktgen.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <memory>
#include <thread>

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
  uint64_t m = 0;
  for (const auto& t : threads) m = std::max(m, t.elapsed_ns);
  return m;
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
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < opts_.threads; ++i)
    ts.emplace_back([this, i, &res] { res.threads[i] = run_thread(i); });
  for (auto& t : ts) t.join();
  return res;
}

// mirrors pktgen_thread_worker + pktgen_xmit for one device on one thread.
PktgenThreadResult Pktgen::run_thread(unsigned index) {
  Cpu::Options co;
  co.defer_free = opts_.defer_free;
  co.defer_max = dev_.net().core().skb_defer_max.load();            // net.core.skb_defer_max
  co.max_backlog = dev_.net().core().netdev_max_backlog.load();     // net.core.netdev_max_backlog
  if (opts_.pin) co.core = opts_.first_core + static_cast<int>(index);
  Cpu cpu(pool_, co);
  cpu.bind();
  // This thread reads hook configuration (tc filters, nft chains) without a lock while
  // the control thread may change it: an RCU reader, quiescent between packets.
  RcuReader rcu_reader;
  const PktgenConfig& cfg = cfg_;
  PktgenState st;
  st.init(cfg, dev_.mac().data(), index + 1);
  const Clock& clock = cpu.clock();
  const uint64_t start = clock.now_ns();
  const uint64_t deadline = cfg.duration_s > 0 ? start + static_cast<uint64_t>(cfg.duration_s * 1e9) : UINT64_MAX;
  const bool timestamps = !(cfg.flags & F_NO_TIMESTAMP);

  // RPS partner: a receive thread with its own Cpu draining this generator's packets.
  std::unique_ptr<Cpu> rx_cpu;
  std::atomic<bool> rx_stop{false};
  std::thread rx_thread;
  if (opts_.rps && cfg.mode == PktgenMode::kNetifReceive) {
    Cpu::Options ro = co;
    if (opts_.pin) ro.core = co.core + static_cast<int>(opts_.threads);
    rx_cpu = std::make_unique<Cpu>(pool_, ro);
    rx_cpu->set_rx_handler([](Cpu& c, Packet* p) { netif_receive_skb(c, p); });
    rx_thread = std::thread([&] {
      Cpu& rc = *rx_cpu;
      rc.bind();
      RcuReader reader;
      uint32_t n = 0;
      while (!rx_stop.load(std::memory_order_acquire) || rc.backlog_len() != 0) {
        if (rc.has_pending()) rc.run_pending();
        else cpu_relax();
        if ((++n & 255) == 0) rcu_quiescent();
      }
      for (int i = 0; i < 1000 && rc.has_pending(); ++i) rc.run_pending();
    });
  }

  // Headers that never change: advance them once, then copy a prebuilt frame per packet.
  PktgenTemplate tmpl;
  pktgen_mod_cur_headers(cfg, st, index, dev_.real_num_tx_queues());
  const bool use_template = tmpl.build(cfg, st, pool_, &dev_);
  bool headers_ready = true;  // the first packet takes the values just set up

  PktgenThreadResult r;
  Packet* skb = nullptr;
  uint64_t clone_count = 0;
  bool last_ok = true;
  uint64_t next_tx = start;
  uint32_t last_pkt_size = 0;
  uint32_t check = 0;
  uint64_t reported = 0;

  // The loop reads these every packet: locals, so calls into the datapath cannot make the
  // compiler load them again.
  const uint64_t count = cfg.count;
  const uint64_t clone_skb = cfg.clone_skb;
  const uint64_t delay_ns = cfg.delay_ns;
  const bool queue_xmit = cfg.mode == PktgenMode::kQueueXmit;

  // Every 256 rounds: report progress, pass an RCU quiescent state, and say whether to
  // stop (the flag, or the clock past the deadline).
  // Also checks the device: pktgen_xmit stops a device that is not running.
  auto should_stop = [&](uint64_t sofar) {
    live_.fetch_add(sofar - reported, std::memory_order_relaxed);
    reported = sofar;
    rcu_quiescent();
    if (stop_.load(std::memory_order_relaxed)) r.end = PktgenEnd::kStopped;
    else if (clock.now_ns() >= deadline) r.end = PktgenEnd::kDuration;
    else if (!dev_.is_up()) r.end = PktgenEnd::kDeviceDown;
    else return false;
    return true;
  };
  // After a failed attempt: a device that went down ends the run at once.
  auto down = [&] {
    if (PP_LIKELY(dev_.is_up())) return false;
    r.end = PktgenEnd::kDeviceDown;
    return true;
  };

  const bool lean_loop = queue_xmit && use_template && clone_skb == 0 && delay_ns == 0 && !rx_cpu;
  if (lean_loop) {
    // Document 000's loop on its own: a fresh packet per send, straight into
    // dev_queue_xmit, with its counters in registers. The same steps as the general loop
    // below for this configuration.
    uint64_t sofar = 0, errors = 0;
    const uint32_t len = pktgen_frame_len(st);
    while (count == 0 || sofar < count) {
      // Softirq-style work (a rescheduled qdisc, deferred frees) every 16 packets rather
      // than after each: it only moves when such work runs, never whether it does.
      if (PP_UNLIKELY((++check & 15) == 0)) {
        if ((check & 255) == 0 && should_stop(sofar)) break;
        if (cpu.has_pending()) cpu.run_pending();
      }
      Packet* p = tmpl.fill(cpu, cfg, st, timestamps ? realtime_ns() : 0);
      if (PP_UNLIKELY(!p)) {
        ++r.alloc_fail;
        cpu.run_pending();
        std::this_thread::yield();
        continue;
      }
      if (PP_LIKELY(dev_queue_xmit(cpu, p) == 0)) {
        ++sofar;
        ++st.seq_num;
      } else {
        ++errors;
        if (down()) break;
      }
    }
    r.sofar = sofar;
    r.errors = errors;
    r.tx_bytes = sofar * len;
  }

  while (!lean_loop && (count == 0 || r.sofar < count)) {
    // Every 256 rounds: the stop flag and the clock (cheap enough to keep the loop tight).
    if (PP_UNLIKELY((++check & 255) == 0) && should_stop(r.sofar)) break;
    if (PP_UNLIKELY(cpu.has_pending())) cpu.run_pending();

    // A new packet when there is none or the clone budget is spent (clone_skb).
    if (!skb || (last_ok && ++clone_count >= clone_skb)) {
      if (skb) cpu.free(skb);
      const uint64_t now = timestamps ? realtime_ns() : 0;
      if (use_template) {
        skb = tmpl.fill(cpu, cfg, st, now);
      } else {
        if (!headers_ready) pktgen_mod_cur_headers(cfg, st, index, dev_.real_num_tx_queues());
        headers_ready = false;
        skb = pktgen_fill_packet_ipv4(cpu, cfg, st, now);
      }
      if (PP_UNLIKELY(!skb)) {
        ++r.alloc_fail;
        cpu.run_pending();  // let deferred frees come home before retrying
        std::this_thread::yield();
        continue;
      }
      skb->dev = &dev_;
      last_pkt_size = skb->len;
      clone_count = 0;
    }
    if (delay_ns && last_ok) {
      wait_until(clock, next_tx);
      next_tx += delay_ns;
    }

    if (queue_xmit) {
      // pktgen takes a user so it can send the packet again (clone_skb). Without
      // clones the packet is never sent twice: hand it over instead and save the two
      // atomic operations of taking and dropping that user.
      Packet* out = skb;
      if (clone_skb) skb->get();
      else skb = nullptr;
      int rc = dev_queue_xmit(cpu, out);
      if (PP_LIKELY(rc == 0)) {
        ++r.sofar;
        ++st.seq_num;
        r.tx_bytes += last_pkt_size;
      } else {
        ++r.errors;
        if (down()) break;
      }
      continue;
    }

    if (rx_cpu) {
      // RPS: enqueue_to_backlog on the partner Cpu; it runs netif_receive_skb and frees.
      // Every hand-off counts toward the count; a full backlog is an error too.
      skb->get();
      ++r.sofar;
      ++st.seq_num;
      r.tx_bytes += last_pkt_size;
      if (PP_UNLIKELY(!rx_cpu->backlog_enqueue(skb))) {
        cpu.free_reason(skb, DropReason::CPU_BACKLOG);
        ++r.errors;
        if (down()) break;
        // Like a BUSY driver: back off until the partner has drained half its queue
        // (flushing our defer list meanwhile) instead of counting a flood of drops.
        const uint32_t half = rx_cpu->max_backlog() / 2;
        while (rx_cpu->backlog_queued() > half && !stop_.load(std::memory_order_relaxed) &&
               clock.now_ns() < deadline) {
          if (cpu.has_pending()) cpu.run_pending();
          std::this_thread::yield();
        }
      }
      continue;
    }

    if (cfg.mode == PktgenMode::kNetifReceive) {
      // pktgen's netif_receive mode: the same packet handed to the receive path, a user
      // taken for each hand-off. As pktgen_xmit: every call counts toward the count
      // (sofar), and a drop also counts as an error.
      uint32_t burst = cfg.burst;
      bool dropped = false;
      do {
        skb->get();
        if (PP_UNLIKELY(netif_receive_skb(cpu, skb) != NET_RX_SUCCESS)) {
          ++r.errors;
          dropped = true;
        }
        ++r.sofar;
        ++st.seq_num;
        r.tx_bytes += last_pkt_size;
      } while (--burst > 0 && (cfg.count == 0 || r.sofar < cfg.count));
      if (PP_UNLIKELY(dropped) && down()) break;
      continue;
    }

    // start_xmit: straight to the driver on the packet's queue, under the tx lock
    // unless the driver is lockless, with xmit_more for bursts.
    TxQueue& txq = dev_.txq(skb->queue_mapping < dev_.real_num_tx_queues() ? skb->queue_mapping : 0);
    const bool lock = !dev_.lltx();
    if (lock) txq.xmit_lock.lock();
    if (PP_UNLIKELY(txq.stopped())) {
      last_ok = false;
      if (lock) txq.xmit_lock.unlock();
      continue;
    }
    uint32_t burst = cfg.burst;
    skb->users.fetch_add(burst, std::memory_order_relaxed);
    for (;;) {
      skb->xmit_more = --burst > 0;
      NetdevTx rc = dev_.ops().start_xmit(cpu, skb, dev_, txq);
      if (PP_UNLIKELY(rc != NetdevTx::OK)) {
        skb->users.fetch_sub(1, std::memory_order_relaxed);  // BUSY: retry next time
        last_ok = false;
        break;
      }
      last_ok = true;
      ++r.sofar;
      ++st.seq_num;
      r.tx_bytes += last_pkt_size;
      if (burst == 0 || txq.stopped() || (cfg.count && r.sofar >= cfg.count)) break;
    }
    if (burst) skb->users.fetch_sub(burst, std::memory_order_relaxed);
    if (lock) txq.xmit_lock.unlock();
  }
  r.elapsed_ns = clock.now_ns() - start;
  if (rx_thread.joinable()) {
    // The partner drains what is queued; its frees beyond defer_max go straight back.
    rx_stop.store(true, std::memory_order_release);
    rx_thread.join();
    cpu.run_pending();
    r.rx_processed = rx_cpu->stats().backlog_processed.get();
    r.defer_queued = rx_cpu->stats().defer_queued.get();
    r.defer_nodefer = rx_cpu->stats().defer_nodefer.get();
    r.defer_flushes = cpu.stats().defer_flushes.get();
  }
  live_.fetch_add(r.sofar - reported, std::memory_order_relaxed);
  if (skb) cpu.free(skb);
  // Let this Cpu's tx work (qdiscs it scheduled) and deferred frees finish.
  for (int i = 0; i < 1000 && cpu.has_pending(); ++i) cpu.run_pending();
  r.pkt_size = st.cur_pkt_size;
  return r;
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
