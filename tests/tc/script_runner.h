// The tc script tests' helpers: one line parsed as `pktpath run` parses it, and a
// runner whose output the test reads back.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/script.h"
#include "cli/script_exec.h"

namespace pktpath::cli {

inline bool parse_line(const std::string& line, ScriptCommand& c, ScriptError& e) {
  std::vector<std::string> w;
  if (!tokenize_line(line, w, e)) return false;
  return parse_command(w, c, e);
}

// Runs script lines on one runner; returns what it printed.
class RunnerTest : public ::testing::Test {
 protected:
  RunnerTest() : out_(std::tmpfile()), runner_(false, out_) {}
  ~RunnerTest() override { std::fclose(out_); }
  bool run(const std::string& line, ScriptError* e = nullptr) {
    ScriptCommand c;
    ScriptError err;
    bool ok = parse_line(line, c, err) && runner_.execute(c, err);
    if (e) *e = err;
    EXPECT_TRUE(ok || e) << line << ": " << err.word << ": " << err.msg;
    return ok;
  }
  std::string output() {
    std::fflush(out_);
    std::rewind(out_);
    std::string s;
    char b[4096];
    size_t n;
    while ((n = std::fread(b, 1, sizeof b, out_)) > 0) s.append(b, n);
    return s;
  }
  std::FILE* out_;
  ScriptRunner runner_;
};

}  // namespace pktpath::cli
