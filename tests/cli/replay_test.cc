// `clock virtual` replays and `pktpath run --trace`: the same script and capture give
// byte-identical traces and tx captures; shapers on the virtual clock send at the times
// their rates give; every packet of a capture is in the trace (sent + dropped) or still
// queued; bad `clock` lines name their word; `pktpath plot` draws or says what is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/script_run_util.h"

namespace pktpath::cli {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/pp_replay_" + std::to_string(::getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

// A nanosecond pcap of `n` IPv4/UDP frames of `size` bytes, `gap_ns` apart (0: all at
// the same instant).
void write_burst(const std::string& path, unsigned n, uint32_t size, uint32_t gap_ns = 0) {
  std::string f;
  put32(f, 0xA1B23C4D);
  put32(f, 2 | 4u << 16);  // version 2.4
  put32(f, 0);
  put32(f, 0);
  put32(f, 65535);
  put32(f, 1);  // EN10MB
  for (unsigned i = 0; i < n; ++i) {
    const uint64_t at = uint64_t{i} * gap_ns;
    put32(f, 1'700'000'000 + static_cast<uint32_t>(at / 1'000'000'000));
    put32(f, static_cast<uint32_t>(at % 1'000'000'000));
    put32(f, size);
    put32(f, size);
    std::string b(size, '\0');
    const unsigned char hdr[] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0};
    std::memcpy(b.data(), hdr, sizeof hdr);
    b[16] = static_cast<char>((size - 14) >> 8);
    b[17] = static_cast<char>((size - 14) & 0xff);
    b[22] = 64;
    b[23] = 17;
    f += b;
  }
  std::ofstream(path, std::ios::binary) << f;
}

struct Trace {
  std::vector<nlohmann::json> sent, dropped, summaries, devices;
  nlohmann::json end;
};

Trace read_trace(const std::string& path) {
  Trace t;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("summary")) t.summaries.push_back(j["summary"]);
    else if (j.contains("device")) t.devices.push_back(j["device"]);
    else if (j.contains("end")) t.end = j["end"];
    else if (j["verdict"] == "sent") t.sent.push_back(j);
    else t.dropped.push_back(j);
  }
  return t;
}

int run_traced(const std::string& script, const std::string& trace, std::string* err = nullptr,
               const std::vector<std::string>& opts = {}) {
  const std::string path = temp("script.pp");
  std::ofstream(path) << script;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::vector<std::string> args = {"run", "--trace", trace};
  args.insert(args.end(), opts.begin(), opts.end());
  args.push_back(path);
  const int rc = run_main(args);
  std::fflush(stdout);
  ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  if (err) *err = e;
  std::remove(path.c_str());
  return rc;
}

// On the virtual clock: in0 replays IN (at `pace`), tc redirects it to out0, whose root
// is `tree`, and which writes OUT; then the `after` lines.
std::string shaper_script(const std::string& in, const std::string& out, const std::string& tree,
                          const std::string& pace, const std::string& after) {
  return "clock virtual\n"
         "ip link add dev out0 type pcap tx " + out + "\n" + tree +
         "ip link set dev out0 up\n"
         "ip link add dev in0 type pcap rx " + in + pace + "\n"
         "tc qdisc add dev in0 clsact\n"
         "tc filter add dev in0 ingress matchall action mirred egress redirect dev out0\n"
         "ip link set dev in0 up\n" + after;
}

// The example: the capture through htb with fq_codel leaves, on the virtual clock.
int run_example(const std::string& trace, const std::string& out_pcap, std::string* err) {
  ::setenv("PP_CAPTURE", (std::string(PKTPATH_SOURCE_DIR) + "/examples/what-would-tc-do.pcap").c_str(), 1);
  ::setenv("PP_OUT", out_pcap.c_str(), 1);
  const std::string script = slurp(std::string(PKTPATH_SOURCE_DIR) + "/examples/what-would-tc-do.pp");
  const int rc = run_traced(script, trace, err);
  ::unsetenv("PP_CAPTURE");
  ::unsetenv("PP_OUT");
  return rc;
}

