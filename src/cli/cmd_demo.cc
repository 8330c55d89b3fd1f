// `pktpath` with no arguments (and `make run`): the built-in demo.
// Until the transmit path lands it prints the time_bench micro table.
#include <cstdio>

#include "cli/command.h"
#include "cli/micro_report.h"
#include "tools/micro_bench.h"

namespace pktpath::cli {

namespace {

int cmd_demo(const std::vector<std::string>& args) {
  if (!args.empty()) return usage_error("demo takes no arguments");
  std::printf("pktpath demo: packet memory and document 002's lock costs (pktpath bench micro)\n\n");
  MicroBenchOptions opts;
  opts.runs = 5;
  print_micro_table(run_micro_benchmarks(opts), stdout);
  return 0;
}

CommandRegistration reg("demo", "the built-in demo (also: no arguments)", cmd_demo);

}  // namespace
}  // namespace pktpath::cli
