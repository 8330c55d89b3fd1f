// `pktpath run [--json] [--trace OUT] [--drain-limit TIME] FILE|-`: run a script of
// ip/tc/sleep/send lines. On `clock virtual` the clock runs on after the last line until
// the queues are empty (at most TIME of virtual time, 60 s by default). The whole
// script is parsed first, so a bad line anywhere stops it before anything is applied;
// a line that fails while running stops the script there. Errors name file:line and
// the offending word; exit 1 for bad input, 2 for usage.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "bpf/text_file.h"
#include "cli/command.h"
#include "cli/script.h"
#include "cli/script_exec.h"
#include "cli/script_text.h"
#include "cli/tc/tc_util.h"
#include "core/packet_trace.h"
#include "core/stop_signal.h"

namespace pktpath::cli {

namespace {

void report(const std::string& file, size_t line, const ScriptError& e) {
  if (e.word.empty())
    std::fprintf(stderr, "%s:%zu: %s\n", file.c_str(), line, e.msg.c_str());
  else
    std::fprintf(stderr, "%s:%zu: %s (at \"%s\")\n", file.c_str(), line, e.msg.c_str(),
                 e.word.c_str());
}

int cmd_run(const std::vector<std::string>& args) {
  CLI::App app{"run a script of ip/tc lines", "pktpath run"};
  bool json = false;
  std::string file, trace_path, drain_limit = "60s";
  app.add_flag("--json", json, "JSON Lines output");
  app.add_option("--trace", trace_path, "write per-packet outcome records (JSON Lines) to this file");
  app.add_option("--drain-limit", drain_limit,
                 "on clock virtual, how much virtual time the queues may take to drain after the last line "
                 "(a tc time: 60s, 500ms; default 60s)");
  app.add_option("file", file, "script file, or - for stdin")->required();
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    return usage_error(std::string("run: ") + e.what());
  }
  const auto drain_ns = tc::get_time(drain_limit);
  if (!drain_ns) return usage_error("run: --drain-limit: bad time \"" + drain_limit + "\" (e.g. 60s, 500ms)");
  // Bounded, text only: a directory, a device or a binary file is refused at once.
  std::string text, err;
  const std::string name = file == "-" ? "<stdin>" : file;
  if (!bpf::read_text_file(file, bpf::kMaxScriptBytes, &text, &err)) {
    std::fprintf(stderr, "pktpath: run: %s\n", err.c_str());
    return 1;
  }
  std::vector<ScriptLine> script;
  size_t bad_line = 0, lineno = 0;
  ScriptError pe;
  if (!parse_script(text, script, &bad_line, &lineno, pe)) {
    if (bad_line == 0)
      std::fprintf(stderr, "%s: %s\n", name.c_str(), pe.msg.c_str());
    else
      report(name, bad_line, pe);
    return 1;
  }

  // SIGINT, SIGTERM and SIGHUP end the run after the line that is running, with every
  // writer flushed (capture files, pcap tx devices, the trace).
  StopSignalScope stop_signals;
  // The trace outlives the runner: Cpus it made may still hold it. "-" is standard
  // output (the script's own output then goes to standard error, as tcpdump -w -).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> trace_file(nullptr, std::fclose);
  std::unique_ptr<TraceWriter> trace;
  const bool trace_stdout = trace_path == "-";
  ScriptRunner runner(json, trace_stdout ? stderr : stdout);
  if (file != "-") {
    if (Status st = runner.files().claim(file, RunFiles::Use::kRead, &file, "the script"); !st) {
      std::fprintf(stderr, "pktpath: run: %s\n", st.error().msg.c_str());
      return 1;
    }
  }
  if (!trace_path.empty()) {
    if (Status st = runner.files().claim(trace_path, RunFiles::Use::kWrite, &trace_path, "--trace"); !st) {
      std::fprintf(stderr, "pktpath: run: --trace %s\n", st.error().msg.c_str());
      return 1;
    }
    if (trace_stdout) trace_file = {stdout, [](std::FILE* f) { return std::fflush(f); }};
    else trace_file.reset(std::fopen(trace_path.c_str(), "w"));
    if (!trace_file) {
      std::fprintf(stderr, "pktpath: run: --trace %s: %s\n", trace_path.c_str(), std::strerror(errno));
      return 1;
    }
    trace = std::make_unique<TraceWriter>(trace_file.get());
  }
  runner.set_trace(trace.get());
  // The summaries and end record, also when a line failed; then no more records.
  auto end_trace = [&]() {
    if (!trace) return true;
    runner.drain_pending();
    const bool ok = trace->finish(runner.control_cpu().clock().now_ns(), runner.queued_packets());
    runner.set_trace(nullptr);
    if (!ok) std::fprintf(stderr, "pktpath: run: --trace %s: write failed\n", trace_path.c_str());
    return ok;
  };
  for (const ScriptLine& p : script) {
    ScriptError e;
    if (!runner.execute(p.cmd, e)) {
      report(name, p.line, e);
      end_trace();
      return 1;
    }
    std::fflush(stdout);
    if (const int sig = take_stop_signal()) {  // a signal: stop here, everything written out
      std::fprintf(stderr, "%s:%zu: stopped by SIG%s; the remaining lines did not run\n", name.c_str(), p.line,
                   sigabbrev_np(sig));
      ScriptError fe;
      if (!runner.finish(fe)) report(name, p.line, fe);
      end_trace();
      return 128 + sig;
    }
  }
  // On the virtual clock, what the last lines queued drains: every packet ends sent or
  // dropped unless the limit stops it first.
  if (const ScriptRunner::Drain d = runner.drain_virtual(*drain_ns); d.queued) {
    const std::string why = d.limited ? "--drain-limit " + drain_limit : "no timer left to move them";
    std::fprintf(stderr, "pktpath: run: %s: %llu packets still queued after draining %.9g s of virtual time (%s)\n",
                 name.c_str(), static_cast<unsigned long long>(d.queued), double(d.ran_ns) / 1e9, why.c_str());
  }
  ScriptError e;
  if (!runner.finish(e)) {  // captures still running print their counts
    report(name, lineno, e);
    end_trace();
    return 1;
  }
  std::fflush(stdout);
  return end_trace() ? 0 : 1;
}

CommandRegistration reg("run", "run a script of ip/tc lines: `run [--json] [--trace OUT] FILE|-`", cmd_run);

}  // namespace
}  // namespace pktpath::cli