TEST(VirtualReplay, TwoRunsGiveIdenticalTraceAndTxCapture) {
  const std::string t1 = temp("a.jsonl"), t2 = temp("b.jsonl"), o1 = temp("a.pcap"), o2 = temp("b.pcap");
  std::string err;
  ASSERT_EQ(run_example(t1, o1, &err), 0) << err;
  ASSERT_EQ(run_example(t2, o2, &err), 0) << err;
  const std::string a = slurp(t1), b = slurp(t2);
  EXPECT_GT(a.size(), 1000u);
  EXPECT_EQ(a, b);
  const std::string pa = slurp(o1), pb = slurp(o2);
  EXPECT_GT(pa.size(), 24u);
  EXPECT_EQ(pa, pb);
  for (const auto& f : {t1, t2, o1, o2}) std::remove(f.c_str());
}

TEST(VirtualReplay, AccountingHoldsInTheTrace) {
  const std::string t = temp("acct.jsonl"), o = temp("acct.pcap");
  std::string err;
  ASSERT_EQ(run_example(t, o, &err), 0) << err;
  const Trace tr = read_trace(t);
  ASSERT_TRUE(tr.end.is_object());
  const uint64_t made = 400;  // the capture's records (examples/what-would-tc-do-capture.py)
  EXPECT_EQ(tr.end["sent"].get<uint64_t>(), tr.sent.size());
  EXPECT_EQ(tr.end["dropped"].get<uint64_t>(), tr.dropped.size());
  EXPECT_EQ(tr.sent.size() + tr.dropped.size() + tr.end["queued"].get<uint64_t>(), made);
  // The shaper held packets back: some left late, each class has a summary, and the
  // summaries add up to the records.
  uint64_t late = 0, sum_sent = 0, sum_dropped = 0;
  for (const auto& s : tr.sent) late += s["sojourn_ns"].get<uint64_t>() > 1'000'000;
  EXPECT_GT(late, 10u);
  std::vector<std::string> classes;
  for (const auto& s : tr.summaries) {
    classes.push_back(s["class"]);
    sum_sent += s["sent"].get<uint64_t>();
    sum_dropped += s["dropped"].get<uint64_t>();
    EXPECT_LE(s["sojourn_ns"]["p50"].get<uint64_t>(), s["sojourn_ns"]["p99"].get<uint64_t>());
    // Drops by reason: the class's dropped records, counted by their reason.
    std::map<std::string, uint64_t> want;
    for (const auto& d : tr.dropped)
      if (d["dev"] == s["dev"] && d["class"] == s["class"]) ++want[d["reason"].get<std::string>()];
    std::map<std::string, uint64_t> got;
    for (const auto& [why, n] : s["drop_reasons"].items()) got[why] = n.get<uint64_t>();
    EXPECT_EQ(got, want) << s["class"];
  }
  EXPECT_EQ(sum_sent, tr.sent.size());
  EXPECT_EQ(sum_dropped, tr.dropped.size());
  for (const char* c : {"1:10", "1:20", "1:30"})
    EXPECT_NE(std::find(classes.begin(), classes.end(), c), classes.end()) << c;
  // One record per device: its classes' counts, reasons and bins added up.
  std::set<std::string> devs;
  for (const auto& s : tr.summaries) devs.insert(s["dev"].get<std::string>());
  ASSERT_EQ(tr.devices.size(), devs.size());
  for (const auto& d : tr.devices) {
    uint64_t sent = 0, dropped = 0, bytes = 0, max = 0;
    std::map<std::string, uint64_t> reasons;
    std::vector<uint64_t> bins;
    for (const auto& s : tr.summaries) {
      if (s["dev"] != d["dev"]) continue;
      sent += s["sent"].get<uint64_t>();
      dropped += s["dropped"].get<uint64_t>();
      bytes += s["bytes"].get<uint64_t>();
      max = std::max(max, s["sojourn_ns"]["max"].get<uint64_t>());
      for (const auto& [why, n] : s["drop_reasons"].items()) reasons[why] += n.get<uint64_t>();
      ASSERT_EQ(s["bin_ns"], d["bin_ns"]);
      const auto& b = s["throughput_bps"];
      if (bins.size() < b.size()) bins.resize(b.size());
      for (size_t i = 0; i < b.size(); ++i) bins[i] += b[i].get<uint64_t>();
    }
    EXPECT_EQ(d["sent"].get<uint64_t>(), sent) << d["dev"];
    EXPECT_EQ(d["dropped"].get<uint64_t>(), dropped);
    EXPECT_EQ(d["bytes"].get<uint64_t>(), bytes);
    EXPECT_EQ(d["sojourn_ns"]["max"].get<uint64_t>(), max);
    std::map<std::string, uint64_t> got;
    for (const auto& [why, n] : d["drop_reasons"].items()) got[why] = n.get<uint64_t>();
    EXPECT_EQ(got, reasons);
    ASSERT_EQ(d["throughput_bps"].size(), bins.size());
    for (size_t i = 0; i < bins.size(); ++i)  // each class's bin rounds down on its own
      EXPECT_NEAR(double(d["throughput_bps"][i].get<uint64_t>()), double(bins[i]), 8.0 * 3) << i;
  }
  std::remove(t.c_str());
  std::remove(o.c_str());
}

