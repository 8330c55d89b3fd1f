// pktpath: the command-line front end. Everything is in the command table.
#include <string>
#include <vector>

#include "cli/command.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return pktpath::cli::run_main(args);
}
