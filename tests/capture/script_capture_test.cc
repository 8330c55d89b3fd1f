// The `capture` script line: parse errors name the word, running captures print tcpdump's
// counts (text or the contract's JSON), the pcap file, and pktgen's --ab engine switch.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "capture_fixture.h"
#include "core/net.h"
#include "cli/command.h"
#include "cli/script.h"

namespace pktpath::testing {
namespace {

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) v.push_back(nlohmann::json::parse(line));
  return v;
}

// A filter the kernel's checker refuses (protochain's backward jump) runs in userland,
// as libpcap falls back when SO_ATTACH_FILTER fails, and the capture says so.
TEST(CaptureScript, KernelRefusedFilterRunsInUserland) {
  const std::string setup =
      "ip link add dev foo type dummy\nip link set dev foo up\n"
      "capture -i foo 'ip protochain 17'\nsend dev foo count 5\n";
  RunOut r = run_script(setup + "capture stop\n", false);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("runs in userland"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("5 packets captured"), std::string::npos) << r.out;  // send makes UDP
  RunOut j = run_script(setup + "capture stop\n", true);
  ASSERT_EQ(j.rc, 0) << j.err;
  bool seen = false;
  for (const auto& line : json_lines(j.out))
    if (line.contains("filter_rules")) {
      EXPECT_EQ(line["filter_rules"], "userland");
      EXPECT_EQ(line["captured"], 5);
      seen = true;
    }
  EXPECT_TRUE(seen) << j.out;
  // A filter the kernel takes stays on kernel rules.
  RunOut k = run_script("ip link add dev foo type dummy\nip link set dev foo up\ncapture -i foo udp\n"
                        "send dev foo count 2\ncapture stop\n", true);
  ASSERT_EQ(k.rc, 0) << k.err;
  EXPECT_EQ(k.err.find("userland"), std::string::npos);
  EXPECT_NE(k.out.find("\"filter_rules\":\"kernel\""), std::string::npos) << k.out;
}

TEST(CaptureScript, BadLinesNameTheWord) {
  struct Case {
    std::string line, word, msg;
  };
  const std::vector<Case> cases = {
      {"capture", "capture", "-i DEV is required"},
      {"capture 'udp'", "capture", "-i DEV is required"},
      {"capture -i", "-i", "missing value"},
      {"capture -i foo -c 0", "0", "invalid packet count"},
      {"capture -i foo -c abc", "abc", "invalid packet count"},
      {"capture -i foo -c -3", "-3", "invalid packet count"},
      {"capture -i foo -s 300000", "300000", "invalid snaplen"},
      {"capture -i foo -s x1", "x1", "invalid snaplen"},
      {"capture -i foo -w", "-w", "missing value"},
      {"capture -i foo -Q up", "up", "unknown capture direction"},
      {"capture -i foo -x", "-x", "unknown option"},
      {"capture -i foo 'net 300.1.2.0/24'", "net 300.1.2.0/24", "filter"},
      {"capture -i foo 'udp and'", "udp and", "filter"},
      {"capture -i foo bogus words", "bogus words", "filter"},
      {"capture stop foo", "foo", "unexpected"},
      {"capture stop -i", "-i", "missing value"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> w;
    cli::ScriptError err;
    ASSERT_TRUE(cli::tokenize_line(c.line, w, err)) << c.line;
    cli::ScriptCommand cmd;
    EXPECT_FALSE(cli::parse_command(w, cmd, err)) << c.line;
    EXPECT_EQ(err.word, c.word) << c.line;
    EXPECT_NE(err.msg.find(c.msg), std::string::npos) << c.line << ": " << err.msg;
  }
}

TEST(CaptureScript, GoodLinesParse) {
  for (const std::string line : {"capture -i foo", "capture -i foo -c 10 -s 0 -w /tmp/x.pcap 'net 192.168.2.0/24'",
                                 "capture -i foo udp port 9", "capture -s 96 -i foo --json", "capture stop",
                                 "capture stop -i foo"}) {
    std::vector<std::string> w;
    cli::ScriptError err;
    ASSERT_TRUE(cli::tokenize_line(line, w, err)) << line;
    cli::ScriptCommand cmd;
    EXPECT_TRUE(cli::parse_command(w, cmd, err)) << line << ": " << err.msg;
  }
}

TEST(CaptureScript, RuntimeErrorsExitOneNamingTheLine) {
  RunOut r = run_script("ip link add dev foo type dummy\ncapture -i nope 'udp'\n", false);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
  r = run_script("ip link add dev foo type dummy\ncapture stop\n", false);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no capture"), std::string::npos) << r.err;
  r = run_script("ip link add dev foo type dummy\ncapture -i foo -w /nonexistent-dir/a.pcap\n", false);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("/nonexistent-dir/a.pcap"), std::string::npos) << r.err;
  // A bad filter stops the script before anything runs (parse time), naming line 3.
  r = run_script("ip link add dev foo type dummy\nip link set dev foo up\ncapture -i foo 'host'\n", false);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":3:"), std::string::npos) << r.err;
}