// Ten 1000-byte frames at one instant through `tree` on out0 (pace file), then a
// second of sleep; the trace, and out0's tx capture in *pcap.
Trace shape_burst(const std::string& name, const std::string& tree, std::string* pcap) {
  const std::string in = temp(name + "_in.pcap"), t = temp(name + ".jsonl"), o = temp(name + "_out.pcap");
  write_burst(in, 10, 1000);
  std::string err;
  EXPECT_EQ(run_traced(shaper_script(in, o, tree, " pace file", "sleep 1s\n"), t, &err), 0) << err;
  Trace tr = read_trace(t);
  *pcap = slurp(o);
  for (const auto& f : {in, t, o}) std::remove(f.c_str());
  return tr;
}

// tbf at 8 Mbit/s (1000 bytes per ms) with a bucket of one frame: the first leaves at
// once, each next one 1 ms after the last.
TEST(VirtualReplay, TbfDeparturesAreTheRateApart) {
  std::string pcap;
  const Trace tr = shape_burst("tbf", "tc qdisc add dev out0 root handle 1: tbf rate 8mbit burst 1000 limit 100000\n", &pcap);
  ASSERT_EQ(tr.sent.size(), 10u);
  for (size_t k = 0; k < 10; ++k) {
    EXPECT_EQ(tr.sent[k]["t_ns"].get<uint64_t>(), k * 1'000'000) << k;
    EXPECT_EQ(tr.sent[k]["sojourn_ns"].get<uint64_t>(), k * 1'000'000) << k;
    EXPECT_EQ(tr.sent[k]["class"], "1:");
  }
}

