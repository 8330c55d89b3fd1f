// Runs `pktpath bpf ...` in-process (cli::run_main) and captures what it prints.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/command.h"

namespace pktpath::bpf::testing {

struct CliOut {
  int rc;
  std::string out, err;
};

inline CliOut run_bpf_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "bpf");
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int rc = cli::run_main(args);
  std::fflush(stdout);
  std::fflush(stderr);
  return {rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
}

}  // namespace pktpath::bpf::testing
