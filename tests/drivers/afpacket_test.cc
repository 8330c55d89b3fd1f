// The afpacket device against real kernel interfaces: each test makes its own kernel
// network namespace (IPv6 off, so the kernel sends no ND/MLD of its own) with veth
// pairs, and removes it. pktgen through afpacket arrives on the kernel peer exactly
// (its counters and a libpcap capture there, frame for frame against pktpath's capture);
// frames the kernel sends arrive in pktpath's capture; the kernel's ring-full drops show
// as rx.dropped, delivered plus dropped being all sent; a tc egress filter's drops are
// missing on the wire; kernel veth A -> pktpath (tc redirect between two afpacket
// devices) -> kernel veth B carries what the rule allows. Option and setup errors need
// no privilege. Tests that need root and veth skip with the reason.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu.h"
#include "core/drop_reason.h"
#include "core/link_kind.h"
#include "drivers/kernel_ns.h"

namespace pktpath {
namespace {

using namespace kernel_test;

// ---- no privilege needed

TEST(AfpacketOptions, BadValuesAreRefusedNamingTheWord) {
  Runner t;
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket qdisc_bypass maybe"));
  EXPECT_NE(t.err.find("qdisc_bypass: expected on or off"), std::string::npos) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket fanout 65"));
  EXPECT_NE(t.err.find("fanout must be 0..64"), std::string::npos) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket link ../etc"));
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket ring v1"));
  EXPECT_NE(t.err.find("ring: expected v3 or v2, got \"v1\""), std::string::npos) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket block_timeout 0"));
  EXPECT_NE(t.err.find("block_timeout must be 1..1000"), std::string::npos) << t.err;
  EXPECT_EQ(t.dev("d0"), nullptr);
  // No link: the up fails and says what is missing.
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket")) << t.err;
  EXPECT_FALSE(t.line("ip link set dev d0 up"));
  EXPECT_NE(t.err.find("needs \"link IF\""), std::string::npos) << t.err;
}

// Where scripts may not touch the host's kernel (the fuzzer's limits) they may not reach
// a real interface either.
TEST(AfpacketOptions, ThreadedTakesOneOrZeroAndOnlyKindsWithNapiThreads) {
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link lo"));
  EXPECT_FALSE(t.line("ip link set dev d0 threaded yes"));
  EXPECT_TRUE(contains(t.err, "threaded: expected 1 or 0")) << t.err;
  EXPECT_TRUE(t.line("ip link set dev d0 threaded 1")) << t.err;
  Cpu* const thread = t.dev("d0")->napi_thread();
  EXPECT_NE(thread, nullptr);
  EXPECT_TRUE(t.line("ip link set dev d0 threaded 0")) << t.err;
  EXPECT_EQ(t.dev("d0")->napi_thread(), nullptr);
  // On again: the same thread (one per NAPI instance, as napi_kthread_create), not a new one.
  EXPECT_TRUE(t.line("ip link set dev d0 threaded 1")) << t.err;
  EXPECT_EQ(t.dev("d0")->napi_thread(), thread);
  EXPECT_TRUE(t.line("ip link set dev d0 threaded 0")) << t.err;
  ASSERT_TRUE(t.line("ip link add dev v0 type veth peer name v1"));
  EXPECT_FALSE(t.line("ip link set dev v0 threaded 1"));
  EXPECT_TRUE(contains(t.err, "veth devices poll on the Cpu that sets them up")) << t.err;
  ASSERT_TRUE(t.line("ip link set dev v0 up"));
  EXPECT_TRUE(t.line("ip link set dev v0 threaded 0")) << "already off: nothing to change";
}

TEST(AfpacketOptions, HostInterfacesAreRefusedUnderTheFuzzersLimits) {
  Runner t;
  cli::ScriptLimits lim;
  lim.host_devices = false;
  t.r.set_limits(lim);
  EXPECT_FALSE(t.line("ip link add dev d0 type afpacket link lo"));
  EXPECT_NE(t.err.find("devices of the host kernel are off in this runner"), std::string::npos) << t.err;
  EXPECT_EQ(t.dev("d0"), nullptr);
}

TEST(AfpacketOptions, MissingInterfaceOrNamespaceFailsTheUp) {
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link ppafp_none0 netns ppafp_none_ns")) << t.err;
  EXPECT_FALSE(t.line("ip link set dev d0 up"));
  if (::geteuid() == 0) {
    EXPECT_NE(t.err.find("netns ppafp_none_ns: /var/run/netns/ppafp_none_ns"), std::string::npos) << t.err;
  }
  ASSERT_TRUE(t.line("ip link add dev d1 type afpacket link ppafp_none0")) << t.err;
  EXPECT_FALSE(t.line("ip link set dev d1 up"));
  if (::geteuid() == 0) {
    EXPECT_NE(t.err.find("link ppafp_none0: no such interface"), std::string::npos) << t.err;
  } else {
    EXPECT_NE(t.err.find("CAP_NET_RAW"), std::string::npos) << t.err;
  }
  EXPECT_FALSE(t.dev("d1")->is_up());
}

// ---- against the kernel

// pktgen's frames out through afpacket: the kernel peer's counters and a libpcap capture
// there see exactly N, frame for frame what pktpath's own capture of d0 saw.
TEST(AfpacketKernel, PktgenArrivesOnTheKernelPeerExactly) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelCapture cap(ns.name(), b);
  ASSERT_TRUE(cap.ok());
  const uint64_t rx0 = ns.stat(b, "rx", "packets"), bytes0 = ns.stat(b, "rx", "bytes");
  const std::string mine = temp_path("tx.pcap");
  constexpr uint64_t kN = 3000;
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name())) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  ASSERT_TRUE(t.line("capture -i d0 -Q out -w " + mine)) << t.err;
  ASSERT_TRUE(t.line("pktgen -i d0 -n " + std::to_string(kN) + " -s 60 -p 1000-1003")) << t.err;
  ASSERT_TRUE(t.line("capture stop")) << t.err;
  const DevStatsSum s = t.dev("d0")->stats_sum();
  EXPECT_EQ(s.tx_packets, kN);
  EXPECT_EQ(s.tx_dropped, 0u);
  const std::vector<Frame> got = cap.take(kN);
  const std::vector<Frame> sent = read_pcap(mine);
  ASSERT_EQ(sent.size(), kN);
  ASSERT_EQ(got.size(), kN);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], sent[i]) << "frame " << i;
  EXPECT_EQ(ns.stat(b, "rx", "packets") - rx0, kN);
  EXPECT_EQ(ns.stat(b, "rx", "bytes") - bytes0, kN * 60);
  ASSERT_TRUE(t.line("ip link del dev d0")) << t.err;
  std::remove(mine.c_str());
}

