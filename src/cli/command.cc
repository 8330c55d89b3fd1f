#include "cli/command.h"

#include <cstdio>
#include <exception>

namespace pktpath::cli {

std::vector<Command>& command_table() {
  static std::vector<Command> table;
  return table;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : command_table())
    if (c.name == name) return &c;
  return nullptr;
}

int usage_error(std::string_view msg) {
  std::fprintf(stderr, "pktpath: %.*s\n", static_cast<int>(msg.size()), msg.data());
  return 2;
}

namespace {

void print_help() {
  std::printf("usage: pktpath [COMMAND [ARGS...]]\n\n");
  std::printf("With no command, runs the built-in demo (same as `make run`).\n\ncommands:\n");
  for (const Command& c : command_table())
    std::printf("  %-8s %s\n", c.name.c_str(), c.summary.c_str());
}

}  // namespace

int run_main(const std::vector<std::string>& args) {
  std::string name = args.empty() ? "demo" : args[0];
  if (name == "help" || name == "-h" || name == "--help") {
    print_help();
    return 0;
  }
  const Command* c = find_command(name);
  if (!c) {
    print_help();
    return usage_error("unknown command '" + name + "'");
  }
  std::vector<std::string> rest(args.empty() ? args.begin() : args.begin() + 1, args.end());
  try {
    return c->fn(rest);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pktpath %s: %s\n", name.c_str(), e.what());
    return 1;
  }
}

}  // namespace pktpath::cli