TEST(CaptureScript, PktgenIntoATapPrintsTcpdumpCounts) {
  const std::string path = ::testing::TempDir() + "pktpath_capture_script_" + std::to_string(::getpid()) + ".pcap";
  const std::string script =
      "ip link add dev foo type dummy\n"
      "ip link set dev foo up\n"
      "capture -i foo -w " + path + " 'net 192.168.2.0/24'\n"
      "capture -i foo -c 10 udp\n"
      "pktgen -i foo -n 4096 -d 192.168.0.0/22 --mode netif_receive\n"
      "capture stop -i foo\n";
  RunOut r = run_script(script, true);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto docs = json_lines(r.out);
  ASSERT_EQ(docs.size(), 3u) << r.out;  // pktgen, then the two captures in attach order
  EXPECT_EQ(docs[1]["captured"], 1024);
  EXPECT_EQ(docs[1]["received_by_filter"], 1024);
  EXPECT_EQ(docs[1]["dropped"], 0);
  EXPECT_EQ(docs[1]["seen"], 4096);
  EXPECT_EQ(docs[2]["captured"], 10);
  EXPECT_EQ(docs[2]["received_by_filter"], 4096);
  EXPECT_EQ(docs[2]["dropped"], 4086);
  std::vector<PcapRecord> recs;
  ASSERT_TRUE(read_pcap_file(path, &recs));
  EXPECT_EQ(recs.size(), 1024u);
  for (const auto& rec : recs) {
    ASSERT_GE(rec.bytes.size(), 34u);
    EXPECT_EQ(rec.bytes[30], 192);
    EXPECT_EQ(rec.bytes[31], 168);
    EXPECT_EQ(rec.bytes[32], 2);
  }
  std::remove(path.c_str());

  // Text form at the script's end (no `capture stop`): tcpdump's three lines.
  r = run_script("ip link add dev foo type dummy\nip link set dev foo up\ncapture -i foo -c 3 'ip'\n"
                 "pktgen -i foo -n 100 --mode netif_receive\n",
                 false);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("3 packets captured\n100 packets received by filter\n97 packets dropped by kernel\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("listening on foo"), std::string::npos) << r.err;
}

TEST(CaptureScript, AbEngineSwitchReloadsTheTap) {
  const std::string script =
      "ip link add dev foo type dummy\n"
      "ip link set dev foo up\n"
      "capture -i foo 'net 192.168.2.0/24'\n"
      "pktgen -i foo -n 1024 -d 192.168.0.0/22 --mode netif_receive --repeat 1 --ab bpf_engine=switch|threaded\n"
      "capture stop\n";
  RunOut r = run_script(script, true);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto docs = json_lines(r.out);
  ASSERT_EQ(docs.size(), 2u) << r.out;
  EXPECT_EQ(docs[0]["a"]["value"], "switch");
  // --ab leaves A applied: the tap's program is on the switch engine now.
  EXPECT_EQ(docs[1]["engine"], "switch");
  EXPECT_EQ(docs[1]["captured"], 768);  // a warm-up and two runs of 1024, a quarter each
}

}  // namespace
}  // namespace pktpath::testing