// Frames the kernel sends out of the peer arrive in pktpath's capture of d0 (two
// sockets in a fanout group), byte for byte, none lost or added.
void check_kernel_frames_arrive(const std::string& ring) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelSender tx(ns.name(), b);
  ASSERT_TRUE(tx.ok());
  const std::string mine = temp_path("rx.pcap");
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name() + " fanout 2 " + ring)) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  ASSERT_TRUE(t.line("capture -i d0 -w " + mine)) << t.err;
  constexpr uint32_t kN = 500;
  std::vector<Frame> want;
  for (uint32_t i = 0; i < kN; ++i) {
    want.push_back(udp_frame(static_cast<uint16_t>(2000 + i % 8), i, 60 + i % 200));
    ASSERT_TRUE(tx.send(want.back()));
  }
  // The rings' blocks retire within a millisecond; the runner polls them while it sleeps.
  for (int i = 0; i < 100 && t.dev("d0")->stats_sum().rx_packets < kN; ++i) ASSERT_TRUE(t.line("sleep 0.02"));
  ASSERT_TRUE(t.line("sleep 0.05"));
  ASSERT_TRUE(t.line("capture stop")) << t.err;
  EXPECT_EQ(t.dev("d0")->stats_sum().rx_packets, kN);
  std::vector<Frame> got = read_pcap(mine);
  ASSERT_EQ(got.size(), kN);
  // Two rings: each flow (port) keeps its order, the interleaving between them may differ.
  auto key = [](const Frame& f) { return std::make_pair(udp_dport(f), f); };
  std::sort(got.begin(), got.end(), [&](const Frame& x, const Frame& y) { return key(x) < key(y); });
  std::sort(want.begin(), want.end(), [&](const Frame& x, const Frame& y) { return key(x) < key(y); });
  EXPECT_EQ(got, want);
  ASSERT_TRUE(t.line("ip link del dev d0")) << t.err;
  std::remove(mine.c_str());
}

