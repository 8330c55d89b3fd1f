// `pktpath run` against hostile or unusual inputs: files the run both reads and writes
// (--trace on the script, two writers on one capture, tx on the rx file), captures after
// 2038, far-apart records on the virtual clock, pacing that would overflow, stop signals
// with writers flushed, and sleep's limits on each clock.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/script_run_util.h"

namespace pktpath::cli {
namespace {

using testutil::run_pp;

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/pp_safety_" + std::to_string(::getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

// A microsecond pcap of Ethernet/IPv4 frames, each {seconds, length}.
void write_frames(const std::string& path, const std::vector<std::pair<uint32_t, uint32_t>>& frames) {
  std::string f;
  put32(f, 0xA1B2C3D4);
  put32(f, 2 | 4u << 16);
  put32(f, 0);
  put32(f, 0);
  put32(f, 262144);
  put32(f, 1);
  for (const auto& [sec, n] : frames) {
    put32(f, sec);
    put32(f, 0);
    put32(f, n);
    put32(f, n);
    std::string b(n, '\0');
    const unsigned char hdr[] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 46};
    std::memcpy(b.data(), hdr, std::min<size_t>(sizeof hdr, n));
    if (n > 23) {
      b[22] = 64;
      b[23] = 17;
    }
    f += b;
  }
  std::ofstream(path, std::ios::binary) << f;
}

// 60-byte UDP frames at the given seconds.
void write_pcap(const std::string& path, const std::vector<uint32_t>& secs) {
  std::vector<std::pair<uint32_t, uint32_t>> frames;
  for (uint32_t s : secs) frames.emplace_back(s, 60);
  write_frames(path, frames);
}

// Records in a classic pcap (24-byte header, 16 + 60 bytes each).
size_t pcap_records(const std::string& path) {
  const std::string s = slurp(path);
  return s.size() < 24 ? 0 : (s.size() - 24) / 76;
}

std::string replay(const std::string& in, const std::string& out, const std::string& pace, bool vclock = true) {
  return std::string(vclock ? "clock virtual\n" : "") + "ip link add dev out type pcap tx " + out +
         "\nip link set dev out up\nip link add dev in type pcap rx " + in + " pace " + pace +
         "\ntc qdisc add dev in clsact\n"
         "tc filter add dev in ingress matchall action mirred egress redirect dev out\n"
         "ip link set dev in up\n";
}

TEST(RunFilesTest, TraceMayNotOverwriteTheScriptOrACapture) {
  const std::string script = temp("self.pp");
  const std::string body = "ip link add dev d0 type dummy\n";
  std::ofstream(script) << body;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_main({"run", "--trace", script, script}), 1);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("read by the script"), std::string::npos) << err;
  EXPECT_EQ(slurp(script), body);  // untouched

  // --trace on the file a pcap tx device writes: the device line is refused.
  const std::string cap = temp("both.pcap"), in = temp("in.pcap");
  write_pcap(in, {1, 2});
  std::ofstream(script) << replay(in, cap, "file");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_main({"run", "--trace", cap, script}), 1);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(":2: "), std::string::npos) << err;
  EXPECT_NE(err.find("already written by --trace"), std::string::npos) << err;
  for (const auto& f : {script, cap, in}) std::remove(f.c_str());
}

