// `pktpath bench micro [--json] [--loops N] [--runs N] [--filter S]`
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/micro_report.h"
#include "tools/micro_bench.h"
#include "base/json_text.h"

namespace pktpath::cli {

namespace {

int cmd_bench(const std::vector<std::string>& args) {
  CLI::App app{"time_bench style microbenchmarks", "pktpath bench"};
  app.require_subcommand(1);
  auto* micro = app.add_subcommand("micro", "packet memory and lock cost per op");
  bool json = false;
  MicroBenchOptions opts;
  micro->add_flag("--json", json, "print JSON");
  micro->add_option("--loops", opts.loops, "ops per run")->check(CLI::Range(64ull, 1ull << 34));
  micro->add_option("--runs", opts.runs, "runs per case (median reported)")->check(CLI::Range(1, 1000));
  micro->add_option("--filter", opts.filter, "only cases whose name contains this");
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp& e) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    return usage_error(std::string("bench: ") + e.what());
  }
  auto results = run_micro_benchmarks(opts);
  if (json)
    std::printf("%s\n", json_text(micro_results_json(results)).c_str());
  else
    print_micro_table(results, stdout);
  return 0;
}

CommandRegistration reg("bench", "microbenchmarks: `bench micro [--json]`", cmd_bench);

}  // namespace
}  // namespace pktpath::cli