TEST(AfpacketKernel, KernelFramesArriveInPktpathsCapture) { check_kernel_frames_arrive("block_timeout 2"); }

// The same through TPACKET_V2 rings (a slot per frame, no block to retire).
TEST(AfpacketKernel, KernelFramesArriveThroughV2Rings) { check_kernel_frames_arrive("ring v2"); }

// More frames than the ring holds while nothing polls it (the runner is busy on this
// thread): the kernel drops the rest (tp_drops), which d0 shows as rx.dropped; delivered
// plus dropped is every frame sent.
void check_ring_full_drops(const std::string& ring, uint64_t n) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelSender tx(ns.name(), b);
  ASSERT_TRUE(tx.ok());
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name() + " " + ring)) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  const Frame f = udp_frame(9, 1, 60);
  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(tx.send(f));
  const DevStatsSum s = t.rx_accounted("d0", n);
  EXPECT_EQ(s.rx_packets + s.rx_dropped, n);
  EXPECT_GT(s.rx_dropped, 0u);
  EXPECT_GT(s.rx_packets, 0u);
}

// 4 MiB of ring holds about 32k frames of 60 bytes in TPACKET_V3 blocks, 2,048 in
// TPACKET_V2 slots.
TEST(AfpacketKernel, RingFullDropsCountAsRxDropped) { check_ring_full_drops("", 60000); }
TEST(AfpacketKernel, V2RingFullDropsCountAsRxDropped) { check_ring_full_drops("ring v2", 6000); }

// The kernel interface under the device is deleted while pktgen sends through it
// (NETDEV_UNREGISTER of the lower device): pktgen stops at once and says why, the line
// fails with one message naming the vanished link, and the device is down.
TEST(AfpacketKernel, VanishedLinkStopsPktgenAndTakesTheDeviceDown) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  char* text = nullptr;
  size_t text_len = 0;
  std::FILE* out = ::open_memstream(&text, &text_len);
  ASSERT_NE(out, nullptr);
  {
    Runner t(out);
    ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name())) << t.err;
    ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
    std::thread del([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      sh("ip -n " + ns.name() + " link del " + a);
    });
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(t.line("pktgen -i d0 --duration 30 -s 60"));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    del.join();
    EXPECT_LT(secs, 15.0);
    EXPECT_NE(t.err.find("link " + a + " in netns " + ns.name() + " vanished"), std::string::npos) << t.err;
    EXPECT_EQ(t.err.find("No buffer space"), std::string::npos) << t.err;
    EXPECT_FALSE(t.dev("d0")->is_up());
    EXPECT_FALSE(t.dev("d0")->carrier_ok());
  }
  std::fclose(out);
  const std::string printed(text, text_len);
  std::free(text);
  EXPECT_NE(printed.find("Stopped early: d0 lost its carrier"), std::string::npos) << printed;
}