TEST(RunFilesTest, OneWriterPerFileAndNoTxOnTheRxFile) {
  const std::string cap = temp("one.pcap"), in = temp("rx.pcap");
  write_pcap(in, {1});
  auto r = run_pp("ip link add dev a type pcap tx " + cap + "\nip link add dev b type pcap tx " + cap + "\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("already written by device a"), std::string::npos) << r.err;
  r = run_pp("ip link add dev a type pcap rx " + in + " tx " + in + "\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("it would be overwritten"), std::string::npos) << r.err;
  r = run_pp("ip link add dev a type pcap rx " + in + "\ncapture -i a -w " + in + "\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2: "), std::string::npos) << r.err;
  EXPECT_EQ(pcap_records(in), 1u);
  // A deleted device's file is free again.
  r = run_pp("ip link add dev a type pcap tx " + cap + "\nip link del dev a\nip link add dev b type pcap tx " + cap + "\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  // /dev/null keeps nothing: any number of writers.
  r = run_pp("ip link add dev a type pcap tx /dev/null\nip link add dev b type pcap tx /dev/null\n"
             "capture -i a -w /dev/null\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  std::remove(cap.c_str());
  std::remove(in.c_str());
}

TEST(RunFilesTest, TraceDashIsStandardOutput) {
  const std::string in = temp("dash.pcap"), out = temp("dash_out.pcap");
  write_pcap(in, {1, 2});
  const std::string script = temp("dash.pp");
  std::ofstream(script) << replay(in, out, "file") << "ip link show dev out\n";
  char saved[4096];
  ASSERT_NE(::getcwd(saved, sizeof saved), nullptr);
  ASSERT_EQ(::chdir(::testing::TempDir().c_str()), 0);
  std::remove("-");
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"run", "--trace", "-", script});
  std::fflush(stdout);
  const std::string o = ::testing::internal::GetCapturedStdout(), e = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 0) << e;
  struct stat st;
  EXPECT_NE(::stat("-", &st), 0);  // no file named "-"
  ASSERT_EQ(::chdir(saved), 0);
  EXPECT_NE(o.find("\"verdict\":\"sent\""), std::string::npos) << o;
  EXPECT_NE(o.find("{\"end\":"), std::string::npos) << o;
  EXPECT_EQ(o.find("out: <"), std::string::npos) << o;  // the script's output went to stderr
  EXPECT_NE(e.find("out: <"), std::string::npos) << e;
  for (const auto& f : {in, out, script}) std::remove(f.c_str());
}

// ts_sec is unsigned: records after 2038-01-19 pace by their real distance.
TEST(ReplayTime, TimestampsPast2038PaceCorrectly) {
  const std::string in = temp("y2038.pcap"), out = temp("y2038_out.pcap"), trace = temp("y2038.jsonl");
  const uint32_t t = 0x7fffffffu;  // 2038-01-19 03:14:07
  write_pcap(in, {t, t + 1, t + 3});
  const std::string script = temp("y2038.pp");
  std::ofstream(script) << replay(in, out, "file");
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"run", "--trace", trace, script});
  ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << e;
  std::vector<uint64_t> sent;
  std::ifstream tin(trace);
  for (std::string line; std::getline(tin, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("verdict", "") == "sent") sent.push_back(j["t_ns"].get<uint64_t>());
  }
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[1] - sent[0], 1'000'000'000u);
  EXPECT_EQ(sent[2] - sent[0], 3'000'000'000u);
  for (const auto& f : {in, out, trace, script}) std::remove(f.c_str());
}

// On the wall clock too: a replay whose seconds cross 2^31 waits the one real second
// between its records and ends with both written.
TEST(ReplayTime, TimestampsPast2038PaceOnTheWallClock) {
  const std::string in = temp("y2038w.pcap"), out = temp("y2038w_out.pcap");
  write_pcap(in, {0x7fffffffu, 0x80000000u});
  const std::string script = temp("y2038w.pp");
  std::ofstream(script) << replay(in, out, "file", false);
  const auto t0 = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"run", script});
  ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << e;
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, std::chrono::milliseconds(900));  // paced by the one-second gap
  EXPECT_LT(took, std::chrono::seconds(30));        // not by a wrapped, 68-year one
  EXPECT_EQ(pcap_records(out), 2u);
  for (const auto& f : {in, out, script}) std::remove(f.c_str());
}

// Two records 4e9 s apart on the virtual clock: the trace's bins widen instead of
// covering the gap at 10 ms each; the run ends at once.
TEST(ReplayTime, FarApartRecordsTraceQuickly) {
  const std::string in = temp("far.pcap"), out = temp("far_out.pcap"), trace = temp("far.jsonl");
  write_pcap(in, {1, 4'000'000'001u});
  const std::string script = temp("far.pp");
  std::ofstream(script) << replay(in, out, "file");
  const auto t0 = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"run", "--trace", trace, script});
  ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(pcap_records(out), 2u);
  std::ifstream tin(trace);
  bool summary = false;
  for (std::string line; std::getline(tin, line);) {
    auto j = nlohmann::json::parse(line);
    if (!j.contains("summary") || j["summary"]["dev"] != "out") continue;
    summary = true;
    const auto& s = j["summary"];
    EXPECT_LE(s["throughput_bps"].size(), 65536u);
    EXPECT_GE(s["bin_ns"].get<uint64_t>() * s["throughput_bps"].size(), 4'000'000'000'000'000'000ull);
  }
  EXPECT_TRUE(summary);
  for (const auto& f : {in, out, trace, script}) std::remove(f.c_str());
}

