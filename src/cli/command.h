// The pktpath command table. Each subcommand lives in its own cmd_*.cc and registers
// itself with a static CommandRegistration, so main() never lists them.
//
// A command gets the arguments after its name and returns the process exit status:
// 0 success, 1 bad input or failure (message on stderr), 2 usage error.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pktpath::cli {

using CommandFn = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string name;
  std::string summary;  // one line for `pktpath help`
  CommandFn fn;
};

std::vector<Command>& command_table();
const Command* find_command(std::string_view name);
// Runs `pktpath ARGS...` in-process (what main does); used by tests.
int run_main(const std::vector<std::string>& args);

struct CommandRegistration {
  CommandRegistration(std::string name, std::string summary, CommandFn fn) {
    command_table().push_back({std::move(name), std::move(summary), std::move(fn)});
  }
};

// Usage error helper: prints "pktpath: MSG" and returns 2.
int usage_error(std::string_view msg);

}  // namespace pktpath::cli
