// Runs a script through `pktpath run` in-process and captures its output.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace pktpath::cli::testutil {

struct ScriptOut {
  int rc;
  std::string out, err;
};

inline ScriptOut run_pp(const std::string& text, bool json = false) {
  static int n = 0;
  const std::string path = ::testing::TempDir() + "/pp_run_" + std::to_string(::getpid()) + "_" +
                           std::to_string(n++) + ".pp";
  std::ofstream(path) << text;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::vector<std::string> args = {"run"};
  if (json) args.push_back("--json");
  args.push_back(path);
  const int rc = run_main(args);
  std::fflush(stdout);
  ScriptOut r{rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  std::remove(path.c_str());
  return r;
}

}  // namespace pktpath::cli::testutil
