// Fault injection from script lines: testdrv's link options (busy_every, drop_every,
// xmit_delay_us) on `ip link add|set`, `fault alloc every N`, and the accounting after a
// script with faults on: packets made = transmitted + dropped (by reason) + still queued.
// Also ScriptLimits, which bound what the script fuzzer can make a line cost.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/script_exec.h"
#include "cli/script_text.h"
#include "core/cpu.h"
#include "drivers/testdrv.h"

namespace pktpath::cli {
namespace {

// Runs a script in-process on `runner`; returns the output lines. Fails the test on a
// parse or execution error.
std::vector<std::string> run_on(ScriptRunner& runner, std::FILE* f, char*& buf, size_t& len,
                                const std::string& text) {
  std::vector<ScriptLine> lines;
  size_t bad = 0, last = 0;
  ScriptError e;
  EXPECT_TRUE(parse_script(text, lines, &bad, &last, e)) << bad << ": " << e.msg << " at " << e.word;
  for (const ScriptLine& l : lines) EXPECT_TRUE(runner.execute(l.cmd, e)) << l.line << ": " << e.msg;
  std::fflush(f);
  std::vector<std::string> out;
  std::istringstream in(std::string(buf, len));
  for (std::string s; std::getline(in, s);) out.push_back(s);
  return out;
}

struct Harness {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  ScriptRunner runner{true, f};
  ~Harness() {
    std::fclose(f);
    std::free(buf);
  }
  std::vector<std::string> run(const std::string& text) { return run_on(runner, f, buf, len, text); }
};

ScriptError parse_error(const std::string& text) {
  std::vector<ScriptLine> lines;
  size_t bad = 0, last = 0;
  ScriptError e;
  EXPECT_FALSE(parse_script(text, lines, &bad, &last, e)) << text;
  return e;
}

TEST(ScriptFault, TestDrvOptionsReachTheDriver) {
  Harness h;
  h.run("ip link add dev t0 type testdrv busy_every 7 drop_every 11 xmit_delay_us 5\n");
  NetDevice* d = h.runner.table().find("t0");
  ASSERT_NE(d, nullptr);
  TestDrvState& s = testdrv_state(*d);
  EXPECT_EQ(s.busy_every, 7u);
  EXPECT_EQ(s.drop_every, 11u);
  EXPECT_EQ(s.xmit_delay_us, 5u);
  h.run("ip link set dev t0 type testdrv busy_every 0 xmit_delay_us 0\n");
  EXPECT_EQ(s.busy_every, 0u);
  EXPECT_EQ(s.drop_every, 11u);
  EXPECT_EQ(s.xmit_delay_us, 0u);
}

TEST(ScriptFault, BadLinkOptionsAreRejectedNamingTheWord) {
  ScriptError e = parse_error("ip link add dev d0 type dummy busy_every 3\n");
  EXPECT_EQ(e.word, "busy_every");
  e = parse_error("ip link add dev t0 type testdrv drop_every\n");
  EXPECT_EQ(e.word, "drop_every");
  e = parse_error("ip link add dev t0 type testdrv xmit_delay_us 5000\n");
  EXPECT_EQ(e.word, "5000");
  EXPECT_NE(e.msg.find("0..1000"), std::string::npos) << e.msg;
  e = parse_error("ip link add dev t0 type testdrv busy_every -1\n");
  EXPECT_EQ(e.word, "-1");
  e = parse_error("ip link set dev t0 type testdrv\n");
  EXPECT_NE(e.msg.find("nothing to change"), std::string::npos) << e.msg;
  e = parse_error("fault alloc every\n");
  EXPECT_NE(e.msg.find("fault alloc every"), std::string::npos) << e.msg;
  e = parse_error("fault pool every 3\n");
  EXPECT_EQ(e.word, "pool");
  e = parse_error("fault alloc every 3 more\n");
  EXPECT_EQ(e.word, "more");
}

TEST(ScriptFault, LinkSetOptionsNeedTheSameKind) {
  Harness h;
  h.run("ip link add dev d0 type dummy\n");
  std::vector<ScriptLine> lines;
  size_t bad = 0, last = 0;
  ScriptError e;
  ASSERT_TRUE(parse_script("ip link set dev d0 type testdrv drop_every 2\n", lines, &bad, &last, e));
  EXPECT_FALSE(h.runner.execute(lines[0].cmd, e));
  EXPECT_EQ(e.word, "testdrv");
}

TEST(ScriptFault, EveryAllocationFailingMakesNoPacket) {
  Harness h;
  auto out = h.run(
      "ip link add dev t0 type testdrv\nip link set dev t0 up\n"
      "fault alloc every 1\nsend dev t0 count 10\n"
      "fault alloc every 0\nsend dev t0 count 10\n");
  ASSERT_EQ(out.size(), 2u);
  auto a = nlohmann::json::parse(out[0])["send"], b = nlohmann::json::parse(out[1])["send"];
  EXPECT_EQ(a["packets"], 0);
  EXPECT_EQ(a["errors"], 10);
  EXPECT_EQ(b["packets"], 10);
  EXPECT_EQ(b["errors"], 0);
  EXPECT_EQ(testdrv_state(*h.runner.table().find("t0")).transmitted.load(), 10u);
}

TEST(ScriptFault, NewCpusTakeThePoolsSetting) {
  PacketPool pool{PacketPool::Options{.capacity = 64, .buf_size = 512, .headroom = 64}};
  pool.set_alloc_fail_every(3);
  Cpu cpu(pool);
  int failed = 0;
  for (int i = 0; i < 9; ++i) {
    Packet* p = cpu.alloc();
    if (!p) {
      ++failed;
      EXPECT_EQ(i % 3, 2);
      continue;
    }
    cpu.free(p);
  }
  EXPECT_EQ(failed, 3);
  EXPECT_EQ(cpu.stats().alloc_fail.get(), 3u);
}

// With every fault on, a script runs to its end and every packet is accounted for.
TEST(ScriptFault, AccountingIsExactWithFaultsOn) {
  const auto before = drop_totals();
  Harness h;
  auto out = h.run(
      "ip link add dev t0 type testdrv busy_every 7 drop_every 11 xmit_delay_us 1\n"
      "ip link set dev t0 up\n"
      "tc qdisc add dev t0 root pfifo limit 8\n"
      "fault alloc every 5\n"
      "send dev t0 count 600 threads 2\n"
      "fault alloc every 1\n"
      "send dev t0 count 40\n"
      "fault alloc every 0\n"
      "tc -s qdisc show dev t0\n"
      "ip -s link show dev t0\n");
  ASSERT_EQ(out.size(), 4u);
  const auto s1 = nlohmann::json::parse(out[0])["send"], s2 = nlohmann::json::parse(out[1])["send"];
  const auto q = nlohmann::json::parse(out[2])[0];
  const auto tx = nlohmann::json::parse(out[3])[0]["stats64"]["tx"];
  const auto after = drop_totals();
  auto delta = [&](DropReason r) {
    return after[static_cast<size_t>(r)] - before[static_cast<size_t>(r)];
  };
  uint64_t drops = 0;
  for (size_t i = 0; i < after.size(); ++i) drops += after[i] - before[i];

  // Made: the first send retries a failed allocation once (as pktgen does), so all 600
  // are made; the second makes none.
  EXPECT_EQ(s2["packets"], 0);
  EXPECT_EQ(s2["errors"], 40);
  const uint64_t made = 600;
  EXPECT_EQ(s1["packets"].get<uint64_t>() + s1["errors"].get<uint64_t>(), made);
  const uint64_t transmitted = tx["packets"], driver_drops = tx["dropped"];
  const uint64_t qdisc_drops = q["drops"], queued = q["qlen"];
  EXPECT_GT(transmitted, 0u);
  EXPECT_GT(driver_drops, 0u);
  EXPECT_EQ(made, transmitted + driver_drops + qdisc_drops + queued);
  // Every drop is counted under one reason: the driver's as NOT_SPECIFIED, the qdisc's
  // as QDISC_DROP, and nothing else dropped.
  EXPECT_EQ(delta(DropReason::NOT_SPECIFIED), driver_drops);
  EXPECT_EQ(delta(DropReason::QDISC_DROP), qdisc_drops);
  EXPECT_EQ(drops, driver_drops + qdisc_drops);
  // The driver saw BUSY (requeued, sent later) and took everything else once.
  TestDrvState& s = testdrv_state(*h.runner.table().find("t0"));
  EXPECT_GT(s.busy_returned.load(), 0u);
  EXPECT_EQ(s.taken.load(), transmitted + driver_drops);
  EXPECT_EQ(q["requeues"].get<uint64_t>(), s.busy_returned.load());
}

TEST(ScriptFault, LimitsBoundSendSleepAndPktgen) {
  Harness h;
  ScriptLimits lim;
  lim.max_packets = 16;
  lim.max_threads = 1;
  lim.max_wait_ns = 1'000'000;
  lim.commands = false;
  lim.write_files = false;
  h.runner.set_limits(lim);
  auto out = h.run(
      "ip link add dev t0 type testdrv\nip link set dev t0 up\n"
      "send dev t0 count 1000000 threads 8\nsleep 3600\n"
      "pktgen -i t0 -n 0 -t 4 --repeat 5\n");
  ASSERT_GE(out.size(), 2u);
  auto s = nlohmann::json::parse(out[0])["send"];
  EXPECT_EQ(s["packets"], 16);
  EXPECT_EQ(s["threads"], 1);
  auto p = nlohmann::json::parse(out[1]);
  EXPECT_EQ(p["threads"].size(), 1u);
  EXPECT_LE(p["total"]["packets"].get<uint64_t>(), 16u);
  std::vector<ScriptLine> lines;
  size_t bad = 0, last = 0;
  ScriptError e;
  ASSERT_TRUE(parse_script("bpf check --bytecode '1,6 0 0 0,'\ncapture -i t0 -w /tmp/x.pcap\n", lines, &bad, &last, e));
  EXPECT_FALSE(h.runner.execute(lines[0].cmd, e));
  EXPECT_FALSE(h.runner.execute(lines[1].cmd, e));
  EXPECT_EQ(e.word, "/tmp/x.pcap");
}

}  // namespace
}  // namespace pktpath::cli
