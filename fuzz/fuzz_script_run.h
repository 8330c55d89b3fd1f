// The fuzzers' way to run parsed script lines: a fresh ScriptRunner with a small pool,
// under ScriptLimits that keep every input short (at most 64 packets and 2 threads per
// send/pktgen line, waits of at most 2 ms, no `bpf`/`bench` lines, no file writes or
// batch files, no host kernel interfaces, no datapath Cpus), line by line until one
// fails (which must say why), then finished.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cli/script_exec.h"
#include "cli/script_text.h"

inline void fuzz_run_lines(const std::vector<pktpath::cli::ScriptLine>& lines, bool json, std::FILE* out) {
  using namespace pktpath::cli;
  ScriptRunner runner(json, out, 2048);
  ScriptLimits lim;
  lim.max_packets = 64;
  lim.max_threads = 2;
  lim.max_wait_ns = 2'000'000;
  lim.commands = false;
  lim.write_files = false;
  lim.batch_files = false;
  lim.host_devices = false;   // no kernel interfaces (tap) from fuzzed scripts
  lim.datapath_cpus = false;  // a redirect loop between them would never go idle
  runner.set_limits(lim);
  for (const ScriptLine& l : lines) {
    ScriptError e;
    if (!runner.execute(l.cmd, e)) {
      if (e.msg.empty()) std::abort();  // every failure says why
      break;
    }
  }
  ScriptError e;
  runner.finish(e);
}