// The kernel interface set down and up again under the device: its carrier follows after
// the next line (ip link show says NO-CARRIER meanwhile), and pktgen stops without one.
TEST(AfpacketKernel, CarrierFollowsTheKernelLinkState) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name())) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  EXPECT_TRUE(t.dev("d0")->carrier_ok());
  ASSERT_TRUE(sh("ip -n " + ns.name() + " link set " + a + " down"));
  ASSERT_TRUE(t.line("sleep 0.01")) << t.err;
  EXPECT_FALSE(t.dev("d0")->carrier_ok());
  EXPECT_TRUE(t.dev("d0")->is_up());  // down below, not gone: the device stays up
  ASSERT_TRUE(sh("ip -n " + ns.name() + " link set " + a + " up"));
  bool back = false;
  for (int i = 0; i < 100 && !back; ++i) {  // veth's carrier comes back with the up
    ASSERT_TRUE(t.line("sleep 0.01")) << t.err;
    back = t.dev("d0")->carrier_ok();
  }
  EXPECT_TRUE(back);
}

// A tc egress filter on the afpacket device drops two of four UDP flows: none of them
// reaches the wire, and sent + dropped is everything pktgen made.
TEST(AfpacketKernel, EgressFilterDropsAreMissingOnTheWire) {
  KernelNs ns;
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelCapture cap(ns.name(), b);
  ASSERT_TRUE(cap.ok());
  constexpr uint64_t kN = 2000;
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type afpacket link " + a + " netns " + ns.name())) << t.err;
  ASSERT_TRUE(t.line("ip link set dev d0 up")) << t.err;
  ASSERT_TRUE(t.line("tc qdisc add dev d0 clsact")) << t.err;
  ASSERT_TRUE(t.line("tc filter add dev d0 egress protocol ip flower ip_proto udp dst_port 1000-1001 action drop")) << t.err;
  const uint64_t drops0 = drop_totals()[static_cast<unsigned>(DropReason::TC_EGRESS)];
  ASSERT_TRUE(t.line("pktgen -i d0 -n " + std::to_string(kN) + " -s 60 -p 1000-1003")) << t.err;
  // pktgen counts what the device took toward -n; a dropped attempt is an error and the
  // next packet is made anew (pktgen_xmit): kN sent, and as many drops as errors.
  const uint64_t dropped = drop_totals()[static_cast<unsigned>(DropReason::TC_EGRESS)] - drops0;
  const uint64_t sent = t.dev("d0")->stats_sum().tx_packets;
  EXPECT_EQ(sent, kN);
  EXPECT_GT(dropped, kN / 2);
  EXPECT_LT(dropped, kN * 4);
  const std::vector<Frame> got = cap.take(sent);
  EXPECT_EQ(got.size(), sent);
  for (const Frame& f : got) ASSERT_GE(udp_dport(f), 1002) << "a dropped flow on the wire";
}

// The userspace datapath between two kernel veths, afpacket in and afpacket out
// (check_datapath_between_veths).
TEST(AfpacketKernel, KernelToPktpathToKernelCarriesWhatTheRulesAllow) {
  KernelNs ns;
  SKIP_UNLESS(ns);
  check_datapath_between_veths(ns, "afpacket", [](Runner& t, const std::string& dev, std::string&) {
    return t.line("ip link set dev " + dev + " up");
  });
}

// The same through TPACKET_V2 rings.
TEST(AfpacketKernel, KernelToPktpathToKernelThroughV2Rings) {
  KernelNs ns;
  SKIP_UNLESS(ns);
  check_datapath_between_veths(ns, "afpacket ring v2", [](Runner& t, const std::string& dev, std::string&) {
    return t.line("ip link set dev " + dev + " up");
  });
}

// The same with both devices on NAPI threads of their own, the script idle meanwhile.
TEST(AfpacketKernel, ThreadedNapiCarriesTheDatapathWithoutTheScript) {
  KernelNs ns;
  SKIP_UNLESS(ns);
  check_datapath_between_veths(
      ns, "afpacket", [](Runner& t, const std::string& dev, std::string&) { return t.line("ip link set dev " + dev + " up"); },
      true);
}

}  // namespace
}  // namespace pktpath
