// The `clock` script line: which clock the runner's Nets and Cpus read.
//
//   clock virtual      a VirtualClock from 0 ns, moved only by events: a paced pcap
//                      replay's next record, qdisc watchdogs and other timers, `sleep`
//                      lines (which move it by their time, firing the timers due on
//                      the way). No wall time passes for it: the same script and
//                      capture give the same results on every run.
//   clock monotonic    the default (CLOCK_MONOTONIC)
//
// Either must come before any device is added (the devices' qdiscs and replays start
// from the clock they were made with).
#include "cli/script.h"
#include "cli/script_exec.h"
#include "cli/script_ext.h"

namespace pktpath::cli {

namespace {

struct ClockLine final : ExtLine {
  bool virt = false;
  bool execute(ScriptRunner& r, ScriptError& err) const override {
    if (!virt) {
      if (r.virtual_clock()) return fail(err, "monotonic", "clock: the runner is already on the virtual clock");
      return true;
    }
    return r.use_virtual_clock(err);
  }
};

}  // namespace

std::optional<bool> parse_clock_ext(const std::vector<std::string>& w, ExtCommand& out, ScriptError& err) {
  if (w[0] != "clock") return std::nullopt;
  if (w.size() < 2) return fail(err, "clock", "clock: expected `clock virtual` or `clock monotonic`");
  auto line = std::make_shared<ClockLine>();
  if (w[1] == "virtual") line->virt = true;
  else if (w[1] != "monotonic") return fail(err, w[1], "clock: expected virtual or monotonic, got \"" + w[1] + "\"");
  if (w.size() > 2) return fail(err, w[2], "clock: unexpected \"" + w[2] + "\"");
  out.line = std::move(line);
  return true;
}

}  // namespace pktpath::cli