// htb at 8 Mbit/s, one class with a bucket of one frame (burst and cburst 1000): the
// first frame leaves at once on a full bucket, the second too (tokens exactly 0 still
// allow sending, as htb_class_mode's `toks < 0` test has it), then one per ms.
TEST(VirtualReplay, HtbDeparturesAreTheRateApart) {
  std::string pcap;
  const Trace tr = shape_burst("htb",
                               "tc qdisc add dev out0 root handle 1: htb default 10\n"
                               "tc class add dev out0 parent 1: classid 1:10 htb rate 8mbit ceil 8mbit burst 1000 cburst 1000\n",
                               &pcap);
  ASSERT_EQ(tr.sent.size(), 10u);
  for (size_t k = 0; k < 10; ++k) {
    const uint64_t want = k == 0 ? 0 : (k - 1) * 1'000'000;
    EXPECT_EQ(tr.sent[k]["t_ns"].get<uint64_t>(), want) << k;
    EXPECT_EQ(tr.sent[k]["class"], "1:10");
  }
  // The tx capture carries the same departure times.
  ASSERT_EQ(pcap.size(), 24u + 10 * (16 + 1000));
  for (size_t k = 0; k < 10; ++k) {
    uint32_t sec, nsec;
    std::memcpy(&sec, pcap.data() + 24 + k * 1016, 4);
    std::memcpy(&nsec, pcap.data() + 28 + k * 1016, 4);
    EXPECT_EQ(uint64_t{sec} * 1'000'000'000ull + nsec, tr.sent[k]["t_ns"].get<uint64_t>()) << k;
  }
}

TEST(VirtualReplay, SleepMovesTheVirtualClockAndFiresTimers) {
  const std::string in = temp("sl_in.pcap"), t = temp("sl.jsonl"), o = temp("sl_out.pcap");
  write_burst(in, 4, 1000);
  std::string err;
  // At 0.8 Mbit/s a frame takes 10 ms: after `sleep 0.015` two are out, the rest after
  // the second sleep; the end record's time is the sum of the sleeps.
  ASSERT_EQ(run_traced(shaper_script(in, o, "tc qdisc add dev out0 root handle 1: tbf rate 800kbit burst 1000 limit 100000\n",
                                     "", "sleep 0.015\nsleep 1s\n"),
                       t, &err),
            0)
      << err;
  const Trace tr = read_trace(t);
  ASSERT_EQ(tr.sent.size(), 4u);
  EXPECT_EQ(tr.sent[1]["t_ns"].get<uint64_t>(), 10'000'000u);
  EXPECT_EQ(tr.sent[3]["t_ns"].get<uint64_t>(), 30'000'000u);
  EXPECT_EQ(tr.end["t_ns"].get<uint64_t>(), 1'015'000'000u);
  EXPECT_EQ(tr.end["queued"].get<uint64_t>(), 0u);
  for (const auto& f : {in, t, o}) std::remove(f.c_str());
}

// Five 1000-byte frames captured 2 ms apart into tbf at 0.8 Mbit/s (10 ms a frame), with
// no `pace` and no `sleep`: on the virtual clock the replay keeps the capture's timing
// (frame k arrives at 2k ms) and the clock runs on after the last line until tbf has sent
// them all (frame k leaves at 10k ms, after 8k ms queued).
TEST(VirtualReplay, ACaptureWithoutPaceKeepsItsTimingAndDrains) {
  const std::string in = temp("dr_in.pcap"), t = temp("dr.jsonl"), o = temp("dr_out.pcap");
  write_burst(in, 5, 1000, 2'000'000);
  const std::string tbf = "tc qdisc add dev out0 root handle 1: tbf rate 800kbit burst 1000 limit 100000\n";
  std::string err;
  ASSERT_EQ(run_traced(shaper_script(in, o, tbf, "", ""), t, &err), 0) << err;
  EXPECT_EQ(err, "");
  Trace tr = read_trace(t);
  ASSERT_EQ(tr.sent.size(), 5u);
  EXPECT_TRUE(tr.dropped.empty());
  for (uint64_t k = 0; k < 5; ++k) {
    EXPECT_EQ(tr.sent[k]["t_ns"].get<uint64_t>(), k * 10'000'000) << k;
    EXPECT_EQ(tr.sent[k]["sojourn_ns"].get<uint64_t>(), k * 8'000'000) << k;
  }
  EXPECT_EQ(tr.end["t_ns"].get<uint64_t>(), 40'000'000u);
  EXPECT_EQ(tr.end["queued"].get<uint64_t>(), 0u);

  // A drain limit shorter than the queue stops the clock there and says so; what is
  // left is counted as queued, so made = sent + dropped + queued still holds.
  ASSERT_EQ(run_traced(shaper_script(in, o, tbf, "", ""), t, &err, {"--drain-limit", "15ms"}), 0) << err;
  tr = read_trace(t);
  EXPECT_EQ(tr.end["t_ns"].get<uint64_t>(), 8'000'000u + 15'000'000u);  // the last arrival, then the limit
  EXPECT_EQ(tr.sent.size(), 3u);  // at 0, 10 and 20 ms
  EXPECT_EQ(tr.end["queued"].get<uint64_t>(), 2u);
  EXPECT_NE(err.find("2 packets still queued after draining 0.015 s of virtual time (--drain-limit 15ms)"),
            std::string::npos)
      << err;

  // `pace max` takes no time on the virtual clock: every frame arrives at 0.
  ASSERT_EQ(run_traced(shaper_script(in, o, tbf, " pace max", ""), t, &err), 0) << err;
  tr = read_trace(t);
  ASSERT_EQ(tr.sent.size(), 5u);
  for (const auto& r : tr.sent) EXPECT_EQ(r["sojourn_ns"].get<uint64_t>(), r["t_ns"].get<uint64_t>());

  ASSERT_EQ(run_traced(shaper_script(in, o, tbf, "", ""), t, &err, {"--drain-limit", "soon"}), 2);
  for (const auto& f : {in, t, o}) std::remove(f.c_str());
}

// The summary's sojourn percentiles against the records' own sojourns sorted: each is
// the value at the same rank, or above it by at most 1/128 (the histogram's bucket); a
// device record's over all the device's records.
TEST(VirtualReplay, SummaryPercentilesMatchTheSortedRecords) {
  const std::string t = temp("pct.jsonl"), o = temp("pct.pcap");
  std::string err;
  ASSERT_EQ(run_example(t, o, &err), 0) << err;
  const Trace tr = read_trace(t);
  ASSERT_FALSE(tr.summaries.empty());
  ASSERT_FALSE(tr.devices.empty());
  size_t checked = 0;
  auto check = [&](const nlohmann::json& s, bool per_class) {
    std::vector<uint64_t> v;
    for (const auto& r : tr.sent)
      if (r["dev"] == s["dev"] && (!per_class || r["class"] == s["class"])) v.push_back(r["sojourn_ns"].get<uint64_t>());
    ASSERT_EQ(v.size(), s["sent"].get<uint64_t>()) << s["dev"];
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    for (const auto& [name, q] : {std::pair{"p50", 0.5}, std::pair{"p90", 0.9}, std::pair{"p99", 0.99}}) {
      const uint64_t want = v[static_cast<size_t>(q * double(v.size() - 1))];
      const uint64_t got = s["sojourn_ns"][name].get<uint64_t>();
      EXPECT_GE(got, want) << s["dev"] << " " << name;
      EXPECT_LE(got - want, want / 128) << s["dev"] << " " << name;
      ++checked;
    }
    EXPECT_EQ(s["sojourn_ns"]["max"].get<uint64_t>(), v.back());
  };
  for (const auto& s : tr.summaries) check(s, true);
  const size_t per_class = checked;
  EXPECT_GE(per_class, 9u);  // three classes, three percentiles each
  for (const auto& d : tr.devices) check(d, false);
  EXPECT_GE(checked - per_class, 3u);  // the shaped device's three
  std::remove(t.c_str());
  std::remove(o.c_str());
}

TEST(VirtualReplay, BadClockLinesNameTheWord) {
  auto r = testutil::run_pp("clock warp\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"warp\""), std::string::npos) << r.err;
  r = testutil::run_pp("clock virtual now\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("\"now\""), std::string::npos) << r.err;
  r = testutil::run_pp("clock\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("clock"), std::string::npos) << r.err;
  r = testutil::run_pp("ip link add dev d0 type dummy\nclock virtual\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("before any device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(at \"virtual\")"), std::string::npos) << r.err;
  // Waiting on the clock cannot end when only events move it.
  r = testutil::run_pp("clock virtual\nip link add dev d0 type dummy\nip link set dev d0 up\n"
                       "pktgen -i d0 -n 10 -w 1000\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("virtual clock"), std::string::npos) << r.err;
  r = testutil::run_pp("clock virtual\nip link add dev d0 type dummy\nip link set dev d0 rps_cpus 1\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("virtual clock"), std::string::npos) << r.err;
}

TEST(VirtualReplay, MonotonicClockStillRunsTheScriptAndTraces) {
  const std::string t = temp("mono.jsonl");
  std::string err;
  ASSERT_EQ(run_traced("clock monotonic\nip link add dev d0 type dummy\nip link set dev d0 up\n"
                       "tc qdisc add dev d0 root handle 1: pfifo limit 5\n"
                       "send dev d0 count 20\n",
                       t, &err),
            0)
      << err;
  const Trace tr = read_trace(t);
  EXPECT_EQ(tr.sent.size() + tr.dropped.size() + tr.end["queued"].get<uint64_t>(), 20u);
  EXPECT_GT(tr.sent.size(), 0u);
  std::remove(t.c_str());
}

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

std::string small_trace() {
  const std::string t = temp("plot.jsonl"), o = temp("plot.pcap");
  std::string err;
  EXPECT_EQ(run_example(t, o, &err), 0) << err;
  std::remove(o.c_str());
  return t;
}

TEST(Plot, DrawsANonEmptySvg) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox)";
  const std::string t = small_trace(), svg = temp("plot.svg");
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"plot", t, "-o", svg});
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << err;
  const std::string s = slurp(svg);
  EXPECT_GT(s.size(), 1000u);
  EXPECT_NE(s.find("<svg"), std::string::npos);
  EXPECT_NE(s.find("sojourn"), std::string::npos);
  std::remove(t.c_str());
  std::remove(svg.c_str());
}

