// pktgen: the kernel's packet generator (net/core/pktgen.c) over pktpath's devices.
// One thread per kpktgend_N, each with its own Cpu, sending on one device with the
// configured parameters until `count` packets were accepted, the duration ran out, or
// stop() was called, or the device stopped running. Split as the kernel splits it:
// the thread (pktgen_thread_worker), one send attempt per mode (pktgen_xmit), the frame
// (fill_packet: pktgen_packet.h, pktgen_template.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/netdevice.h"
#include "core/packet_pool.h"
#include "tools/pktgen_config.h"

namespace pktpath {

// Why a thread stopped (pktgen's end conditions).
enum class PktgenEnd : uint8_t { kCount, kDuration, kStopped, kDeviceDown, kNoCarrier };
const char* pktgen_end_name(PktgenEnd e);

struct PktgenThreadResult {
  // Every attempt is counted once: sofar as pktgen counts it (accepted ones; in
  // netif_receive mode every netif_receive_skb call), errors the refused or dropped.
  uint64_t sofar = 0;
  uint64_t errors = 0;
  PktgenEnd end = PktgenEnd::kCount;
  uint64_t tx_bytes = 0;
  uint64_t elapsed_ns = 0;
  // When the send loop began and ended, on the threads' clock (the Net's: monotonic
  // unless a virtual one is set); 0 when not recorded. elapsed_ns = end_ns - start_ns.
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t pkt_size = 0;   // the last packet's size (cur_pkt_size)
  uint64_t alloc_fail = 0;
  // With rps: what the receive side did (document 002's counters).
  uint64_t rx_processed = 0;   // packets the partner took off its input queue
  uint64_t defer_queued = 0;   // remote frees put on the generator's defer list
  uint64_t defer_nodefer = 0;  // remote frees beyond defer_max, freed directly
  uint64_t defer_flushes = 0;  // flushes of the generator's defer list that found work
  double pps() const { return elapsed_ns ? static_cast<double>(sofar) * 1e9 / static_cast<double>(elapsed_ns) : 0; }
};

struct PktgenResult {
  PktgenMode mode = PktgenMode::kStartXmit;
  std::vector<PktgenThreadResult> threads;
  // Set when the run could not start (nothing sent, no threads' results).
  std::string error;
  uint64_t packets() const;
  uint64_t errors() const;
  // The run's wall time: the first thread's start to the last thread's end (threads
  // start one after another and need not overlap); the longest thread's own time when
  // the threads carry no start and end.
  uint64_t elapsed_ns() const;
  double pps() const;   // all threads' packets over the run's elapsed time
  double mbps() const;  // all threads' bits over the run's elapsed time, / 1e6
};

struct PktgenRunOptions {
  unsigned threads = 1;
  bool pin = false;      // pin thread i to core i (kpktgend_i)
  int first_core = 0;
  bool defer_free = true;  // the threads' Cpu option (A/B of document 002)
  // netif_receive mode: steer each generator's packets to a partner receive thread's
  // input queue (RPS), which runs the receive path there and frees them remotely.
  bool rps = false;
  // The Cpu bound to the thread that calls run() (the runner's control Cpu), or null:
  // while the generators run, that thread runs its pending work (a tap device's receive
  // polls), woken as soon as work is scheduled onto it from another thread.
  Cpu* caller_cpu = nullptr;
};

class Pktgen {
 public:
  Pktgen(NetDevice& dev, PacketPool& pool, PktgenConfig cfg, PktgenRunOptions opts);
  // Runs all threads to completion and returns their results. Blocking. Refuses to
  // start (result.error) on a device that is not up, as pktgen_setup_dev does, or when a
  // frame would not fit a packet buffer of the pool.
  PktgenResult run();
  // Ask a running generator to stop (from another thread or a signal handler).
  void stop() { stop_.store(true, std::memory_order_relaxed); }
  std::atomic<bool>* stop_flag() { return &stop_; }
  // Packets accepted so far by all threads, updated every 256 rounds (progress display).
  uint64_t live_packets() const { return live_.load(std::memory_order_relaxed); }

 private:
  struct Worker;  // one thread's device state and transmit loop (pktgen.cc)
  PktgenThreadResult pktgen_thread_worker(unsigned index);

  NetDevice& dev_;
  PacketPool& pool_;
  PktgenConfig cfg_;
  PktgenRunOptions opts_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> live_{0};
};

// /proc/net/pktgen/DEV's "Result:" text for one thread, e.g.
// "OK: 1000(c1000+d0) usec, 1000 (60byte,0frags)\n  1000000pps 480Mb/sec (480000000bps) errors: 0"
std::string pktgen_result_text(const PktgenThreadResult& r);

}  // namespace pktpath
