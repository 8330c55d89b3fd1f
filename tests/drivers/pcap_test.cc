// The pcap device: a replay paced by the file on a VirtualClock, a truncated capture
// (every record before the error delivered, the error naming the record), oversized
// frames dropped, a non-Ethernet capture refused, a tx file that cannot be written (no
// packet counted as sent), and through `pktpath run` a replay redirected by tc to a
// second pcap device whose file matches the input record for record (pcap and pcapng).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/script.h"
#include "cli/script_exec.h"
#include "core/clock.h"
#include "core/cpu.h"
#include "core/dev_xmit.h"
#include "core/link_kind.h"
#include "core/net.h"
#include "core/packet_pool.h"
#include "status_assert.h"

namespace pktpath {
namespace {

struct Record {
  uint64_t ts_ns;
  std::vector<uint8_t> bytes;
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/pp_pcapdev_" + std::to_string(::getpid()) + "_" + name;
}

// Ethernet frames of varied sizes, unicast to 02:00:00:00:00:09, each byte numbered.
std::vector<Record> make_records(unsigned n, uint64_t gap_ns = 1'000'000) {
  std::vector<Record> v;
  uint64_t ts = 1'700'000'000ull * 1'000'000'000ull;
  for (unsigned i = 0; i < n; ++i) {
    Record r;
    r.ts_ns = ts;
    ts += gap_ns * (i % 3 + 1);
    r.bytes.resize(60 + (i * 37) % 1400);
    for (size_t k = 0; k < r.bytes.size(); ++k) r.bytes[k] = static_cast<uint8_t>(k * 7 + i);
    const uint8_t hdr[14] = {0x02, 0, 0, 0, 0, 0x09, 0x02, 0, 0, 0, 0, 0x11, 0x08, 0x00};
    std::memcpy(r.bytes.data(), hdr, 14);
    v.push_back(std::move(r));
  }
  return v;
}

void write_pcap(const std::string& path, const std::vector<Record>& recs, int dlt = DLT_EN10MB) {
  pcap_t* p = pcap_open_dead_with_tstamp_precision(dlt, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  ASSERT_NE(d, nullptr);
  for (const Record& r : recs) {
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(r.ts_ns / 1'000'000'000ull);
    h.ts.tv_usec = static_cast<suseconds_t>(r.ts_ns % 1'000'000'000ull);
    h.caplen = h.len = static_cast<uint32_t>(r.bytes.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &h, r.bytes.data());
  }
  pcap_dump_close(d);
  pcap_close(p);
}

// Every record libpcap reads from `path` (pcap or pcapng); err set if it stops on an error.
std::vector<Record> read_records(const std::string& path, std::string* err = nullptr) {
  char ebuf[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, ebuf);
  std::vector<Record> v;
  if (!p) {
    if (err) *err = ebuf;
    return v;
  }
  pcap_pkthdr* h;
  const u_char* d;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
    EXPECT_EQ(h->caplen, h->len);
    v.push_back({uint64_t(h->ts.tv_sec) * 1'000'000'000ull + uint64_t(h->ts.tv_usec), {d, d + h->caplen}});
  }
  if (rc != PCAP_ERROR_BREAK && err) *err = pcap_geterr(p);
  pcap_close(p);
  return v;
}

class PcapDevTest : public ::testing::Test {
 protected:
  PcapDevTest() {
    cpu.bind();
    cpu.set_clock(&clock);
  }
  ~PcapDevTest() override {
    drive();
    for (const std::string& f : files) std::remove(f.c_str());
  }
  void drive() {
    for (int i = 0; i < 1000 && cpu.has_pending(); ++i) cpu.run_pending();  // a paced replay's timer stays armed
  }
  std::string file(const std::string& name) {
    files.push_back(temp_path(name));
    return files.back();
  }
  // `ip link add dev NAME type pcap` with text options.
  NetDevice* add(const std::string& name, std::vector<std::pair<std::string, std::string>> opts,
                 std::string* err_out = nullptr) {
    NetDevice::Config cfg;
    cfg.name = name;
    std::string err;
    auto d_added = net.devices().add(cfg, "pcap");
    EXPECT_TRUE(ok(d_added));
    NetDevice* d = d_added.value_or(nullptr);
    const LinkKind* k = link_kind_lookup("pcap");
    for (auto& [o, v] : opts) {
      if (!k->set_text_option(*d, o, v, err)) {
        if (err_out) *err_out = err;
        return nullptr;
      }
    }
    return d;
  }
  // A device replaying `recs` from a file of its own at `pace`.
  NetDevice* replayer(const std::string& name, const std::vector<Record>& recs, const std::string& pace) {
    const std::string in = file(name + ".pcap");
    write_pcap(in, recs);
    return add(name, {{"rx", in}, {"pace", pace}});
  }
  // Each record is delivered exactly when due (not a nanosecond before) for a pace whose
  // due times are `due(i)` after the start.
  template <typename Due>
  void expect_paced(NetDevice& d, size_t n, Due due) {
    std::string err;
    const uint64_t start = clock.now_ns();
    ASSERT_TRUE(ok(d.net().devices().set_up(d, true)));
    drive();
    EXPECT_EQ(d.stats_sum().rx_packets, 1u);  // the first record is due at once
    for (size_t i = 1; i < n; ++i) {
      clock.set(start + due(i) - 1);
      drive();
      ASSERT_EQ(d.stats_sum().rx_packets, i) << "record " << i << " early";
      clock.set(start + due(i));
      drive();
      ASSERT_EQ(d.stats_sum().rx_packets, i + 1) << "record " << i << " not delivered when due";
    }
  }
  bool busy(NetDevice& d, std::string& err) { return link_kind_lookup("pcap")->busy(d, cpu, err); }
  PacketPool pool{PacketPool::Options{.capacity = 4096}};
  Cpu cpu{pool};
  VirtualClock clock{5'000'000'000ull};
  Net net{cpu};
  std::vector<std::string> files;
};

TEST_F(PcapDevTest, PaceFileDeliversEachRecordAtItsOwnOffset) {
  const auto recs = make_records(20);
  NetDevice* d = replayer("p0", recs, "file");
  ASSERT_NE(d, nullptr);
  const uint64_t start = clock.now_ns();
  expect_paced(*d, recs.size(), [&](size_t i) { return recs[i].ts_ns - recs[0].ts_ns; });
  std::string err;
  EXPECT_FALSE(busy(*d, err));
  EXPECT_EQ(err, "");
  EXPECT_EQ(clock.now_ns() - start, recs.back().ts_ns - recs.front().ts_ns);  // the file's duration
}

TEST_F(PcapDevTest, PaceMultiplierAndMbps) {
  const auto recs = make_records(10);
  NetDevice* d = replayer("p0", recs, "multiplier 4");
  ASSERT_NE(d, nullptr);
  expect_paced(*d, recs.size(), [&](size_t i) { return (recs[i].ts_ns - recs[0].ts_ns) / 4; });
  NetDevice* m = replayer("p1", recs, "mbps 8");  // one byte a microsecond
  ASSERT_NE(m, nullptr);
  expect_paced(*m, recs.size(), [&](size_t i) {
    uint64_t bytes = 0;
    for (size_t k = 0; k < i; ++k) bytes += recs[k].bytes.size();
    return bytes * 1000;
  });
}

TEST_F(PcapDevTest, PacePpsAndLoop) {
  const auto recs = make_records(5);
  NetDevice* d = replayer("p0", recs, "pps 1000");
  ASSERT_NE(d, nullptr);
  link_kind_lookup("pcap")->set_option(*d, "loop", 3);
  std::string err;
  const uint64_t start = clock.now_ns();
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  for (uint64_t i = 0; i < 15; ++i) {
    clock.set(start + i * 1'000'000);  // 1 ms apart across the loops too
    drive();
    ASSERT_EQ(d->stats_sum().rx_packets, i + 1);
  }
  EXPECT_FALSE(busy(*d, err));
  std::string bad;
  EXPECT_EQ(add("p1", {{"pace", "pps 0"}}, &bad), nullptr);
  EXPECT_NE(bad.find("pace pps needs a number above 0"), std::string::npos) << bad;
}

// A looped replay reads its file once, at up (tcpreplay's --preload-pcap): later passes
// come from memory, so they go on after the file is gone.
TEST_F(PcapDevTest, LoopedReplayPreloadsTheFile) {
  const auto recs = make_records(4);
  NetDevice* d = replayer("p0", recs, "max");
  ASSERT_NE(d, nullptr);
  link_kind_lookup("pcap")->set_option(*d, "loop", 3);
  std::string err;
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  ASSERT_EQ(std::remove(file("p0.pcap").c_str()), 0);
  for (int i = 0; i < 16 && busy(*d, err); ++i) drive();
  EXPECT_FALSE(busy(*d, err));
  EXPECT_EQ(err, "");
  EXPECT_EQ(d->stats_sum().rx_packets, 12u);
}

// A classic pcap written byte by byte: microsecond or nanosecond stamps, this machine's
// byte order or the other, the header's snaplen, and each record's stored length.
void write_classic(const std::string& path, const std::vector<Record>& recs, bool nsec, bool swapped, uint32_t snaplen) {
  std::string out;
  auto u32 = [&](uint32_t v) {
    if (swapped) v = __builtin_bswap32(v);
    out.append(reinterpret_cast<const char*>(&v), 4);
  };
  auto u16 = [&](uint16_t v) {
    if (swapped) v = __builtin_bswap16(v);
    out.append(reinterpret_cast<const char*>(&v), 2);
  };
  u32(nsec ? 0xa1b23c4du : 0xa1b2c3d4u);
  u16(2);
  u16(4);
  u32(0);
  u32(0);
  u32(snaplen);
  u32(DLT_EN10MB);
  for (const Record& r : recs) {
    u32(static_cast<uint32_t>(r.ts_ns / 1'000'000'000ull));
    const uint32_t frac = static_cast<uint32_t>(r.ts_ns % 1'000'000'000ull);
    u32(nsec ? frac : frac / 1000);
    u32(static_cast<uint32_t>(r.bytes.size()));
    u32(static_cast<uint32_t>(r.bytes.size()));
    out.append(reinterpret_cast<const char*>(r.bytes.data()), r.bytes.size());
  }
  std::ofstream(path, std::ios::binary) << out;
}

// Every pass reads the mapped image itself: each gives what libpcap would (stamps in
// either unit and byte order, a record longer than the snaplen cut to it), at the file's
// timing, each pass starting where the last ended.
TEST_F(PcapDevTest, PassesFromThePreloadedImageMatchTheFirst) {
  auto recs = make_records(6);
  recs[2].bytes.resize(150);
  constexpr uint32_t kSnap = 120;
  uint64_t pass_bytes = 0;
  for (const Record& r : recs) pass_bytes += std::min<uint64_t>(r.bytes.size(), kSnap);
  const uint64_t span = recs.back().ts_ns - recs.front().ts_ns;
  int variant = 0;
  for (bool nsec : {false, true}) {
    for (bool swapped : {false, true}) {
      SCOPED_TRACE(std::string(nsec ? "nsec" : "usec") + (swapped ? " swapped" : " native"));
      const std::string in = file("classic" + std::to_string(variant) + ".pcap");
      write_classic(in, recs, nsec, swapped, kSnap);
      NetDevice* d = add("c" + std::to_string(variant++), {{"rx", in}, {"pace", "file"}});
      ASSERT_NE(d, nullptr);
      link_kind_lookup("pcap")->set_option(*d, "loop", 3);
      const uint64_t start = clock.now_ns();
      const uint64_t rx0 = d->stats_sum().rx_packets;
      ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
      for (size_t i = 0; i < 3 * recs.size(); ++i) {
        const uint64_t due = (i / recs.size()) * span + recs[i % recs.size()].ts_ns - recs.front().ts_ns;
        clock.set(start + due);
        drive();
        // Every record due by now, and none after (a pass's first shares its due time
        // with the last one's).
        size_t want = 0;
        for (size_t k = 0; k < 3 * recs.size(); ++k)
          want += (k / recs.size()) * span + recs[k % recs.size()].ts_ns - recs.front().ts_ns <= due;
        ASSERT_EQ(d->stats_sum().rx_packets - rx0, want) << "record " << i;
      }
      std::string err;
      EXPECT_FALSE(busy(*d, err));
      EXPECT_EQ(err, "");
      EXPECT_EQ(d->stats_sum().rx_bytes, 3 * pass_bytes);
      ASSERT_TRUE(ok(net.devices().set_up(*d, false)));
    }
  }
}

TEST_F(PcapDevTest, TruncatedFileDeliversWhatPrecedesAndNamesTheRecord) {
  const auto recs = make_records(6);
  const std::string in = file("trunc.pcap");
  write_pcap(in, recs);
  // Cut record 4 in the middle of its data.
  size_t cut = 24;
  for (int i = 0; i < 4; ++i) cut += 16 + recs[i].bytes.size();
  ASSERT_EQ(truncate(in.c_str(), static_cast<off_t>(cut + 16 + 10)), 0);
  NetDevice* d = add("p0", {{"rx", in}, {"pace", "max"}});  // the virtual clock's default would keep the file's timing
  ASSERT_NE(d, nullptr);
  std::string err;
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  drive();
  EXPECT_FALSE(busy(*d, err));
  EXPECT_NE(err.find("p0: rx " + in + ": record 4: truncated"), std::string::npos) << err;
  const DevStatsSum s = d->stats_sum();
  EXPECT_EQ(s.rx_packets, 4u);
  uint64_t bytes = 0;
  for (int i = 0; i < 4; ++i) bytes += recs[i].bytes.size();
  EXPECT_EQ(s.rx_bytes, bytes);
  std::string again;
  busy(*d, again);
  EXPECT_EQ(again, "");  // reported once
}

// Records the in-place reader would not read as libpcap does go to libpcap, which names
// the record: a caplen above MAXIMUM_SNAPLEN (262,144), a header cut short at the end.
TEST_F(PcapDevTest, MalformedRecordsAreLibpcapsToName) {
  const auto recs = make_records(4);
  const std::string big = file("bigcap.pcap"), shorthdr = file("shorthdr.pcap");
  auto with_big = recs;
  with_big[2].bytes.resize(300000);  // all its bytes present: only its length is wrong
  write_classic(big, with_big, false, false, 65535);
  write_pcap(shorthdr, recs);
  std::ofstream(shorthdr, std::ios::binary | std::ios::app) << std::string(5, '\0');
  struct Case {
    std::string path, name, says;
    uint64_t delivered;
  };
  for (const Case& c : {Case{big, "b0", "record 2: invalid packet capture length 300000", 2},
                        Case{shorthdr, "s0", "record 4: truncated dump file; tried to read 16 header bytes, only got 5", 4}}) {
    SCOPED_TRACE(c.name);
    NetDevice* d = add(c.name, {{"rx", c.path}, {"pace", "max"}});
    ASSERT_NE(d, nullptr);
    std::string err;
    ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
    drive();
    EXPECT_FALSE(busy(*d, err));
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(d->stats_sum().rx_packets, c.delivered);
  }
}

// A version 2.2 file keeps each record's caplen and len the other way round, which
// libpcap's sf_pcap_open puts right: such files are libpcap's to read, record by record.
TEST_F(PcapDevTest, OldVersionWithSwappedLengthsReadsAsLibpcapReadsIt) {
  const auto recs = make_records(20);  // enough that a misread length still lands inside
  std::string out;
  auto u32 = [&](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); };
  u32(0xa1b2c3d4u);
  u16(2);
  u16(2);
  u32(0);
  u32(0);
  u32(65535);
  u32(DLT_EN10MB);
  uint64_t stored = 0;
  for (const Record& r : recs) {
    const uint32_t caplen = static_cast<uint32_t>(std::min<size_t>(r.bytes.size(), 40));
    u32(static_cast<uint32_t>(r.ts_ns / 1'000'000'000ull));
    u32(static_cast<uint32_t>(r.ts_ns % 1'000'000'000ull / 1000));
    u32(static_cast<uint32_t>(r.bytes.size()) + 100);  // len where caplen belongs
    u32(caplen);
    out.append(reinterpret_cast<const char*>(r.bytes.data()), caplen);
    stored += caplen;
  }
  const std::string in = file("v22.pcap");
  std::ofstream(in, std::ios::binary) << out;
  NetDevice* d = add("o0", {{"rx", in}, {"pace", "max"}});
  ASSERT_NE(d, nullptr);
  link_kind_lookup("pcap")->set_option(*d, "loop", 2);
  std::string err;
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  for (int i = 0; i < 8 && busy(*d, err); ++i) drive();
  EXPECT_FALSE(busy(*d, err));
  EXPECT_EQ(err, "");
  EXPECT_EQ(d->stats_sum().rx_packets, 40u);
  EXPECT_EQ(d->stats_sum().rx_bytes, 2 * stored);
}

TEST_F(PcapDevTest, OversizedAndRuntFramesCountAsRxDropped) {
  auto recs = make_records(3);
  recs[1].bytes.resize(1515);  // MTU 1500 + 14 + 1
  recs[2].bytes.resize(10);
  const std::string in = file("big.pcap");
  write_pcap(in, recs);
  NetDevice* d = add("p0", {{"rx", in}, {"pace", "max"}});
  std::string err;
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  drive();
  EXPECT_FALSE(busy(*d, err));
  EXPECT_EQ(d->stats_sum().rx_packets, 1u);
  EXPECT_EQ(d->stats_sum().rx_dropped, 2u);
  EXPECT_EQ(cpu.stats().drops[static_cast<unsigned>(DropReason::PKT_TOO_BIG)].get(), 1u);
  EXPECT_EQ(cpu.stats().drops[static_cast<unsigned>(DropReason::PKT_TOO_SMALL)].get(), 1u);
}

TEST_F(PcapDevTest, NonEthernetCaptureIsRefused) {
  const std::string in = file("raw.pcap");
  write_pcap(in, make_records(1), DLT_RAW);
  std::string err;
  EXPECT_EQ(add("p0", {{"rx", in}}, &err), nullptr);
  EXPECT_NE(err.find("is not Ethernet"), std::string::npos) << err;
  EXPECT_EQ(add("p1", {{"rx", temp_path("nosuch.pcap")}}, &err), nullptr);
  EXPECT_NE(err.find("nosuch.pcap"), std::string::npos) << err;
}

TEST_F(PcapDevTest, WriteErrorCountsNothingAsSent) {
  NetDevice* d = add("p0", {{"tx", "/dev/full"}});
  std::string err;
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  const auto recs = make_records(10);
  for (const Record& r : recs) {
    Packet* p = cpu.alloc();
    std::memcpy(p->put(static_cast<uint32_t>(r.bytes.size())), r.bytes.data(), r.bytes.size());
    p->dev = d;
    dev_queue_xmit(cpu, p);
  }
  EXPECT_FALSE(busy(*d, err));
  EXPECT_NE(err.find("p0: tx /dev/full: write failed"), std::string::npos) << err;
  DevStatsSum s = d->stats_sum();
  EXPECT_EQ(s.tx_packets, 0u);
  EXPECT_EQ(s.tx_dropped, 10u);
  Packet* p = cpu.alloc();
  p->put(60);
  p->dev = d;
  dev_queue_xmit(cpu, p);
  s = d->stats_sum();
  EXPECT_EQ(s.tx_packets, 0u);
  EXPECT_EQ(s.tx_dropped, 11u);  // the device writes nothing more
}

// The tx file is written in blocks of the device's buffer (256 KiB), not stdio's 4 KiB:
// 100 frames of ~1 KB stay in memory until the device is flushed, and count as sent then.
TEST_F(PcapDevTest, TxWritesInLargeBlocks) {
  const std::string out = file("blocks.pcap");
  NetDevice* d = add("p0", {{"tx", out}});
  std::string err;
  ASSERT_TRUE(ok(net.devices().set_up(*d, true)));
  for (int i = 0; i < 100; ++i) {
    Packet* p = cpu.alloc();
    std::memset(p->put(1000), i, 1000);
    p->dev = d;
    dev_queue_xmit(cpu, p);
  }
  drive();
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(d->stats_sum().tx_packets, 0u);
  EXPECT_FALSE(busy(*d, err));  // the runner's check flushes
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 24 + 100 * (16 + 1000));
  EXPECT_EQ(d->stats_sum().tx_packets, 100u);
}

// ---- through `pktpath run`

struct RunResult {
  int rc;
  std::string out, err;
};

RunResult run_script(const std::string& text) {
  const std::string path = temp_path("script.pp");
  std::ofstream(path) << text;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = cli::run_main({"run", path});
  std::fflush(stdout);
  RunResult r{rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  std::remove(path.c_str());
  return r;
}

void expect_same_frames(const std::vector<Record>& got, const std::vector<Record>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i].bytes, want[i].bytes) << "record " << i;
}

// p0 replays IN; tc ingress redirects every frame to p1, which writes OUT.
RunResult replay_redirect(const std::string& in, const std::string& out, const std::string& extra = "") {
  return run_script("ip link add dev p1 type pcap tx " + out + "\n" +
                    "ip link set dev p1 up\n"
                    "ip link add dev p0 type pcap rx " + in + extra + "\n" +
                    "tc qdisc add dev p0 clsact\n"
                    "tc filter add dev p0 ingress matchall action mirred egress redirect dev p1\n"
                    "ip link set dev p0 up\n"
                    "ip -s link show dev p0\n"
                    "ip -s link show dev p1\n");
}

TEST(PcapDevScript, TextOptionsTakeTheWordsUpToTheNextOption) {
  const std::vector<std::string> w = {"ip", "link", "add", "dev", "p0", "type", "pcap", "rx", "a b.pcap",
                                      "pace", "pps", "1000", "loop", "2"};
  cli::ScriptCommand c;
  cli::ScriptError e;
  ASSERT_TRUE(cli::parse_command(w, c, e)) << e.msg;
  const auto& a = std::get<cli::IpLinkAdd>(c);
  ASSERT_EQ(a.opts.size(), 3u);
  EXPECT_EQ(a.opts[0].text, "a b.pcap");
  EXPECT_EQ(a.opts[1].text, "pps 1000");
  EXPECT_FALSE(a.opts[2].is_text);
  EXPECT_EQ(a.opts[2].value, 2u);
  // A text option with nothing after it fails at parse time, as a number would.
  EXPECT_FALSE(cli::parse_command({"ip", "link", "add", "dev", "p0", "type", "pcap", "rx"}, c, e));
}

TEST(PcapDevScript, RefusedOptionLeavesNoDevice) {
  cli::ScriptRunner runner(false, stdout);
  cli::ScriptLimits lim;
  lim.write_files = false;  // as the script fuzzer runs
  runner.set_limits(lim);
  cli::ScriptCommand c;
  cli::ScriptError e;
  ASSERT_TRUE(cli::parse_command({"ip", "link", "add", "dev", "p0", "type", "pcap", "tx", temp_path("no.pcap")}, c, e));
  EXPECT_FALSE(runner.execute(c, e));
  EXPECT_NE(e.msg.find("writing files is disabled"), std::string::npos) << e.msg;
  EXPECT_EQ(runner.table().find("p0"), nullptr);
  ASSERT_TRUE(cli::parse_command({"ip", "link", "add", "dev", "p0", "type", "pcap", "pace", "warp"}, c, e));
  EXPECT_FALSE(runner.execute(c, e));
  EXPECT_NE(e.msg.find("p0: pace: expected topspeed"), std::string::npos) << e.msg;
  EXPECT_EQ(e.word, "warp");
  EXPECT_EQ(runner.table().find("p0"), nullptr);
}

// loop 0 replays until the device goes down, behind the script: the up line returns at
// once, later lines run while it goes on (a sleep lets it make passes), and a down line
// stops it. On the virtual clock a paced endless replay delivers exactly what the
// sleeps' time allows.
TEST(PcapDevScript, EndlessLoopRunsBehindTheScript) {
  const std::string in = temp_path("endless.pcap");
  write_pcap(in, make_records(50));
  cli::ScriptRunner runner(false, stdout);
  cli::ScriptLimits lim;
  lim.max_wait_ns = 50'000'000;
  runner.set_limits(lim);
  auto run = [&](std::vector<std::string> w) {
    cli::ScriptCommand c;
    cli::ScriptError e;
    ASSERT_TRUE(cli::parse_command(w, c, e)) << e.msg;
    ASSERT_TRUE(runner.execute(c, e)) << e.msg;
  };
  run({"ip", "link", "add", "dev", "p0", "type", "pcap", "rx", in, "loop", "0"});
  run({"ip", "link", "set", "dev", "p0", "up"});
  NetDevice* d = runner.table().find("p0");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->is_up());  // still replaying: the line did not wait for it
  run({"ip", "link", "add", "dev", "other", "type", "dummy"});  // later lines run
  run({"sleep", "0.05"});
  EXPECT_GT(d->stats_sum().rx_packets, 50u);  // more than one pass
  run({"ip", "link", "set", "dev", "p0", "down"});
  const uint64_t stopped = d->stats_sum().rx_packets;
  run({"sleep", "0.01"});
  EXPECT_EQ(d->stats_sum().rx_packets, stopped);
  std::remove(in.c_str());
}

TEST(PcapDevScript, EndlessPacedLoopOnTheVirtualClock) {
  const std::string in = temp_path("endless_v.pcap");
  write_pcap(in, make_records(50));
  RunResult r = run_script("clock virtual\n"
                           "ip link add dev p0 type pcap rx " + in + " pace pps 1000 loop 0\n"
                           "ip link set dev p0 up\n"
                           "sleep 2\n"
                           "ip -j -s link show dev p0\n"
                           "sleep 1\n"
                           "ip -j -s link show dev p0\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<uint64_t> rx;
  for (size_t at = r.out.find("\"rx\""); at != std::string::npos; at = r.out.find("\"rx\"", at + 1)) {
    const size_t p = r.out.find("\"packets\":", at);
    rx.push_back(std::stoull(r.out.substr(p + 10)));
  }
  ASSERT_EQ(rx.size(), 2u) << r.out;
  // 1000 a second from t=0: the frames due in [0, 2 s] and then in [0, 3 s].
  EXPECT_NEAR(static_cast<double>(rx[0]), 2001, 1) << r.out;
  EXPECT_NEAR(static_cast<double>(rx[1]), 3001, 1) << r.out;
  std::remove(in.c_str());
}

// `ip -s link`'s RX packets of device NAME in a script's output.
uint64_t rx_packets_shown(const std::string& out, const std::string& name) {
  size_t at = out.find(": " + name + ": ");
  if (at == std::string::npos) return UINT64_MAX;
  at = out.find("RX:", at);
  at = out.find('\n', at);
  if (at == std::string::npos) return UINT64_MAX;
  std::istringstream line(out.substr(at + 1, out.find('\n', at + 1) - at - 1));
  uint64_t bytes = 0, packets = UINT64_MAX;
  line >> bytes >> packets;
  return packets;
}

// The driver counts what it takes in (dev_sw_netstats_rx_add), whatever tc then does with
// it: every frame p0 replays and redirects is in its RX, as a NIC's would be.
TEST(PcapDevScript, RedirectedFramesCountAsReceived) {
  const auto recs = make_records(300);
  const std::string in = temp_path("rxc_in.pcap"), out = temp_path("rxc_out.pcap");
  write_pcap(in, recs);
  RunResult r = replay_redirect(in, out);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(rx_packets_shown(r.out, "p0"), 300u) << r.out;
  EXPECT_EQ(rx_packets_shown(r.out, "p1"), 0u) << r.out;
  std::remove(in.c_str());
  std::remove(out.c_str());
}

TEST(PcapDevScript, ReplayRedirectedToTxIsByteIdenticalPcapAndPcapng) {
  const auto recs = make_records(300);
  const std::string in = temp_path("rt_in.pcap"), ng = temp_path("rt_out.pcapng"), back = temp_path("rt_back.pcap");
  write_pcap(in, recs);
  // pcap in, pcapng out.
  RunResult r = replay_redirect(in, ng);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::string err;
  expect_same_frames(read_records(ng, &err), recs);
  EXPECT_EQ(err, "");
  {
    std::ifstream f(ng, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_GE(bytes.size(), 4u);
    EXPECT_EQ(bytes.substr(0, 4), std::string("\x0a\x0d\x0d\x0a", 4));
    EXPECT_NE(bytes.find(std::string("\x02\x00\x02\x00p1", 6)), std::string::npos);  // if_name "p1"
  }
  // pcapng in, pcap out, twice over (loop 2).
  r = replay_redirect(ng, back, " loop 2");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::vector<Record> twice = recs;
  twice.insert(twice.end(), recs.begin(), recs.end());
  expect_same_frames(read_records(back, &err), twice);
  EXPECT_EQ(err, "");
  EXPECT_NE(r.out.find("600"), std::string::npos) << r.out;  // the counters show every packet
  std::remove(in.c_str());
  std::remove(ng.c_str());
  std::remove(back.c_str());
}

// The bytes of passes read from the preloaded image are libpcap's: a file in the other
// byte order, three passes, out through a tx file.
TEST(PcapDevScript, LoopedPassesCarryTheSameBytes) {
  const auto recs = make_records(50);
  const std::string in = temp_path("lp_in.pcap"), out = temp_path("lp_out.pcap");
  write_classic(in, recs, false, true, 65535);
  std::string err;
  const std::vector<Record> once = read_records(in, &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(once.size(), recs.size());
  RunResult r = replay_redirect(in, out, " pace max loop 3");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::vector<Record> thrice;
  for (int i = 0; i < 3; ++i) thrice.insert(thrice.end(), once.begin(), once.end());
  std::vector<Record> got = read_records(out, &err);
  EXPECT_EQ(err, "");
  for (Record& g : got) g.ts_ns = 0;  // departure stamps
  expect_same_frames(got, thrice);
  std::remove(in.c_str());
  std::remove(out.c_str());
}

TEST(PcapDevScript, EveryReplayedPacketArrivesBeforeTheNextLine) {
  const auto recs = make_records(1000);
  const std::string in = temp_path("count.pcap");
  write_pcap(in, recs);
  uint64_t bytes = 0;
  for (const Record& x : recs) bytes += x.bytes.size();
  const RunResult r = run_script("ip link add dev p0 type pcap rx " + in + " pace topspeed\n"
                                 "capture -i p0\n"
                                 "ip link set dev p0 up\n"
                                 "ip -j -s link show dev p0\n");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\"packets\":1000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"bytes\":" + std::to_string(bytes)), std::string::npos) << r.out;
  EXPECT_NE((r.out + r.err).find("1000 packets captured"), std::string::npos) << r.out << r.err;
  std::remove(in.c_str());
}

TEST(PcapDevScript, TruncatedCaptureFailsTheUpLine) {
  const auto recs = make_records(3);
  const std::string in = temp_path("strunc.pcap");
  write_pcap(in, recs);
  ASSERT_EQ(truncate(in.c_str(), static_cast<off_t>(24 + 16 + recs[0].bytes.size() + 5)), 0);
  const RunResult r = run_script("ip link add dev p0 type pcap rx " + in + "\n"
                                 "ip link set dev p0 up\n"
                                 "ip -s link show dev p0\n");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find(":2:"), std::string::npos) << r.err;  // the up line
  EXPECT_NE(r.err.find("record 1: truncated"), std::string::npos) << r.err;
  std::remove(in.c_str());
}

}  // namespace
}  // namespace pktpath
