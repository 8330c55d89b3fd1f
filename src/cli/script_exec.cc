#include "cli/script_exec.h"

#include "cli/ip/ip_link_print.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/dev_xmit.h"
#include "core/link_kind.h"
#include "core/stop_signal.h"
#include "drivers/veth.h"
#include "sched/qdisc.h"
#include "sched/sch_generic.h"
#include "base/json_text.h"

namespace pktpath::cli {

namespace {


std::string mac_str(const std::array<uint8_t, 6>& m) {
  char b[18];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

// The frame `send` puts in every packet, every byte written: broadcast Ethernet from the
// device, an IPv4 header (198.18.0.1 -> 198.18.0.2, ttl 64, UDP) where it fits, a UDP
// header (port 9 to 9, no checksum) where that fits, zeros after.
std::vector<uint8_t> send_frame(const NetDevice& d, uint32_t size) {
  std::vector<uint8_t> f(std::max<uint32_t>(size, 14), 0);  // `send` sizes start at 14
  for (int i = 0; i < 6; ++i) {
    f[i] = 0xff;
    f[6 + i] = d.mac()[i];
  }
  f[12] = 0x08;
  f[13] = 0x00;
  if (size < 14 + 20) return f;
  uint8_t* ip = f.data() + 14;
  const uint32_t ip_len = size - 14;
  const uint8_t hdr[20] = {0x45, 0, uint8_t(ip_len >> 8), uint8_t(ip_len), 0, 0, 0x40, 0, 64, 17, 0, 0,
                           198, 18, 0, 1, 198, 18, 0, 2};
  std::memcpy(ip, hdr, sizeof hdr);
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uint32_t(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = uint8_t(~sum >> 8);
  ip[11] = uint8_t(~sum);
  if (size < 14 + 20 + 8) return f;
  uint8_t* udp = ip + 20;
  const uint32_t udp_len = ip_len - 20;
  udp[1] = 9;
  udp[3] = 9;
  udp[4] = uint8_t(udp_len >> 8);
  udp[5] = uint8_t(udp_len);
  return f;
}

}  // namespace

ScriptRunner::ScriptRunner(bool json, std::FILE* out, uint32_t pool_capacity)
    : json_(json),
      out_(out),
      pool_(PacketPool::Options{.capacity = pool_capacity, .buf_size = 2048, .headroom = kDefaultHeadroom}),
      control_(pool_),
      cpu_set_(pool_) {
  control_.bind();
  nets_.push_back(std::make_unique<Net>(control_));
  nets_.back()->set_cpu_set(&cpu_set_);
  current_ = nets_.front().get();
}

ScriptRunner::~ScriptRunner() {
  run_all_pending();
  // A device polled by a NAPI thread stops while that thread still runs its last poll.
  for (auto& n : nets_)
    for (NetDevice* d : n->devices().list())
      if (d->napi_thread() && d->is_up()) (void)n->devices().set_up(*d, false);  // down cannot fail
  // What still waits on an input queue (circling packets) goes before the devices do.
  cpu_set_.stop();
  control_.backlog_purge();
  for (auto& w : workers_) w->backlog_purge();
  // nets_ is destroyed before the Cpus (declaration order), dropping what is queued.
}

Net* ScriptRunner::find_net(const std::string& name) {
  for (auto& n : nets_)
    if (!n->name().empty() && n->name() == name) return n.get();
  return nullptr;
}

Net* ScriptRunner::add_net(const std::string& name) {
  if (name.empty() || find_net(name)) return nullptr;
  nets_.push_back(std::make_unique<Net>(control_, name));
  nets_.back()->set_cpu_set(&cpu_set_);
  nets_.back()->set_clock(vclock_.get());
  nets_.back()->set_trace(trace_);
  return nets_.back().get();
}

// `ip netns del`: the namespace's devices go with it (all pktpath devices are virtual;
// Linux moves physical ones back to init_net).
bool ScriptRunner::del_net(const std::string& name) {
  for (auto it = nets_.begin() + 1; it != nets_.end(); ++it)
    if ((*it)->name() == name) {
      if (current_ == it->get()) return false;
      run_all_pending();  // no qdisc of it may stay on a worker's tx work list
      quiesce_cpus();  // nor a packet of it on a datapath Cpu's queue
      purge_circling();
      nets_.erase(it);
      return true;
    }
  return false;
}

std::vector<Net*> ScriptRunner::named_nets() {
  std::vector<Net*> v;
  for (auto it = nets_.begin() + 1; it != nets_.end(); ++it) v.push_back(it->get());
  return v;
}

bool ScriptRunner::execute_in(Net& net, const ScriptCommand& cmd, ScriptError& err) {
  Net* saved = current_;
  current_ = &net;
  const bool ok = execute(cmd, err);
  current_ = saved;
  return ok;
}

Cpu& ScriptRunner::worker(unsigned i) {
  while (workers_.size() <= i) {
    workers_.push_back(std::make_unique<Cpu>(pool_));
    workers_.back()->set_clock(vclock_.get());
    workers_.back()->set_trace(trace_);
  }
  return *workers_[i];
}

bool ScriptRunner::use_virtual_clock(ScriptError& err) {
  for (auto& n : nets_)
    for (NetDevice* d : n->devices().list())
      if (!(d->flags() & IFF_LOOPBACK))
        return fail(err, "virtual", "clock: must come before any device is added (\"" + d->name() + "\" exists)");
  if (!vclock_) vclock_ = std::make_unique<VirtualClock>(0);
  control_.set_clock(vclock_.get());
  for (auto& w : workers_) w->set_clock(vclock_.get());
  for (auto& n : nets_) n->set_clock(vclock_.get());
  return true;
}

void ScriptRunner::set_trace(PacketTrace* t) {
  trace_ = t;
  control_.set_trace(t);
  for (auto& w : workers_) w->set_trace(t);
  for (auto& n : nets_) n->set_trace(t);
}

uint64_t ScriptRunner::queued_packets() {
  uint64_t n = 0;
  for (auto& net : nets_)
    for (NetDevice* d : net->devices().list())
      if (const Qdisc* q = d->qdisc()) n += q->qlen();
  return n;
}

uint64_t ScriptRunner::step_timers(uint64_t end) {
  // A timer that keeps re-arming for the present cannot hold the clock for ever.
  uint64_t next = UINT64_MAX;
  for (int stalls = 0; stalls < 1000;) {
    run_all_pending();
    next = control_.next_timer_ns();
    for (auto& w : workers_) next = std::min(next, w->next_timer_ns());
    if (next > end) break;
    if (next > vclock_->now_ns()) {
      vclock_->set(next);
      stalls = 0;
    } else {
      ++stalls;
    }
  }
  return next;
}

void ScriptRunner::advance_virtual(uint64_t end) {
  step_timers(end);
  if (end > vclock_->now_ns()) vclock_->set(end);
  run_all_pending();
}

ScriptRunner::Drain ScriptRunner::drain_virtual(uint64_t limit_ns) {
  Drain d;
  if (!vclock_) return d;
  // An endless replay would feed the queues until the limit: it ends with the script, as
  // it does on the real clock (what it delivered already stays queued and drains).
  for (auto& net : nets_)
    for (NetDevice* dev : net->devices().with_work())
      if (const LinkKind* k = link_kind_lookup(net->devices().kind_of(*dev)); k && k->background && k->background(*dev))
        (void)net->devices().set_up(*dev, false);  // down cannot fail
  const uint64_t t0 = vclock_->now_ns();
  const uint64_t end = limit_ns >= UINT64_MAX - t0 ? UINT64_MAX - 1 : t0 + limit_ns;
  // A timer still armed past the limit: the clock stops there, with the rest queued.
  if (step_timers(end) != UINT64_MAX) {
    d.limited = true;
    vclock_->set(end);
  }
  run_all_pending();
  d.ran_ns = vclock_->now_ns() - t0;
  d.queued = queued_packets();
  return d;
}

void ScriptRunner::set_alloc_fail_every(uint32_t n) {
  pool_.set_alloc_fail_every(n);
  control_.set_alloc_fail_every(n);
  for (auto& w : workers_) w->set_alloc_fail_every(n);
}

void ScriptRunner::quiesce_cpus() {
  // Unbounded as the kernel's softirq is, except under the fuzzer's limits: a packet that
  // circles between devices (a redirect loop) keeps a datapath Cpu busy for ever.
  if (limits_.max_wait_ns) cpu_set_.quiesce_for(limits_.max_wait_ns);
  else cpu_set_.quiesce();
}

void ScriptRunner::purge_circling() {
  // After run_all_pending, what a worker still has queued circles for ever (a redirect
  // loop) and may point at the device about to go; the control Cpu's queue is flushed
  // per device by the table (Cpu::flush_backlog).
  for (auto& w : workers_) w->backlog_purge();
}

void ScriptRunner::run_all_pending() {
  // Until nothing is due anywhere (received packets may be handed on; a timer armed for
  // later is not waited for), bounded for the same circling packets.
  for (int round = 0; round < 4096; ++round) {
    quiesce_cpus();
    control_.run_pending();
    bool more = control_.has_due_work();
    for (auto& w : workers_) {
      w->run_pending();
      more = more || w->has_due_work();
    }
    if (!more && round >= 3) break;
  }
  quiesce_cpus();
}

bool ScriptRunner::execute(const ScriptCommand& cmd, ScriptError& err) {
  const bool ok = std::visit(
      [&](const auto& c) -> bool {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, IpLinkAdd>) return ip_link_add(c, err);
        else if constexpr (std::is_same_v<T, IpLinkSet>) return ip_link_set(c, err);
        else if constexpr (std::is_same_v<T, IpLinkDel>) return ip_link_del(c, err);
        else if constexpr (std::is_same_v<T, IpLinkShow>) return ip_link_show(c, err);
        else if constexpr (std::is_same_v<T, SleepCmd>) return sleep(c, err);
        else if constexpr (std::is_same_v<T, PktgenLine>) return pktgen(c, err);
        else if constexpr (std::is_same_v<T, CommandLine>) return command_line(c, err);
        else if constexpr (std::is_same_v<T, ExtCommand>) return c.line->execute(*this, err);
        else return send(c, err);
      },
      cmd);
  // A line's packets are all processed before the next line looks at counters.
  quiesce_cpus();
  if (!ok) {
    ScriptError later;  // the line's own error is the one reported
    settle_devices(later);
    return false;
  }
  return settle_devices(err);
}

bool ScriptRunner::ip_link_add(const IpLinkAdd& c, ScriptError& err) {
  if (c.kind == "veth") {
    Net* peer_net = current_;
    if (!c.peer_netns.empty() && !(peer_net = find_net(c.peer_netns)))
      return fail(err, c.peer_netns, "Cannot find netns \"" + c.peer_netns + "\"");
    if (auto a = veth_newlink(table(), c.cfg, peer_net->devices(), c.peer); !a)
      return fail(err, c.cfg.name, a.error().msg);
    return true;
  }
  if (const LinkKind* k = link_kind_lookup(c.kind); k && k->touches_host && !limits_.host_devices)
    return fail(err, c.kind, "type " + c.kind + ": devices of the host kernel are off in this runner");
  auto added = table().add(c.cfg, c.kind);
  if (!added) {
    const std::string& why = added.error().msg;
    const bool kind_bad = why.find("link type") != std::string::npos;
    return fail(err, kind_bad ? c.kind : c.cfg.name, why);
  }
  NetDevice* d = *added;
  const LinkKind* k = link_kind_lookup(c.kind);
  if (!apply_link_options(*k, *d, c.opts, err)) {
    (void)table().del(c.cfg.name);  // just added: cannot fail
    return false;
  }
  return true;
}

bool ScriptRunner::ip_link_set(const IpLinkSet& c, ScriptError& err) {
  NetDevice* d = table().find(c.dev);
  if (!d) return fail(err, c.dev, "Cannot find device \"" + c.dev + "\"");
  if (!c.opts.empty() && table().kind_of(*d) != c.kind)
    return fail(err, c.kind, "device \"" + c.dev + "\" is not of type " + c.kind);
  run_all_pending();
  if (!c.opts.empty() && !apply_link_options(*link_kind_lookup(c.kind), *d, c.opts, err)) return false;
  if (c.mtu) {
    if (Status st = d->change_mtu(*c.mtu); !st) return fail(err, std::to_string(*c.mtu), st.error().msg);
  }
  if (c.address) d->set_mac(*c.address);
  if (c.txqlen) d->set_tx_queue_len(*c.txqlen);  // qdiscs made from now on take it
  if (c.promisc) d->set_promisc(*c.promisc);
  if (c.rps_cpus) {
    // store_rps_map: the set bits name datapath Cpus, started here if new.
    if (!limits_.datapath_cpus && *c.rps_cpus != 0)
      return fail(err, "rps_cpus", "rps_cpus: datapath Cpus are off in this runner");
    if (vclock_ && *c.rps_cpus != 0)
      return fail(err, "rps_cpus", "rps_cpus: datapath Cpus run on threads of their own, not on the virtual clock");
    if (*c.rps_cpus >> CpuSet::kMax)
      return fail(err, "rps_cpus", "rps_cpus: at most " + std::to_string(CpuSet::kMax) + " CPUs (bits 0.." +
                                       std::to_string(CpuSet::kMax - 1) + ")");
    if (*c.rps_cpus == 0) {
      d->set_rps_map(nullptr);
    } else {
      auto m = std::make_unique<RpsMap>();
      m->mask = *c.rps_cpus;
      for (unsigned b = 0; b < CpuSet::kMax; ++b)
        if (*c.rps_cpus >> b & 1) m->cpus.push_back(&cpu_set_.get(b, d->net().cpu_options()).cpu());
      d->set_rps_map(std::move(m));
    }
  }
  if (c.threaded && !set_threaded(*d, *c.threaded, err)) return false;
  if (c.up) {
    if (Status st = table().set_up(*d, *c.up); !st) {
      // The driver's own account of why, where it keeps one.
      std::string msg = st.error().msg;
      if (const LinkKind* k = link_kind_lookup(table().kind_of(*d)); k && k->busy) k->busy(*d, control_, msg);
      return fail(err, c.dev, msg);
    }
  }
  return true;
}

// mirrors dev_set_threaded: the device's NAPI instances go to a thread of their own (made
// the first time it is turned on, kept for the runner's life and reused when it is turned
// on again), taken at the next up.
bool ScriptRunner::set_threaded(NetDevice& d, bool on, ScriptError& err) {
  if (on == (d.napi_thread() != nullptr)) return true;
  if (d.is_up()) return fail(err, "threaded", "threaded: set it while " + d.name() + " is down");
  const std::string_view kind = table().kind_of(d);
  if (const LinkKind* k = link_kind_lookup(kind); on && !(k && k->threaded_napi))
    return fail(err, "threaded", "threaded: " + std::string(kind) + " devices poll on the Cpu that sets them up "
                                 "(afpacket and xdp have NAPI threads)");
  if (on && !limits_.datapath_cpus) return fail(err, "threaded", "threaded: datapath Cpus are off in this runner");
  if (on && vclock_)
    return fail(err, "threaded", "threaded: NAPI threads run on real time, not on the virtual clock");
  if (on && !d.napi_kept_thread()) d.set_napi_thread(&cpu_set_.add_napi_thread(d.net().cpu_options()).cpu());
  d.set_threaded(on);
  return true;
}

// newlink/changelink's IFLA_INFO_DATA: numbers were checked by the parser; text goes to
// the driver, which may refuse it. A file to write is refused where scripts may not write.
bool ScriptRunner::apply_link_options(const LinkKind& k, NetDevice& d, const LinkOptions& opts, ScriptError& err) {
  for (const LinkOption& o : opts) {
    if (!o.is_text) {
      k.set_option(d, o.name, o.value);
      continue;
    }
    std::string msg;
    const LinkKind::Value v = link_kind_option(k, o.name)->value;
    if (v == LinkKind::kOutputPath && !limits_.write_files)
      return fail(err, o.text, o.name + ": writing files is disabled");
    if (v == LinkKind::kOutputPath || v == LinkKind::kInputPath) {
      const auto use = v == LinkKind::kOutputPath ? RunFiles::Use::kWrite : RunFiles::Use::kRead;
      if (Status st = files_.claim(o.text, use, &d, "device " + d.name()); !st)
        return fail(err, o.text, d.name() + ": " + o.name + " " + st.error().msg);
    }
    if (!k.set_text_option(d, o.name, o.text, msg)) return fail(err, o.text, d.name() + ": " + msg);
  }
  return true;
}

// After every line: devices with work of their own (a pcap replay) run to its end on
// the control Cpu, which polls them (a stop signal, or the limits' max_wait, sets them
// down early); the first failure a device reports fails the line.
bool ScriptRunner::settle_devices(ScriptError& err) {
  bool ok = true;
  for (auto& net : nets_) {
    for (NetDevice* d : net->devices().with_work()) {
      const LinkKind* k = link_kind_lookup(net->devices().kind_of(*d));
      if (!k || !k->busy) continue;
      std::string msg;
      // An endless replay runs on behind the script: polled by later lines, not awaited.
      if (k->busy(*d, control_, msg) && !(k->background && k->background(*d))) {
        StopSignalScope signals;
        const uint64_t t0 = MonotonicClock::instance().now_ns();
        bool idle = false;
        while (k->busy(*d, control_, msg)) {
          if (pending_stop_signal() ||
              (limits_.max_wait_ns && MonotonicClock::instance().now_ns() - t0 > limits_.max_wait_ns)) {
            (void)net->devices().set_up(*d, false);  // down cannot fail
            break;
          }
          // On the virtual clock, once only a timer is left (a paced replay between
          // records, a watchdog), move the clock to it (none left: nothing can change).
          // Checked before running, so the clock moves only while the replay is busy.
          if (vclock_ && idle) {
            uint64_t next = control_.next_timer_ns(), next_worker = UINT64_MAX;
            for (auto& w : workers_) next_worker = std::min(next_worker, w->next_timer_ns());
            if (std::min(next, next_worker) == UINT64_MAX) break;
            if (std::min(next, next_worker) > vclock_->now_ns()) vclock_->set(std::min(next, next_worker));
            if (next_worker <= next) run_all_pending();
          }
          control_.run_pending();
          idle = control_.napi_polling() == 0 && !control_.remote_pending();
          // Only a timer left on the monotonic clock: sleep a little.
          if (!vclock_ && idle) {
            timespec ts{0, 20'000};
            nanosleep(&ts, nullptr);
          }
        }
        consume_interrupt();
        run_all_pending();
      }
      // A driver whose lower link vanished took the carrier away: the device goes down.
      if (!msg.empty() && d->is_up() && !d->carrier_ok()) (void)net->devices().set_up(*d, false);
      if (!msg.empty() && ok) ok = fail(err, d->name(), msg);
    }
  }
  // Once more: what the replays left buffered in other devices (a tx file) is written.
  for (auto& net : nets_)
    for (NetDevice* d : net->devices().with_work())
      if (const LinkKind* k = link_kind_lookup(net->devices().kind_of(*d)); k && k->busy) {
        std::string msg;
        k->busy(*d, control_, msg);
        if (!msg.empty() && ok) ok = fail(err, d->name(), msg);
      }
  return ok;
}

bool ScriptRunner::ip_link_del(const IpLinkDel& c, ScriptError& err) {
  if (NetDevice* d = table().find(c.dev); d && (d->flags() & IFF_LOOPBACK))
    return fail(err, c.dev, "RTNETLINK answers: Operation not supported");
  run_all_pending();
  purge_circling();
  NetDevice* gone = table().find(c.dev);
  if (Status st = table().del(c.dev); !st) return fail(err, c.dev, st.error().msg);
  files_.release(gone);
  return true;
}

bool ScriptRunner::ip_link_show(const IpLinkShow& c, ScriptError& err) {
  std::vector<NetDevice*> devs;
  if (!c.dev.empty()) {
    NetDevice* d = table().find(c.dev);
    if (!d) return fail(err, c.dev, "device \"" + c.dev + "\" does not exist");
    devs.push_back(d);
  } else {
    devs = table().list();
  }
  std::vector<LinkRow> rows;
  for (NetDevice* d : devs) {
    const DevStatsSum s = d->get_stats64();
    const std::string kind(table().kind_of(*d));
    const bool loopback = d->flags() & IFF_LOOPBACK;
    const bool noarp = kind == "dummy";
    const NetDevice* peer = veth_peer(*d);
    // A veth whose peer is down has no carrier (LOWERLAYERDOWN), as iproute2 shows it.
    const bool carrier = peer ? peer->is_up() : d->carrier_ok();
    LinkRow r;
    r.ifindex = d->ifindex();
    r.name = d->name();
    if (peer) r.link = &peer->net() == &d->net() ? peer->name() : "if" + std::to_string(peer->ifindex());
    if (loopback) r.flags = {"LOOPBACK"};
    else r.flags = {"BROADCAST", noarp ? "NOARP" : "MULTICAST"};
    if (d->promisc()) r.flags.push_back("PROMISC");
    if (d->is_up() && !carrier) r.flags.insert(r.flags.begin(), "NO-CARRIER");
    if (d->is_up()) r.flags.push_back("UP");
    if (d->is_up() && carrier) r.flags.push_back("LOWER_UP");
    r.mtu = d->mtu();
    r.qdisc = d->is_up() && d->qdisc() ? d->qdisc()->kind() : "noop";
    r.operstate = !d->is_up() ? "DOWN" : !carrier ? "LOWERLAYERDOWN" : (noarp || loopback) ? "UNKNOWN" : "UP";
    r.txqlen = d->tx_queue_len();
    r.num_tx_queues = d->num_tx_queues();
    r.promiscuity = d->promisc() ? 1 : 0;
    r.link_kind = loopback ? "" : kind;
    if (loopback) {
      r.link_type = "loopback";
      r.broadcast = "00:00:00:00:00:00";
    }
    r.address = mac_str(d->mac());
    r.rx_bytes = s.rx_bytes;
    r.rx_packets = s.rx_packets;
    r.rx_dropped = s.rx_dropped;
    r.tx_bytes = s.tx_bytes;
    r.tx_packets = s.tx_packets;
    r.tx_dropped = s.tx_dropped;
    rows.push_back(std::move(r));
  }
  print_links(out_, rows, {json_ || c.json, c.pretty, c.stats, c.details});
  return true;
}

// Sleep while running the Cpus' pending work (timers such as tbf's watchdog).
bool ScriptRunner::sleep(const SleepCmd& c, ScriptError& err) {
  if (!vclock_ && c.ns > 3600'000'000'000ull)
    return fail(err, "sleep", "sleep: at most 3600 s on the real clock (up to a year on clock virtual)");
  const uint64_t ns = limits_.max_wait_ns ? std::min(c.ns, limits_.max_wait_ns) : c.ns;
  if (vclock_) {  // no wall time: the timers due within it fire in order
    advance_virtual(vclock_->now_ns() + ns);
    return true;
  }
  const uint64_t end = MonotonicClock::instance().now_ns() + ns;
  for (;;) {
    run_all_pending();
    const uint64_t now = MonotonicClock::instance().now_ns();
    if (now >= end || pending_stop_signal()) break;
    const uint64_t step = std::min<uint64_t>(end - now, 200'000);
    timespec ts{0, static_cast<long>(step)};
    nanosleep(&ts, nullptr);
  }
  return true;
}

// Interim traffic source: each thread binds its own Cpu, allocates, fills and sends
// count/threads packets through dev_queue_xmit, then runs its pending work.
bool ScriptRunner::send(const SendCmd& line, ScriptError& err) {
  SendCmd c = line;
  if (limits_.max_packets) c.count = std::min(c.count, limits_.max_packets);
  if (limits_.max_threads) c.threads = std::min(c.threads, limits_.max_threads);
  NetDevice* d = table().find(c.dev);
  if (!d) return fail(err, c.dev, "Cannot find device \"" + c.dev + "\"");
  for (unsigned t = 0; t < c.threads; ++t) worker(t);
  std::vector<uint64_t> ok(c.threads, 0), errors(c.threads, 0);
  const std::vector<uint8_t> frame = send_frame(*d, c.size);
  const uint64_t t0 = MonotonicClock::instance().now_ns();
  auto body = [&](unsigned t) {
    Cpu& cpu = *workers_[t];
    cpu.bind();
    const uint64_t n = c.count / c.threads + (t < c.count % c.threads ? 1 : 0);
    for (uint64_t i = 0; i < n; ++i) {
      Packet* p = cpu.alloc();
      if (!p) {
        cpu.run_pending();
        p = cpu.alloc();
        if (!p) {
          ++errors[t];
          continue;
        }
      }
      uint8_t* h = p->put(c.size);
      if (!h) {
        cpu.free(p);
        ++errors[t];
        continue;
      }
      std::memcpy(h, frame.data(), c.size);
      p->protocol = 0x0008;  // htons(ETH_P_IP)
      p->dev = d;
      p->priority = c.priority;
      if (dev_queue_xmit(cpu, p) == NET_XMIT_SUCCESS)
        ++ok[t];
      else
        ++errors[t];
      if ((i & 63) == 63) cpu.run_pending();
    }
    for (int k = 0; k < 1000 && cpu.has_pending(); ++k) cpu.run_pending();
  };
  if (c.threads == 1) {
    body(0);
    control_.bind();
  } else {
    std::vector<std::thread> th;
    for (unsigned t = 0; t < c.threads; ++t) th.emplace_back(body, t);
    for (auto& x : th) x.join();
  }
  const uint64_t t1 = MonotonicClock::instance().now_ns();
  run_all_pending();
  uint64_t tot_ok = 0, tot_err = 0;
  for (unsigned t = 0; t < c.threads; ++t) {
    tot_ok += ok[t];
    tot_err += errors[t];
  }
  const double ns = static_cast<double>(t1 - t0);
  const double pps = ns > 0 ? static_cast<double>(c.count) * 1e9 / ns : 0;
  if (json_) {
    nlohmann::json j = {{"send",
                         {{"dev", c.dev},
                          {"threads", c.threads},
                          {"size", c.size},
                          {"packets", tot_ok},
                          {"errors", tot_err},
                          {"ns_per_packet", c.count ? ns / static_cast<double>(c.count) : 0.0},
                          {"pps", pps}}}};
    std::fprintf(out_, "%s\n", json_text(j).c_str());
  } else {
    std::fprintf(
        out_,
        "send: dev %s: %llu packets (%ubyte) in %.3f ms, %llu errors, %.1f ns/pkt, %.0f pps\n",
        c.dev.c_str(), static_cast<unsigned long long>(tot_ok), c.size, ns / 1e6,
        static_cast<unsigned long long>(tot_err), c.count ? ns / static_cast<double>(c.count) : 0.0,
        pps);
  }
  return true;
}

}  // namespace pktpath::cli