TEST(ReplayTime, PacingThatWouldOverflowIsRefused) {
  const std::string in = temp("ovf.pcap"), out = temp("ovf_out.pcap");
  write_pcap(in, {1, 2});
  auto r = run_pp(replay(in, out, "multiplier 1e-300"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("out of range"), std::string::npos) << r.err;
  // In range, but the pcap's span at that multiplier is past 2^62 ns: the record is named.
  write_pcap(in, {1, 4'000'000'001u});
  r = run_pp(replay(in, out, "multiplier 1e-6"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("record 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("146 years"), std::string::npos) << r.err;
  std::remove(in.c_str());
  std::remove(out.c_str());
}

TEST(SleepLimits, AYearOnTheVirtualClockAnHourOnTheReal) {
  auto r = run_pp("clock virtual\nsleep 86400\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run_pp("sleep 4000\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":1: sleep: at most 3600 s on the real clock"), std::string::npos) << r.err;
  r = run_pp("clock virtual\nsleep 40000000\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("bad sleep time"), std::string::npos) << r.err;
}

// SIGTERM during a long replay gap: what the tx device counted is on disk, the run
// ends with 128 + SIGTERM and says where it stopped.
TEST(StopSignals, SigtermFlushesWriters) {
  for (int sig : {SIGTERM, SIGHUP, SIGINT}) {
    SCOPED_TRACE(sig);
    const std::string in = temp("term.pcap"), out = temp("term_out.pcap"), trace = temp("term.jsonl"),
                      script = temp("term.pp"), log = temp("term.log");
    write_pcap(in, {1, 1, 1, 100});  // three frames, then a 99 s gap
    std::ofstream(script) << replay(in, out, "file", false) << "ip link show\n";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      ::execl(PKTPATH_BINARY, "pktpath", "run", "--trace", trace.c_str(), script.c_str(), nullptr);
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::kill(pid, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const std::string l = slurp(log);
    if (sig == SIGINT) {
      // Ctrl-C stops the replay; the script goes on to its last line.
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << l;
      EXPECT_NE(l.find("out: <"), std::string::npos) << l;
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig) << status << " " << l;
      EXPECT_NE(l.find("stopped by SIG"), std::string::npos) << l;
    }
    EXPECT_EQ(pcap_records(out), 3u) << l;
    EXPECT_NE(slurp(trace).find("{\"end\":"), std::string::npos);
    for (const auto& f : {in, out, trace, script, log}) std::remove(f.c_str());
  }
}


// Record times (ns) of a classic pcap, microsecond or nanosecond.
std::vector<uint64_t> pcap_times(const std::string& path) {
  const std::string s = slurp(path);
  std::vector<uint64_t> t;
  if (s.size() < 24) return t;
  uint32_t magic;
  std::memcpy(&magic, s.data(), 4);
  const uint64_t scale = magic == 0xA1B23C4Du ? 1 : 1000;
  for (size_t off = 24; off + 16 <= s.size();) {
    uint32_t h[4];
    std::memcpy(h, s.data() + off, 16);
    t.push_back(uint64_t(h[0]) * 1'000'000'000u + uint64_t(h[1]) * scale);
    off += 16 + h[2];
  }
  return t;
}

// A classful parent (htb, prio, tbf) over a leaf, timer-driven or not (netem, tbf,
// pfifo), on either clock: a leaf's watchdog reschedules the root, so packets leave
// through the parent and at its rate, and the root counts every one it sent. 100 × 1000 B
// at htb's 10 Mbit/s take ~80 ms (one per 0.8 ms, less the burst).
TEST(LeafWatchdog, EveryParentOverEveryLeafSendsThroughTheParent) {
  const char* leaves[] = {"netem delay 10ms", "tbf rate 5mbit burst 5k latency 1s", "pfifo"};
  for (const bool vclock : {true, false})
    for (const std::string parent : {"htb", "prio", "tbf"})
      for (const std::string leaf : leaves) {
        SCOPED_TRACE(parent + " over " + leaf + (vclock ? ", virtual clock" : ", real clock"));
        const std::string out = temp("leaf.pcap");
        std::string tree;
        if (parent == "htb")
          tree = "tc qdisc add dev out root handle 1: htb default 10\n"
                 "tc class add dev out parent 1: classid 1:10 htb rate 10mbit\n"
                 "tc qdisc add dev out parent 1:10 handle 10: " + leaf + "\n";
        else if (parent == "prio")
          for (int band = 1; band <= 3; ++band)
            tree += "tc qdisc add dev out parent 1:" + std::to_string(band) + " handle " +
                    std::to_string(10 + band) + ": " + leaf + "\n";
        else
          tree = "tc qdisc add dev out root handle 1: tbf rate 10mbit burst 10k latency 1s\n"
                 "tc qdisc add dev out parent 1:1 handle 10: " + leaf + "\n";
        if (parent == "prio") tree = "tc qdisc add dev out root handle 1: prio\n" + tree;
        auto r = run_pp(std::string(vclock ? "clock virtual\n" : "") + "ip link add dev out type pcap tx " + out +
                        "\n" + tree + "ip link set dev out up\nsend dev out count 100 size 1000\nsleep 0.5\n"
                        "tc -s qdisc show dev out\n");
        ASSERT_EQ(r.rc, 0) << r.err;
        const std::string root_line = "qdisc " + parent + " 1: root";
        const size_t at = r.out.find(root_line);
        ASSERT_NE(at, std::string::npos) << r.out;
        const std::string root_stats = r.out.substr(at, r.out.find("qdisc", at + 5) - at);
        EXPECT_NE(root_stats.find("Sent 100000 bytes 100 pkt (dropped 0"), std::string::npos) << r.out;
        EXPECT_NE(root_stats.find("backlog 0b 0p"), std::string::npos) << r.out;
        const std::vector<uint64_t> t = pcap_times(out);
        ASSERT_EQ(t.size(), 100u);
        if (vclock && parent != "prio") {
          EXPECT_GE(t.back() - t.front(), 60'000'000u);  // shaped by the parent
        }
        if (vclock && parent == "prio" && leaf == "pfifo") {
          EXPECT_LE(t.back() - t.front(), 1'000'000u);  // not shaped at all
        }
        std::remove(out.c_str());
      }
}


// Frames of the given lengths, one per second.
void write_sized_pcap(const std::string& path, const std::vector<uint32_t>& lens) {
  std::vector<std::pair<uint32_t, uint32_t>> frames;
  uint32_t t = 1;
  for (uint32_t n : lens) frames.emplace_back(t++, n);
  write_frames(path, frames);
}

// A capture's GRO/TSO segments (up to 64 KiB) replay whole when the device's MTU allows
// them; above the MTU they are dropped, and the trace names the device and length.
TEST(LargeFrames, ReplayUpToTheMtu) {
  const std::string in = temp("big.pcap"), out = temp("big_out.pcap"), trace = temp("big.jsonl");
  const std::vector<uint32_t> lens = {1000, 9000, 65549, 1514};
  write_sized_pcap(in, lens);
  const std::string script = temp("big.pp");
  std::ofstream(script) << "clock virtual\nip link add dev out type pcap tx " << out
                        << "\nip link set dev out mtu 65535\nip link set dev out up\n"
                           "ip link add dev in type pcap rx " << in << " pace file\n"
                           "ip link set dev in mtu 65535\n"
                           "tc qdisc add dev in clsact\n"
                           "tc filter add dev in ingress matchall action mirred egress redirect dev out\n"
                           "ip link set dev in up\nip link set dev in down\nip link set dev in mtu 1500\n"
                           "ip link set dev in up\n";
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"run", "--trace", trace, script});
  ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << e;
  // First pass (MTU 65535): all four; second (MTU 1500): 1000 and 1514 only.
  const std::string s = slurp(out);
  std::vector<uint32_t> got;
  for (size_t off = 24; off + 16 <= s.size();) {
    uint32_t h[4];
    std::memcpy(h, s.data() + off, 16);
    got.push_back(h[2]);
    off += 16 + h[2];
  }
  EXPECT_EQ(got, (std::vector<uint32_t>{1000, 9000, 65549, 1514, 1000, 1514}));
  std::ifstream tin(trace);
  std::vector<nlohmann::json> drops;
  for (std::string line; std::getline(tin, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("verdict", "") == "dropped") drops.push_back(j);
  }
  ASSERT_EQ(drops.size(), 2u);
  for (const auto& d : drops) {
    EXPECT_EQ(d["dev"], "in");
    EXPECT_EQ(d["reason"], "PKT_TOO_BIG");
  }
  EXPECT_EQ(drops[0]["len"], 9000);
  EXPECT_EQ(drops[1]["len"], 65549);
  for (const auto& f : {in, out, trace, script}) std::remove(f.c_str());
}


// A failing `bpf` line is one `FILE:LINE: message (at "WORD")`, the command's reason in it.
TEST(CommandLines, FailureIsOneLineWithTheReason) {
  auto r = run_pp("ip link add dev d0 type dummy\nbpf check --bytecode '1,6 0 0'\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.find("command failed"), std::string::npos) << r.err;
  const size_t at = r.err.find(":2: bpf ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  EXPECT_NE(r.err.find("(at \"bpf check\")"), std::string::npos) << r.err;
}


// An htb class a filter's classid (flowid) names cannot be deleted (htb_delete: "HTB
// class in use"); once the filter is gone it can.
TEST(ClassInUse, HtbClassNamedByAFilterStays) {
  for (const std::string filter : {"u32 match ip dst 10.0.0.1/32 flowid 1:10", "matchall classid 1:10"}) {
    SCOPED_TRACE(filter);
    const std::string setup =
        "ip link add dev d0 type dummy\n"
        "tc qdisc add dev d0 root handle 1: htb default 20\n"
        "tc class add dev d0 parent 1: classid 1:10 htb rate 1mbit\n"
        "tc class add dev d0 parent 1: classid 1:20 htb rate 1mbit\n"
        "tc filter add dev d0 parent 1: protocol ip pref 1 " + filter + "\n";
    auto r = run_pp(setup + "tc class del dev d0 classid 1:10\n");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.err.find(":6: HTB class in use"), std::string::npos) << r.err;
    r = run_pp(setup + "tc class del dev d0 classid 1:20\ntc filter del dev d0 parent 1: pref 1\n"
                       "tc class del dev d0 classid 1:10\ntc class show dev d0\n");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out.find("1:10"), std::string::npos) << r.out;
  }
}


// tbf's class 1 takes any qdisc (tbf_graft): packets pass the grafted child, shaped by
// tbf, and a change of tbf's rate keeps the child.
TEST(TbfChild, GraftedQdiscCarriesTheTraffic) {
  auto r = run_pp(
      "clock virtual\nip link add dev d0 type dummy\nip link set dev d0 up\n"
      "tc qdisc add dev d0 root handle 10: tbf rate 1mbit burst 10k latency 50ms\n"
      "tc qdisc add dev d0 parent 10:1 handle 20: pfifo limit 7\n"
      "tc qdisc change dev d0 root handle 10: tbf rate 2mbit burst 10k latency 50ms\n"
      "send dev d0 count 30 size 1000\nsleep 1\n"
      "tc -s qdisc show dev d0\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const size_t child = r.out.find("qdisc pfifo 20: parent 10:1 limit 7p");
  ASSERT_NE(child, std::string::npos) << r.out;
  // The burst (10 frames) passes at once, the pfifo holds 7 more, the rest are dropped
  // by the child; all 17 have left within the second at 2 Mbit/s.
  EXPECT_NE(r.out.find("Sent 17000 bytes 17 pkt (dropped 13", child), std::string::npos) << r.out;
  const size_t root = r.out.find("qdisc tbf 10: root");
  ASSERT_NE(root, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rate 2Mbit", root), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Sent 17000 bytes 17 pkt (dropped 13", root), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pktpath::cli
