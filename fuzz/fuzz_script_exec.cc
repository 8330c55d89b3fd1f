// libFuzzer target for the script runner: the input is a script's text, parsed as
// `pktpath run` parses it, then executed line by line on a fresh ScriptRunner until a
// line fails, then finished (captures report). ScriptLimits keep every input short: at
// most 64 packets and 2 threads per send/pktgen line, sleep and pktgen --duration at
// most 2 ms, no `bpf`/`bench` command lines, no `capture -w`, no `-batch FILE`. Odd-sized inputs run in
// JSON mode. Output goes to /dev/null; the packet pool is small (2048) so each input
// starts quickly.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/script_text.h"
#include "fuzz_script_run.h"

using namespace pktpath::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  static std::FILE* devnull = std::fopen("/dev/null", "w");
  if (!devnull) std::abort();
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<ScriptLine> lines;
  size_t bad = 0, last = 0;
  ScriptError err;
  if (!parse_script(text, lines, &bad, &last, err) || lines.size() > 48) return 0;

  fuzz_run_lines(lines, (size & 1) != 0, devnull);
  return 0;
}
