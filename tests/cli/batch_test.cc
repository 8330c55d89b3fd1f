// `ip -batch FILE` / `tc -b FILE` / `-force`: each line of the file is one ip or tc
// command; the first failure ends the batch (Command failed FILE:LINE) unless -force,
// which reports every failure, runs the rest, and fails the line at the end. A here-document
// feeds `nft -f -` and `ip|tc -b -`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "script_run_util.h"

namespace pktpath::cli {
namespace {

using testutil::run_pp;

class Batch : public ::testing::Test {
 protected:
  std::string file(const std::string& text) {
    const std::string path = ::testing::TempDir() + "/batch_" + std::to_string(::getpid()) + "_" +
                             std::to_string(n_++) + ".txt";
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }

 private:
  int n_ = 0;
  std::vector<std::string> paths_;
};

TEST_F(Batch, IpAndTcLinesRunInOrder) {
  const std::string ip = file("# two devices\nlink add d0 type dummy\n\nlink add d1 type dummy  # and a comment\n"
                              "link set d0 up\n");
  const std::string tc = file("qdisc add dev d0 clsact\nfilter add dev d0 ingress pref 1 protocol ip flower "
                              "dst_ip 10.0.0.1 action drop\n");
  auto r = run_pp("ip -batch " + ip + "\ntc -b " + tc + "\nip link show\ntc filter show dev d0 ingress\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("2: d0: <BROADCAST,NOARP,UP,LOWER_UP>"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3: d1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dst_ip 10.0.0.1"), std::string::npos) << r.out;
}

TEST_F(Batch, FirstFailureEndsItWithTheFileAndLine) {
  const std::string f = file("link add d0 type dummy\nlink add d0 type dummy\nlink add d1 type dummy\n");
  auto r = run_pp("ip -batch " + f + "\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("already exists (Command failed " + f + ":2)"), std::string::npos) << r.err;
  // The line after the failure did not run.
  auto again = run_pp("ip -force -batch " + f + "\nip link show dev d1\n");
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.err.find("Command failed " + f + ":2\n"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("1 of 3 commands failed in " + f + " (-force)"), std::string::npos) << again.err;
}

TEST_F(Batch, BadLinesAndBadUse) {
  const std::string bad = file("link add d0 type dummy\nlink frobnicate\n");
  auto r = run_pp("ip -batch " + bad + "\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("Command failed " + bad + ":2"), std::string::npos) << r.err;
  const std::string nested = file("-batch " + bad + "\n");
  EXPECT_NE(run_pp("ip -batch " + nested + "\n").err.find("a batch cannot run another batch"), std::string::npos);
  const std::string forced = file("-force -b " + bad + "\n");
  EXPECT_NE(run_pp("ip -batch " + forced + "\n").err.find("a batch cannot run another batch"), std::string::npos);
  EXPECT_NE(run_pp("ip -batch\n").err.find("needs a FILE argument"), std::string::npos);
  EXPECT_NE(run_pp("ip -batch /nonexistent/file\n").err.find("/nonexistent/file"), std::string::npos);
  EXPECT_NE(run_pp("ip -force link show\n").err.find("-force is for batch mode"), std::string::npos);
  EXPECT_EQ(run_pp("ip -batch /dev/zero\n").rc, 1);  // binary: refused on the first read
}

TEST_F(Batch, HereDocumentsFeedTheLinesThatReadStandardInput) {
  auto r = run_pp(
      "ip link add dev v0 type dummy\n"
      "nft -f - <<'EOF'\n"
      "define hosts = { 10.0.0.1, 10.0.0.2 }\n"
      "table netdev t {\n"
      "\tset s { type ipv4_addr; elements = $hosts; }\n"
      "\tchain c { type filter hook ingress device \"v0\" priority 0; policy accept; ip saddr @s drop; }\n"
      "}\n"
      "EOF\n"
      "tc -b - <<-END\n"
      "\tqdisc add dev v0 root handle 1: htb\n"
      "\tclass add dev v0 parent 1: classid 1:1 htb rate 1mbit\n"
      "\tEND\n"
      "nft list set netdev t s\n"
      "tc class show dev v0\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("elements = { 10.0.0.1, 10.0.0.2 }"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("class htb 1:1 root prio 0 rate 1Mbit"), std::string::npos) << r.out;
  // nft names its standard input /dev/stdin, lines counted in the body.
  auto bad = run_pp("nft -f - << X\ntable netdev t {\n  chain c {\n    ip daddr 1.2.3.4 dorp\n  }\n}\nX\n");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("/dev/stdin:3:22-25: Error: unsupported match or statement"), std::string::npos) << bad.err;
  auto open = run_pp("ip link add dev v0 type dummy\nnft -f - <<X\nadd table netdev t\n");
  EXPECT_EQ(open.rc, 1);
  EXPECT_NE(open.err.find(":2: here-document not closed by a line 'X'"), std::string::npos) << open.err;
  auto wrong = run_pp("ip link add dev v0 type dummy <<X\nfoo\nX\n");
  EXPECT_EQ(wrong.rc, 1);
  EXPECT_NE(wrong.err.find("a here-document feeds a command that reads '-'"), std::string::npos) << wrong.err;
  // Line numbers after a here-document still count its lines.
  auto later = run_pp("nft -f - <<X\nadd table netdev t\nX\nip link frob\n");
  EXPECT_EQ(later.rc, 1);
  EXPECT_NE(later.err.find(":4:"), std::string::npos) << later.err;
}

}  // namespace
}  // namespace pktpath::cli
