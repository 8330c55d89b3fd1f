// `pktpath plot` on untrusted traces: hostile strings in every field never run anything
// (no file appears, gnuplot's `!` and `|` never reached), bad records are named by line
// and field, binary and endless input is refused at once, and -o is checked by pktpath.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/plot_trace.h"

namespace pktpath::cli {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/pp_plot_" + std::to_string(::getpid()) + "_" + name;
}

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }
bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

int plot(const std::vector<std::string>& args, std::string* err) {
  ::testing::internal::CaptureStderr();
  const int rc = run_main(args);
  *err = ::testing::internal::GetCapturedStderr();
  return rc;
}

const char* kGood =
    "{\"t_ns\":1,\"dev\":\"d\",\"len\":10,\"verdict\":\"sent\",\"sojourn_ns\":5,\"ecn\":false,\"class\":\"1:10\",\"qlen\":0}\n";

TEST(PlotTrace, HostileStringsInEveryFieldRunNothing) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox)";
  const std::string marker = temp("INJECTED");
  std::remove(marker.c_str());
  const std::string cmd = "!touch " + marker;
  // A newline (the gnuplot command ends), a quote, backquotes and a macro in each name.
  const std::vector<std::string> payloads = {"x\\n" + cmd + "\\n", "x'\\n" + cmd + "\\n'",
                                             "x`touch " + marker + "`", "x@a'; " + cmd.substr(1),
                                             "x\\r" + cmd};
  for (const char* field : {"class", "dev", "verdict"}) {
    for (const std::string& p : payloads) {
      const std::string t = temp("inj.jsonl"), out = temp("inj.svg");
      std::string rec = "{\"t_ns\":1,\"dev\":\"d\",\"len\":10,\"verdict\":\"sent\",\"sojourn_ns\":5,\"class\":\"c\",\"qlen\":0}";
      const std::string key = std::string("\"") + field + "\":\"";
      const size_t at = rec.find(key) + key.size();
      rec.replace(at, rec.find('"', at) - at, p);
      std::ofstream(t) << rec << "\n"
                       << "{\"summary\":{\"dev\":\"" << p << "\",\"class\":\"" << p
                       << "\",\"t0_ns\":1,\"bin_ns\":10,\"throughput_bps\":[1,2]}}\n";
      std::string err;
      const int rc = plot({"plot", t, "-o", out}, &err);
      EXPECT_FALSE(exists(marker)) << field << " " << p;
      if (p.find("\\n") != std::string::npos || p.find("\\r") != std::string::npos) {
        EXPECT_EQ(rc, 1) << p;
        EXPECT_NE(err.find(":1: field \"" + std::string(field) + "\": control character"), std::string::npos) << err;
      } else {
        EXPECT_EQ(rc, 0) << p << " " << err;
      }
      std::remove(t.c_str());
      std::remove(out.c_str());
    }
  }
}

TEST(PlotTrace, OutputPathNeverReachesGnuplot) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox)";
  const std::string t = temp("ok.jsonl");
  std::ofstream(t) << kGood;
  std::string err;
  // gnuplot runs `set output '|cmd'` as a pipe; pktpath writes a file of that name.
  const std::string dir = temp("cwd");
  ::mkdir(dir.c_str(), 0700);
  char saved[4096];
  ASSERT_NE(::getcwd(saved, sizeof saved), nullptr);
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  EXPECT_EQ(plot({"plot", t, "-o", "|touch PIPED.svg"}, &err), 0) << err;
  EXPECT_FALSE(exists("PIPED.svg"));
  EXPECT_TRUE(exists("|touch PIPED.svg"));
  std::remove("|touch PIPED.svg");
  ASSERT_EQ(::chdir(saved), 0);
  ::rmdir(dir.c_str());
  // A directory as the picture, and a missing folder: pktpath's message, not gnuplot's.
  ::mkdir(temp("d.svg").c_str(), 0700);
  EXPECT_EQ(plot({"plot", t, "-o", temp("d.svg")}, &err), 1);
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
  EXPECT_EQ(plot({"plot", t, "-o", temp("nodir") + "/x.png"}, &err), 1);
  EXPECT_NE(err.find("no such directory"), std::string::npos) << err;
  EXPECT_EQ(err.find("gnuplot"), std::string::npos) << err;
  ::rmdir(temp("d.svg").c_str());
  // A name with a quote and spaces is written where asked.
  const std::string odd = temp("it's a plot.png");
  EXPECT_EQ(plot({"plot", t, "-o", odd}, &err), 0) << err;
  EXPECT_TRUE(exists(odd));
  std::remove(odd.c_str());
  std::remove(t.c_str());
}

TEST(PlotTrace, BinaryAndEndlessInputIsRefusedAtOnce) {
  std::string err;
  // /dev/zero: a NUL in the first chunk.
  EXPECT_EQ(plot({"plot", "/dev/zero", "-o", temp("z.svg")}, &err), 1);
  EXPECT_NE(err.find("binary"), std::string::npos) << err;
  // One line longer than the bound, without a NUL.
  auto r = read_plot_trace_text(std::string(kMaxTraceLine + 1, 'a'));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().msg.find("1: line longer"), std::string::npos) << r.error().msg;
  EXPECT_EQ(plot({"plot", ::testing::TempDir(), "-o", temp("dir.svg")}, &err), 1);
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
}

TEST(PlotTrace, ANullOrWrongTypeNamesTheRecordAndField) {
  struct Case {
    std::string text, where, field;
  };
  const std::vector<Case> cases = {
      {std::string(kGood) + "{\"summary\":{\"dev\":\"d\",\"class\":\"c\",\"t0_ns\":null,\"bin_ns\":1,\"throughput_bps\":[]}}\n", "2: ", "t0_ns"},
      {std::string(kGood) + "{\"summary\":{\"dev\":\"d\",\"throughput_bps\":[1,null]}}\n", "2: ", "throughput_bps"},
      {"{\"t_ns\":\"soon\"}\n", "1: ", "t_ns"},
      {"{\"t_ns\":-5}\n", "1: ", "t_ns"},
      {"\n\n{\"t_ns\":1,\"dev\":7}\n", "3: ", "dev"},
      {"{\"t_ns\":1,\"verdict\":\"sent\",\"sojourn_ns\":[]}\n", "1: ", "sojourn_ns"},
      {"{\"t_ns\":1,\"qlen\":1.5}\n", "1: ", "qlen"},
  };
  for (const Case& c : cases) {
    auto r = read_plot_trace_text(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().msg.rfind(c.where, 0), 0u) << r.error().msg;
    EXPECT_EQ(r.error().word, c.field) << r.error().msg;
    EXPECT_EQ(r.error().msg.find("json.exception"), std::string::npos) << r.error().msg;
  }
  auto ok = read_plot_trace_text(kGood);
  ASSERT_TRUE(ok) << ok.error().msg;
  EXPECT_EQ(ok->records, 1u);
  EXPECT_EQ(ok->sojourn.at("d 1:10").data, "0 5e-06\n");
}

}  // namespace
}  // namespace pktpath::cli
