// Executes parsed script commands against one pktpath instance (devices, qdiscs, Cpus)
// and prints what the kernel tools would print, or JSON Lines.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/run_files.h"
#include "cli/script.h"
#include "core/cpu.h"
#include "core/dev_table.h"
#include "core/link_kind.h"
#include "core/net.h"
#include "core/cpu_thread.h"
#include "core/packet_pool.h"

namespace pktpath::cli {

struct CaptureState;  // script_capture.cc: the script's running `capture` taps

// Bounds on what one line may cost, for scripts from untrusted sources (the script
// fuzzer sets them). 0 = no bound.
struct ScriptLimits {
  uint64_t max_packets = 0;  // per send or pktgen line (per pktgen thread; 0 = endless is capped)
  unsigned max_threads = 0;  // send and pktgen threads
  uint64_t max_wait_ns = 0;  // sleep, pktgen --duration, and 256 pktgen inter-packet delays
  bool commands = true;      // `bpf ...` and `bench ...` lines
  bool write_files = true;   // `capture -w FILE`
  bool batch_files = true;   // `ip|tc -batch FILE` (a fuzzed name could be a pipe that never ends)
  bool datapath_cpus = true; // `rps_cpus`: datapath Cpu threads of the runner
  bool host_devices = true;  // link kinds that make host kernel interfaces (tap)
};

class ScriptRunner {
 public:
  // pool_capacity: packets in this instance's pool (small for the fuzzer).
  ScriptRunner(bool json, std::FILE* out, uint32_t pool_capacity = 16384);
  ~ScriptRunner();
  ScriptRunner(const ScriptRunner&) = delete;
  ScriptRunner& operator=(const ScriptRunner&) = delete;

  // Apply one command. false with err (nothing applied) on failure.
  bool execute(const ScriptCommand& cmd, ScriptError& err);
  // The namespace lines run in (the script's first, unnamed one unless a line says
  // `ip -n NAME`, `tc -n NAME` or `ip netns exec NAME`) and its devices.
  Net& net() { return *current_; }
  DeviceTable& table() { return current_->devices(); }
  // `ip netns add|del|list` (cli/ip/ip_netns.cc): named namespaces besides the first.
  Net* find_net(const std::string& name);
  Net* add_net(const std::string& name);
  bool del_net(const std::string& name);
  std::vector<Net*> named_nets();
  // Runs `cmd` with `net` as the current namespace.
  bool execute_in(Net& net, const ScriptCommand& cmd, ScriptError& err);
  // For extension lines (script_ext.h).
  bool json() const { return json_; }
  const ScriptLimits& limits() const { return limits_; }
  void set_limits(const ScriptLimits& l) { limits_ = l; }
  std::FILE* out() const { return out_; }
  Cpu& control_cpu() { return control_; }
  // The datapath Cpus RPS masks name (`ip link set dev D rps_cpus MASK`).
  CpuSet& cpu_set() { return cpu_set_; }
  void drain_pending() { run_all_pending(); }
  // `fault alloc every N` (script_fault.cc): the pool's setting and every Cpu's.
  void set_alloc_fail_every(uint32_t n);
  // `capture` lines (script_capture.cc): the running taps, and the end of the script,
  // which stops them and prints their counts.
  std::shared_ptr<CaptureState>& capture_slot() { return capture_; }
  // What the run reads and writes: one writer per file, none on a file read.
  RunFiles& files() { return files_; }
  bool finish(ScriptError& err);
  // `clock virtual` (script_clock.cc): this runner's Nets and Cpus read a VirtualClock
  // from here on, advanced by events; false with err once a device exists.
  bool use_virtual_clock(ScriptError& err);
  VirtualClock* virtual_clock() { return vclock_.get(); }
  // `pktpath run --trace FILE`: every Cpu of the runner reports to `t` (null: off).
  void set_trace(PacketTrace* t);
  // Packets still held by every device's qdisc, in every namespace.
  uint64_t queued_packets();
  // The end of a script on the virtual clock: endless replays stop, then the clock runs
  // on, firing every timer in turn, until no qdisc holds a packet and no timer is left,
  // or for `limit_ns` of virtual time. Nothing to do on the real clock.
  struct Drain {
    uint64_t ran_ns = 0;    // virtual time it moved the clock by
    uint64_t queued = 0;    // packets still queued after it
    bool limited = false;   // stopped by limit_ns with work left
  };
  Drain drain_virtual(uint64_t limit_ns);

 private:
  bool ip_link_add(const IpLinkAdd& c, ScriptError& err);
  bool ip_link_set(const IpLinkSet& c, ScriptError& err);
  bool set_threaded(NetDevice& d, bool on, ScriptError& err);
  bool ip_link_del(const IpLinkDel& c, ScriptError& err);
  bool apply_link_options(const LinkKind& k, NetDevice& d, const LinkOptions& opts, ScriptError& err);
  bool settle_devices(ScriptError& err);
  bool ip_link_show(const IpLinkShow& c, ScriptError& err);
  bool sleep(const SleepCmd& c, ScriptError& err);
  bool send(const SendCmd& c, ScriptError& err);
  bool pktgen(const PktgenLine& c, ScriptError& err);  // script_pktgen.cc
  bool command_line(const CommandLine& c, ScriptError& err);  // script_pktgen.cc
  // Run every Cpu's pending work (tx work, timers, defer lists) from this thread; only
  // while no sender thread runs.
  void run_all_pending();
  // Drop what the worker Cpus still hold after run_all_pending (packets circling).
  void purge_circling();
  // Wait for the datapath Cpus to be idle (bounded by limits_.max_wait_ns when set).
  void quiesce_cpus();
  Cpu& worker(unsigned i);
  // On the virtual clock: run pending work, moving the clock to each timer's expiry in
  // turn, up to `end`; returns the first expiry left after it (UINT64_MAX: none).
  uint64_t step_timers(uint64_t end);
  // step_timers, then the clock to `end` (a `sleep`).
  void advance_virtual(uint64_t end);

  bool json_;
  std::FILE* out_;
  ScriptLimits limits_;
  RunFiles files_;
  PacketPool pool_;
  std::unique_ptr<VirtualClock> vclock_;  // before the Cpus that read it
  PacketTrace* trace_ = nullptr;
  Cpu control_;
  std::vector<std::unique_ptr<Cpu>> workers_;
  // nets_[0] is the script's first namespace (init_net); the others are named.
  std::vector<std::unique_ptr<Net>> nets_;
  Net* current_ = nullptr;
  // The long form's parameters (`pktgen set`), run by `pktgen start`.
  PktgenCommand pktgen_pending_;
  std::shared_ptr<CaptureState> capture_;  // after nets_: destroyed before the devices
  // After nets_: its threads stop (their queues run dry) before the devices go.
  CpuSet cpu_set_;
};

}  // namespace pktpath::cli
