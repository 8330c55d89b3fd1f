// The `pktgen` script line: runs the generator on a device of this script's instance.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli/command.h"
#include "cli/script_exec.h"
#include "tools/pktgen_session.h"

namespace pktpath::cli {

namespace {

// Bound one pktgen run by the runner's limits: count, threads, runs, duration, delay.
void apply_limits(const ScriptLimits& l, PktgenCommand& cmd) {
  PktgenConfig& c = cmd.cfg;
  if (l.max_packets && (c.count == 0 || c.count > l.max_packets)) c.count = l.max_packets;
  if (l.max_threads && cmd.threads > l.max_threads) cmd.threads = l.max_threads;
  if (l.max_packets || l.max_wait_ns) cmd.repeat = 1;
  if (l.max_wait_ns) {
    const double cap = static_cast<double>(l.max_wait_ns) / 1e9;
    if (c.duration_s <= 0 || c.duration_s > cap) c.duration_s = cap;
    c.delay_ns = std::min<uint64_t>(c.delay_ns, l.max_wait_ns / 256);
  }
}

}  // namespace

bool ScriptRunner::pktgen(const PktgenLine& c, ScriptError& err) {
  auto fail = [&](const std::string& word, std::string msg) {
    err.word = word;
    err.msg = std::move(msg);
    return false;
  };
  switch (c.kind) {
    case PktgenLine::kReset:
      pktgen_pending_ = PktgenCommand{};
      return true;
    case PktgenLine::kSet: {
      // Keys of the generator itself, plus three of pktpath's run controls.
      if (c.key == "dev") {
        pktgen_pending_.cfg.dev = c.value;
      } else if (c.key == "threads") {
        auto n = pktpath::parse_u64(c.value);
        if (!n || *n < 1 || *n > 64) return fail(c.value, "threads: expected 1..64");
        pktgen_pending_.threads = static_cast<unsigned>(*n);
      } else if (c.key == "duration") {
        char* end = nullptr;
        double d = std::strtod(c.value.c_str(), &end);
        if (*end != '\0' || !(d > 0)) return fail(c.value, "duration: expected seconds > 0");
        pktgen_pending_.cfg.duration_s = d;
      } else if (auto e = pktgen_set(pktgen_pending_.cfg, c.key, c.value)) {
        return fail(c.value, *e);
      }
      return true;
    }
    case PktgenLine::kStart:
    case PktgenLine::kRun:
      break;
  }
  PktgenCommand cmd = c.kind == PktgenLine::kStart ? pktgen_pending_ : c.run;
  if (c.kind == PktgenLine::kStart) {
    if (auto e = pktgen_validate(cmd.cfg)) return fail("start", *e);
  }
  cmd.json = cmd.json || json_;
  cmd.caller_cpu = &control_;  // a tap's receive runs on it while the generators run
  apply_limits(limits_, cmd);
  if (virtual_clock() && (cmd.cfg.delay_ns || cmd.cfg.duration_s > 0 || cmd.cfg.count == 0))
    return fail(cmd.cfg.dev, "pktgen: on the virtual clock a run needs a count and no delay or duration (time moves only by events)");
  NetDevice* d = table().find(cmd.cfg.dev);
  if (!d) return fail(cmd.cfg.dev, "cannot find device \"" + cmd.cfg.dev + "\"");
  run_all_pending();
  std::string msg;
  int rc = run_pktgen(cmd, *d, pool_, out_, &msg);
  run_all_pending();
  std::fflush(out_);
  if (rc != 0) return fail(cmd.ab ? "--ab" : cmd.cfg.dev, msg);
  return true;
}

bool ScriptRunner::command_line(const CommandLine& c, ScriptError& err) {
  if (!limits_.commands) return fail(err, c.words[0], "\"" + c.words[0] + "\" lines are off in this runner");
  std::vector<std::string> args = c.words;
  const bool takes_json = (args[0] == "bpf" && args[1] == "bench") || args[0] == "bench";
  if (json_ && takes_json && std::find(args.begin(), args.end(), "--json") == args.end()) args.push_back("--json");
  std::fflush(out_);
  // The command's own messages are kept aside: on failure they become the line's one
  // `FILE:LINE: message (at "WORD")`; on success (notes) they pass through.
  std::fflush(stderr);
  std::FILE* held = std::tmpfile();
  const int saved = held ? ::dup(STDERR_FILENO) : -1;
  if (saved >= 0) ::dup2(::fileno(held), STDERR_FILENO);
  int rc = run_main(args);
  std::fflush(stdout);
  std::string msgs;
  if (saved >= 0) {
    std::fflush(stderr);
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    std::rewind(held);
    char buf[4096];
    for (size_t n; msgs.size() < (1u << 16) && (n = std::fread(buf, 1, sizeof buf, held)) > 0;) msgs.append(buf, n);
  }
  if (held) std::fclose(held);
  if (rc == 0) {
    std::fwrite(msgs.data(), 1, msgs.size(), stderr);
    return true;
  }
  // "pktpath bpf check: rejected: why\n..." -> "bpf check: rejected: why; ..."
  std::string folded;
  for (size_t at = 0; at < msgs.size();) {
    size_t nl = msgs.find('\n', at);
    if (nl == std::string::npos) nl = msgs.size();
    std::string line = msgs.substr(at, nl - at);
    at = nl + 1;
    if (line.rfind("pktpath: ", 0) == 0) line.erase(0, 9);
    else if (line.rfind("pktpath ", 0) == 0) line.erase(0, 8);
    if (!line.empty()) folded += (folded.empty() ? "" : "; ") + line;
  }
  err.word = args[0] + " " + args[1];
  err.msg = folded.empty() ? "command failed (exit " + std::to_string(rc) + ")" : folded;
  return false;
}

}  // namespace pktpath::cli
