#include "tools/pktgen_session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/dev_xmit.h"
#include "core/net.h"
#include "core/stop_signal.h"
#include "core/sysctl.h"
#include "base/json_text.h"

namespace pktpath {

namespace {

nlohmann::json result_json(const PktgenResult& r) {
  nlohmann::json threads = nlohmann::json::array();
  for (const auto& t : r.threads)
    threads.push_back({{"packets", t.sofar},
                       {"pps", t.pps()},
                       {"errors", t.errors},
                       {"bytes", t.tx_bytes},
                       {"usec", t.elapsed_ns / 1000},
                       {"pkt_size", t.pkt_size},
                       {"result", pktgen_result_text(t)},
                       {"end", pktgen_end_name(t.end)},
                       {"rx_processed", t.rx_processed},
                       {"defer_queued", t.defer_queued},
                       {"defer_nodefer", t.defer_nodefer},
                       {"defer_flushes", t.defer_flushes}});
  return {{"mode", pktgen_mode_name(r.mode)},
          {"threads", threads},
          {"total",
           {{"packets", r.packets()}, {"pps", r.pps()}, {"mbps", r.mbps()}, {"errors", r.errors()},
            {"usec", r.elapsed_ns() / 1000}}}};
}

void print_result_text(std::FILE* out, const PktgenResult& r, const std::string& dev, const std::string& label) {
  for (size_t i = 0; i < r.threads.size(); ++i) {
    std::fprintf(out, "Device: %s@%zu%s\nResult: %s\n", dev.c_str(), i, label.c_str(),
                 pktgen_result_text(r.threads[i]).c_str());
    // Why a run ended before its count or duration (the device's own message follows).
    if (r.threads[i].end == PktgenEnd::kDeviceDown || r.threads[i].end == PktgenEnd::kNoCarrier)
      std::fprintf(out, "  Stopped early: %s %s\n", dev.c_str(),
                   r.threads[i].end == PktgenEnd::kNoCarrier ? "lost its carrier" : "went down");
  }
  for (size_t i = 0; i < r.threads.size(); ++i) {
    const PktgenThreadResult& t = r.threads[i];
    if (t.rx_processed)
      std::fprintf(out, "  rx@%zu: %llu received, %llu freed through the defer list (%llu flushes), %llu directly\n", i,
                   static_cast<unsigned long long>(t.rx_processed), static_cast<unsigned long long>(t.defer_queued),
                   static_cast<unsigned long long>(t.defer_flushes), static_cast<unsigned long long>(t.defer_nodefer));
  }
  std::fprintf(out, "Total: %llu packets, %.0fpps %.0fMb/sec errors: %llu\n",
               static_cast<unsigned long long>(r.packets()), r.pps(), r.mbps(),
               static_cast<unsigned long long>(r.errors()));
}

// Runs that are compared (--repeat, --ab) are pinned unless told otherwise: left to the
// scheduler, a new generator thread lands on alternate cores run after run on a 2-core
// machine, and consecutive runs alternate between two speeds (docs/benchmarks.md).
bool pin_runs(const PktgenCommand& cmd) {
  if (cmd.pin) return true;
  if (cmd.no_pin || (cmd.repeat <= 1 && !cmd.ab)) return false;
  const unsigned cores = cmd.threads * (cmd.rps ? 2 : 1) + static_cast<unsigned>(cmd.first_core);
  return cores <= std::thread::hardware_concurrency();
}

// One run with progress on a terminal and Ctrl-C support.
PktgenResult run_once(const PktgenCommand& cmd, NetDevice& dev, PacketPool& pool) {
  pool.sort_free();  // every run, and both sides of an A/B, start from one pool order
  PktgenRunOptions ro{.threads = cmd.threads, .pin = pin_runs(cmd), .first_core = cmd.first_core,
                      .defer_free = dev.net().core().defer_free.load(), .rps = cmd.rps,
                      .caller_cpu = cmd.caller_cpu};
  Pktgen g(dev, pool, cmd.cfg, ro);
  // Ctrl-C (or SIGTERM, SIGHUP: the run then ends after this line) stops the generators.
  StopSignalScope signals;
  StopTarget stop_on_signal(g.stop_flag());
  std::atomic<bool> done{false};
  std::thread progress;
  if (isatty(STDERR_FILENO) && !cmd.json) {
    progress = std::thread([&] {
      auto t0 = std::chrono::steady_clock::now();
      uint64_t last = 0;
      auto tl = t0;
      while (!done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        auto now = std::chrono::steady_clock::now();
        uint64_t cur = g.live_packets();
        double dt = std::chrono::duration<double>(now - tl).count();
        std::fprintf(stderr, "\r  %8.2f Mpps  %6.1f s elapsed ", dt > 0 ? (cur - last) / dt / 1e6 : 0.0,
                     std::chrono::duration<double>(now - t0).count());
        last = cur;
        tl = now;
      }
      std::fprintf(stderr, "\r%40s\r", "");
    });
  }
  PktgenResult r = g.run();
  done.store(true);
  if (progress.joinable()) progress.join();
  consume_interrupt();
  return r;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run_pktgen(const PktgenCommand& cmd, NetDevice& dev, PacketPool& pool, std::FILE* out,
               std::string* err, PktgenSessionResult* result) {
  PktgenSessionResult local;
  PktgenSessionResult& res = result ? *result : local;
  const std::string& devname = dev.name();

  if (!cmd.ab) {
    std::vector<double> pps;
    nlohmann::json runs = nlohmann::json::array();
    for (unsigned i = 0; i < cmd.repeat; ++i) {
      PktgenResult r = run_once(cmd, dev, pool);
      if (!r.error.empty()) {
        if (err) *err = r.error;
        return 1;
      }
      pps.push_back(r.pps());
      if (cmd.json) runs.push_back(result_json(r));
      else print_result_text(out, r, devname, "");
      res.runs.push_back(std::move(r));
    }
    if (cmd.json) {
      nlohmann::json j = result_json(res.runs.back());
      if (cmd.repeat > 1) {
        j["runs"] = runs;
        j["median_pps"] = median(pps);
        j["min_pps"] = *std::min_element(pps.begin(), pps.end());
        j["max_pps"] = *std::max_element(pps.begin(), pps.end());
      }
      std::fprintf(out, "%s\n", json_text(j).c_str());
    } else if (cmd.repeat > 1) {
      std::vector<double> mb;
      for (const auto& r : res.runs) mb.push_back(r.mbps());
      std::fprintf(out, "%u runs: %s Mb/sec; pps min %.0f median %.0f max %.0f\n", cmd.repeat,
                   [&] {
                     std::string s;
                     for (double m : mb) s += (s.empty() ? "" : " ") + std::to_string(static_cast<long long>(m));
                     return s;
                   }().c_str(),
                   *std::min_element(pps.begin(), pps.end()), median(pps), *std::max_element(pps.begin(), pps.end()));
    }
    return 0;
  }

  // --ab: a warm-up run of A, then `repeat` rounds in the order AB BA AB ... so that
  // each side runs first equally often; A's value stays applied after.
  Net& net = dev.net();
  const Sysctl* s = sysctl_find(cmd.ab->setting);
  if (!s) {
    if (err)
      *err = "--ab: unknown sysctl '" + cmd.ab->setting + "' (a net.* name or one of: " + sysctl_alias_names() + ")";
    return 1;
  }
  // Both values must be good before anything runs; the Net's value is put back after.
  const std::string before = s->get(net);
  for (const std::string* v : {&cmd.ab->b, &cmd.ab->a}) {
    if (Status st = s->set(net, *v); !st) {
      (void)s->set(net, before);  // the value it had: cannot fail
      if (err) *err = "--ab: " + st.error().msg;
      return 1;
    }
  }
  // A random order without a seed takes one from the clock; the output records it.
  uint64_t seed = cmd.ab->seed;
  if (cmd.ab->order == AbOrder::kRandom && seed == 0)
    seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
  const AbSchedule sched = ab_schedule(cmd.repeat, cmd.ab->order, seed);
  if (!cmd.json)
    std::fprintf(out, "A/B order (%s%s): warm-up A, then %s\n", ab_order_name(sched.order),
                 sched.order == AbOrder::kRandom ? (", seed " + std::to_string(sched.seed)).c_str() : "",
                 ab_schedule_text(sched).c_str());
  std::vector<AbRecord> records;
  std::vector<double> pa, pb;
  nlohmann::json warmup, schedule = nlohmann::json::array();
  for (const AbRun& run : sched.runs) {
    const bool is_a = run.side == AbSide::kA;
    const std::string& val = is_a ? cmd.ab->a : cmd.ab->b;
    const char* label = ab_side_name(run.side);
    (void)s->set(net, val);  // checked above
    PktgenResult r = run_once(cmd, dev, pool);
    if (!r.error.empty()) {
      if (err) *err = r.error;
      return 1;
    }
    records.push_back({run.side, run.first, r.pps(), run.warmup});
    if (!cmd.json) {
      if (run.warmup)
        std::fprintf(out, "warm-up %s (%s=%s): %.0fpps %.0fMb/sec errors: %llu (not counted)\n", label,
                     cmd.ab->setting.c_str(), val.c_str(), r.pps(), r.mbps(), static_cast<unsigned long long>(r.errors()));
      else
        std::fprintf(out, "run %u %s %s (%s=%s): %.0fpps %.0fMb/sec errors: %llu\n", run.round, label,
                     run.first ? "first" : "second", cmd.ab->setting.c_str(), val.c_str(), r.pps(), r.mbps(),
                     static_cast<unsigned long long>(r.errors()));
    }
    if (run.warmup) {
      warmup = {{"side", label}, {"pps", r.pps()}};
      continue;
    }
    schedule.push_back({{"round", run.round}, {"side", label}, {"slot", run.first ? "first" : "second"}, {"pps", r.pps()}});
    (is_a ? pa : pb).push_back(r.pps());
    res.run_labels.push_back(label);
    res.runs.push_back(std::move(r));
  }
  (void)s->set(net, cmd.ab->a);  // A's value stays applied, as before
  res.ab = ab_analyze(records);
  const AbAnalysis& an = res.ab;
  if (cmd.json) {
    auto side = [](const std::string& value, const AbSideStats& st, const std::vector<double>& runs) {
      return nlohmann::json{{"value", value},   {"median_pps", st.median}, {"min_pps", st.min},
                            {"max_pps", st.max}, {"spread", st.spread},    {"level_pps", st.level},
                            {"runs", runs}};
    };
    nlohmann::json j = {{"setting", cmd.ab->setting},
                        {"a", side(cmd.ab->a, an.a, pa)},
                        {"b", side(cmd.ab->b, an.b, pb)},
                        {"ratio_a_over_b", an.effect},
                        {"effect", an.effect},
                        {"effect_ci_low", an.effect_ci.low},
                        {"effect_ci_high", an.effect_ci.high},
                        {"position_bias", an.position_bias},
                        {"position_ci_low", an.position_ci.low},
                        {"position_ci_high", an.position_ci.high},
                        {"few_runs", an.few_runs},
                        {"bootstrap", {{"resamples", an.resamples}, {"seed", an.seed}}},
                        {"order", ab_order_name(sched.order)},
                        {"sequence", ab_schedule_text(sched)},
                        {"warmup", warmup},
                        {"schedule", schedule}};
    if (sched.order == AbOrder::kRandom) j["seed"] = sched.seed;
    std::fprintf(out, "%s\n", json_text(j).c_str());
  } else {
    std::fprintf(out, "A/B %s: A=%s median %.0fpps, B=%s median %.0fpps, ratio A/B %.3f (slot-balanced)\n",
                 cmd.ab->setting.c_str(), cmd.ab->a.c_str(), an.a.median, cmd.ab->b.c_str(), an.b.median, an.effect);
    std::fprintf(out, "%s\n", ab_summary(an).c_str());
  }
  return 0;
}

}  // namespace pktpath