// Two configurations on the same capture (fq_codel leaves, then pfifo ones), overlaid:
// every series is titled with its run's label.
TEST(Plot, TwoTracesAreOverlaidUnderTheirLabels) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox)";
  const std::string a = small_trace(), b = temp("pfifo.jsonl"), o = temp("pfifo.pcap"), svg = temp("cmp.svg");
  ::setenv("PP_LEAF", "pfifo limit 40", 1);
  std::string err;
  const int rc_b = run_example(b, o, &err);
  ::unsetenv("PP_LEAF");
  ASSERT_EQ(rc_b, 0) << err;
  EXPECT_NE(slurp(a), slurp(b));  // the leaves changed what happened
  ::testing::internal::CaptureStderr();
  int rc = run_main({"plot", a, b, "--label", "fq_codel", "--label", "pfifo", "-o", svg});
  err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << err;
  const std::string s = slurp(svg);
  for (const char* title : {"fq_codel: out0 1:10", "pfifo: out0 1:10", "fq_codel: out0", "pfifo: out0 1:30"})
    EXPECT_NE(s.find(title), std::string::npos) << title;
  // Usage: three traces, more labels than traces, a label with a control character.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_main({"plot", a, b, a, "-o", svg}), 2);
  EXPECT_EQ(run_main({"plot", a, "--label", "x", "--label", "y", "-o", svg}), 2);
  EXPECT_EQ(run_main({"plot", a, b, "--label", "x\ny", "-o", svg}), 2);
  ::testing::internal::GetCapturedStderr();
  for (const auto& f : {a, b, o, svg}) std::remove(f.c_str());
}

TEST(Plot, MissingGnuplotIsAClearError) {
  const std::string t = small_trace(), svg = temp("nogp.svg");
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", "", 1);
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"plot", t, "-o", svg});
  const std::string err = ::testing::internal::GetCapturedStderr();
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("gnuplot-nox"), std::string::npos) << err;
  EXPECT_NE(err.find("PATH"), std::string::npos) << err;
  // Usage: a picture name that is neither .png nor .svg.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_main({"plot", t, "-o", temp("x.pdf")}), 2);
  ::testing::internal::GetCapturedStderr();
  std::remove(t.c_str());
}

TEST(Plot, ABadTraceNamesItsLine) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox)";
  const std::string t = temp("bad.jsonl");
  std::ofstream(t) << "{\"t_ns\":1,\"dev\":\"a\",\"len\":60,\"verdict\":\"sent\",\"sojourn_ns\":0,\"class\":\"1:\",\"qlen\":0}\nnot json\n";
  ::testing::internal::CaptureStderr();
  const int rc = run_main({"plot", t, "-o", temp("bad.svg")});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find(":2:"), std::string::npos) << err;
  std::remove(t.c_str());
}

}  // namespace
}  // namespace pktpath::cli
