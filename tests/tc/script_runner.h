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

// A runner with one testdrv device t0, up; run() asserts that a line succeeds, show()
// returns what one line printed.
class DeviceCliTest : public ::testing::Test {
 protected:
  DeviceCliTest() : out_(std::tmpfile()), runner_(false, out_) {
    run("ip link add dev t0 type testdrv");
    run("ip link set dev t0 up");
  }
  ~DeviceCliTest() override { std::fclose(out_); }
  bool try_run(const std::string& line, ScriptError& e) {
    std::vector<std::string> w;
    ScriptCommand c;
    return tokenize_line(line, w, e) && parse_command(w, c, e) && runner_.execute(c, e);
  }
  void run(const std::string& line) {
    ScriptError e;
    ASSERT_TRUE(try_run(line, e)) << line << ": " << e.word << ": " << e.msg;
  }
  // The message of a line that must fail.
  std::string run_error(const std::string& line) {
    ScriptError e;
    EXPECT_FALSE(try_run(line, e)) << line;
    return e.msg;
  }
  // The output of `line` alone.
  std::string show(const std::string& line) {
    std::fflush(out_);
    const long start = std::ftell(out_);
    run(line);
    std::fflush(out_);
    std::fseek(out_, start, SEEK_SET);
    std::string s;
    char b[4096];
    size_t n;
    while ((n = std::fread(b, 1, sizeof b, out_)) > 0) s.append(b, n);
    std::fseek(out_, 0, SEEK_END);
    return s;
  }
  std::FILE* out_;
  ScriptRunner runner_;
};

}  // namespace pktpath::cli
