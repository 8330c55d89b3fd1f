// The xdp device (AF_XDP through libxdp) against real kernel interfaces, in a kernel
// namespace of its own with veth pairs (drivers/kernel_ns.h): pktgen through xdp arrives
// on the kernel peer exactly (its counters and a libpcap capture there, frame for frame
// against pktpath's capture), in generic and in native mode; frames the kernel sends
// arrive in pktpath's capture; the kernel's drops (fill ring empty) show as rx.dropped,
// delivered plus dropped being all sent, and receive resumes once a pool that ran dry
// has packets again; frames the peer sends on its tx queue 1 arrive through socket 1; a
// tc egress filter's drops are missing on the wire; kernel veth A -> pktpath (tc redirect between two xdp devices) -> kernel veth B
// carries what the rule allows. Errors: bad option values, an unknown link, missing
// capabilities, zerocopy refused by veth, more queues than the link has (two that it
// has both work), native mode refused by the kernel (its message passed through). Tests
// that need root, veth or AF_XDP skip with the reason; so do all where pktpath was
// built without libxdp.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/dev_table.h"
#include "core/drop_reason.h"
#include "core/link_kind.h"
#include "core/net.h"
#include "core/packet_pool.h"
#include "drivers/kernel_ns.h"
#include "status_assert.h"

namespace pktpath {
namespace {

using namespace kernel_test;


// Puts `dev` up; false with `skip` set where AF_XDP itself is missing (a build without
// libxdp, a kernel without CONFIG_XDP_SOCKETS), false with t.err for any other failure.
// `ip link add` of d0 on kernel interface `a` of the test's namespace, generic mode.
std::string add_generic_d0(const KernelNs& ns, const std::string& a) {
  return "ip link add dev d0 type xdp link " + a + " netns " + ns.name() + " mode generic";
}

bool xdp_up(Runner& t, const std::string& dev, std::string& skip) {
  if (t.line("ip link set dev " + dev + " up")) return true;
  if (contains(t.err, "xdp: unavailable") || contains(t.err, "AF_XDP is not available")) skip = t.err;
  return false;
}

#define XDP_UP(t, dev)                                  \
  do {                                                  \
    std::string skip_;                                  \
    if (!xdp_up(t, dev, skip_)) {                       \
      if (!skip_.empty()) GTEST_SKIP() << skip_;        \
      FAIL() << (t).err;                                \
    }                                                   \
  } while (0)

// ---- no kernel interface needed

TEST(XdpOptions, BadValuesAreRefusedNamingTheWord) {
  Runner t;
  EXPECT_FALSE(t.line("ip link add dev d0 type xdp mode fast"));
  EXPECT_TRUE(contains(t.err, "mode: expected native or generic, got \"fast\"")) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type xdp queues 0"));
  EXPECT_TRUE(contains(t.err, "queues must be 1..64")) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type xdp queues 65"));
  EXPECT_TRUE(contains(t.err, "queues must be 1..64")) << t.err;
  EXPECT_FALSE(t.line("ip link add dev d0 type xdp link ../etc"));
  EXPECT_FALSE(t.line("ip link add dev d0 type xdp zerocopy on"));
  EXPECT_TRUE(contains(t.err, "unexpected \"on\" after the link type")) << t.err;
  EXPECT_EQ(t.dev("d0"), nullptr);
  // A flag between worded options; no link: the up fails and says what is missing.
  ASSERT_TRUE(t.line("ip link add dev d0 type xdp queues 1 zerocopy mode generic")) << t.err;
  EXPECT_FALSE(t.line("ip link set dev d0 up"));
  EXPECT_TRUE(contains(t.err, "needs \"link IF\"") || contains(t.err, "xdp: unavailable")) << t.err;
}

TEST(XdpOptions, HostInterfacesAreRefusedUnderTheFuzzersLimits) {
  Runner t;
  cli::ScriptLimits lim;
  lim.host_devices = false;
  t.r.set_limits(lim);
  EXPECT_FALSE(t.line("ip link add dev d0 type xdp link lo"));
  EXPECT_TRUE(contains(t.err, "devices of the host kernel are off in this runner")) << t.err;
  EXPECT_EQ(t.dev("d0"), nullptr);
}

TEST(XdpOptions, UnknownLinkOrNamespaceFailsTheUp) {
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type xdp link ppxdp_none0 netns ppxdp_none_ns")) << t.err;
  std::string skip;
  EXPECT_FALSE(xdp_up(t, "d0", skip));
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (::geteuid() == 0) {
    EXPECT_TRUE(contains(t.err, "netns ppxdp_none_ns: /var/run/netns/ppxdp_none_ns")) << t.err;
  }
  ASSERT_TRUE(t.line("ip link add dev d1 type xdp link ppxdp_none0")) << t.err;
  EXPECT_FALSE(xdp_up(t, "d1", skip));
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (::geteuid() == 0) {
    EXPECT_TRUE(contains(t.err, "link ppxdp_none0: no such interface")) << t.err;
  } else {
    EXPECT_TRUE(contains(t.err, "CAP_NET_RAW")) << t.err;
  }
  EXPECT_FALSE(t.dev("d1")->is_up());
}

// Without CAP_NET_RAW (capsh drops it, and CAP_BPF, CAP_NET_ADMIN): the up fails naming
// the capabilities. The link does not exist: nothing is attached even if one were kept.
TEST(XdpOptions, WithoutCapabilitiesTheUpSaysWhichAreNeeded) {
  if (::geteuid() != 0 || !sh("command -v capsh")) GTEST_SKIP() << "needs root and capsh to drop capabilities";
  const std::string script = temp_path("caps.pp", "pp_xdp_");
  if (FILE* f = std::fopen(script.c_str(), "w")) {
    std::fputs("ip link add dev d0 type xdp link ppxdp_none0\nip link set dev d0 up\n", f);
    std::fclose(f);
  }
  const std::string out = run_out("capsh --drop=cap_net_raw,cap_bpf,cap_net_admin,cap_sys_admin -- -c '" +
                                  std::string(PKTPATH_BINARY) + " run " + script + "' 2>&1; echo rc=$?");
  std::remove(script.c_str());
  if (contains(out, "xdp: unavailable")) GTEST_SKIP() << out;
  EXPECT_TRUE(contains(out, "needs CAP_NET_RAW")) << out;
  EXPECT_TRUE(contains(out, "CAP_BPF")) << out;
  EXPECT_TRUE(contains(out, "rc=1")) << out;
}

// The kernel writes received frames into the pool's buffers, a 2048-byte UMEM chunk each:
// a pool with smaller buffers is refused at up, saying why, before any socket opens.
TEST(XdpOptions, APoolWithBuffersSmallerThanAChunkIsRefused) {
  PacketPool pool{PacketPool::Options{.capacity = 256, .buf_size = 1024, .headroom = 64}};
  Cpu cpu{pool};
  cpu.bind();
  Net net{cpu};
  NetDevice::Config cfg;
  cfg.name = "d0";
  std::string err;
  auto d_added = net.devices().add(cfg, "xdp");
  ASSERT_TRUE(ok(d_added));
  NetDevice* d = d_added.value_or(nullptr);
  const LinkKind* k = link_kind_lookup("xdp");
  ASSERT_TRUE(k->set_text_option(*d, "link", "lo", err)) << err;
  EXPECT_EQ(d->ops().open(*d), -1);
  err.clear();
  k->busy(*d, cpu, err);
  if (contains(err, "xdp: unavailable")) GTEST_SKIP() << err;
  EXPECT_TRUE(contains(err, "must hold a 2048-byte UMEM chunk")) << err;
  EXPECT_TRUE(contains(err, "this pool's are 1024")) << err;
  EXPECT_EQ(pool.available() + cpu.cached(), pool.capacity());
}

// ---- against the kernel

// pktgen's frames out through xdp: the kernel peer's counters and a capture there see
// exactly N, frame for frame what pktpath's own capture of d0 saw; IF keeps no program
// once d0 is down.
void pktgen_arrives_exactly(const std::string& mode) {
  KernelNs ns("ppxdp");
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelCapture cap(ns.name(), b);
  ASSERT_TRUE(cap.ok());
  const uint64_t rx0 = ns.stat(b, "rx", "packets"), bytes0 = ns.stat(b, "rx", "bytes");
  const std::string mine = temp_path("tx.pcap", "pp_xdp_");
  constexpr uint64_t kN = 3000;
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type xdp link " + a + " netns " + ns.name() + " mode " + mode)) << t.err;
  XDP_UP(t, "d0");
  EXPECT_TRUE(contains(run_out("ip -n " + ns.name() + " link show dev " + a), "xdp")) << "no program on " << a;
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
  ASSERT_TRUE(t.line("ip link set dev d0 down")) << t.err;
  EXPECT_FALSE(contains(run_out("ip -n " + ns.name() + " link show dev " + a), "prog/xdp")) << "program left on " << a;
  std::remove(mine.c_str());
}

TEST(XdpKernel, PktgenArrivesOnTheKernelPeerExactlyGeneric) { pktgen_arrives_exactly("generic"); }
TEST(XdpKernel, PktgenArrivesOnTheKernelPeerExactlyNative) { pktgen_arrives_exactly("native"); }

// Frames the kernel sends out of the peer arrive in pktpath's capture of d0, byte for
// byte and in order, none lost or added; the kernel counted no drop.
void kernel_frames_arrive(const std::string& mode) {
  KernelNs ns("ppxdp");
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelSender tx(ns.name(), b);
  ASSERT_TRUE(tx.ok());
  const std::string mine = temp_path("rx.pcap", "pp_xdp_");
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type xdp link " + a + " netns " + ns.name() + " mode " + mode)) << t.err;
  XDP_UP(t, "d0");
  ASSERT_TRUE(t.line("capture -i d0 -w " + mine)) << t.err;
  constexpr uint32_t kN = 500;
  std::vector<Frame> want;
  for (uint32_t i = 0; i < kN; ++i) {
    want.push_back(udp_frame(static_cast<uint16_t>(2000 + i % 8), i, 60 + i % 200));
    ASSERT_TRUE(tx.send(want.back()));
  }
  for (int i = 0; i < 100 && t.dev("d0")->stats_sum().rx_packets < kN; ++i) ASSERT_TRUE(t.line("sleep 0.02"));
  ASSERT_TRUE(t.line("sleep 0.05"));
  ASSERT_TRUE(t.line("capture stop")) << t.err;
  const DevStatsSum s = t.dev("d0")->stats_sum();
  EXPECT_EQ(s.rx_packets, kN);
  EXPECT_EQ(s.rx_dropped, 0u);
  EXPECT_EQ(read_pcap(mine), want);
  ASSERT_TRUE(t.line("ip link del dev d0")) << t.err;
  std::remove(mine.c_str());
}

TEST(XdpKernel, KernelFramesArriveInPktpathsCaptureGeneric) { kernel_frames_arrive("generic"); }
TEST(XdpKernel, KernelFramesArriveInPktpathsCaptureNative) { kernel_frames_arrive("native"); }

// A kernel namespace with a veth pair (a: d0's link, b: its peer), a raw sender on b
// and a runner.
class XdpKernelPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
    tx = std::make_unique<KernelSender>(ns.name(), b);
    ASSERT_TRUE(tx->ok());
  }
  KernelNs ns{"ppxdp"};
  std::string a, b;
  std::unique_ptr<KernelSender> tx;
  Runner t;
};

// More frames than the fill ring lends the kernel while nothing polls (the runner is busy
// on this thread): the kernel drops the rest (XDP_STATISTICS rx_dropped), which d0
// shows as rx.dropped; delivered plus dropped is every frame sent.
TEST_F(XdpKernelPeer, FillRingEmptyDropsCountAsRxDropped) {
  ASSERT_TRUE(t.line(add_generic_d0(ns, a))) << t.err;
  XDP_UP(t, "d0");
  constexpr uint64_t kN = 6000;  // the fill ring lends 2048 frames
  const Frame f = udp_frame(9, 1, 60);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_TRUE(tx->send(f));
  const DevStatsSum s = t.rx_accounted("d0", kN);
  EXPECT_EQ(s.rx_packets + s.rx_dropped, kN);
  EXPECT_GT(s.rx_dropped, 0u);
  EXPECT_GE(s.rx_packets, 2048u);
}

// Received frames are the pool's packets, lent to the kernel through the fill ring: while
// up, d0 holds exactly its loan (2048 on the fill ring) and its tx frames (512), however
// many frames went through; an oversized frame (the kernel's MTU raised under d0) is
// counted as rx.dropped and freed as PKT_TOO_BIG; after each down every packet is back
// in the pool, over three up/down cycles.
TEST_F(XdpKernelPeer, ReceivedFramesArePoolPacketsAndAllComeBack) {
  Cpu& cpu = t.r.control_cpu();
  PacketPool& pool = cpu.pool();
  auto in_pool = [&] { return pool.available() + cpu.cached(); };
  const uint32_t base = in_pool();
  ASSERT_TRUE(t.line(add_generic_d0(ns, a))) << t.err;
  uint64_t sent = 0, big = 0;
  for (int cycle = 0; cycle < 3; ++cycle) {
    XDP_UP(t, "d0");
    // Fewer than the loan: nothing polls while this thread sends.
    const uint64_t big0 = drop_totals()[static_cast<unsigned>(DropReason::PKT_TOO_BIG)];
    for (uint32_t i = 0; i < 1500; ++i, ++sent) ASSERT_TRUE(tx->send(udp_frame(9, i, 60 + i % 1400)));
    if (cycle == 1) {
      // d0 took MTU 1500 at up; the kernel's 1700 lets a 1600-byte frame reach it.
      ASSERT_TRUE(sh("ip -n " + ns.name() + " link set " + a + " mtu 1700"));
      ASSERT_TRUE(sh("ip -n " + ns.name() + " link set " + b + " mtu 1700"));
      for (uint32_t i = 0; i < 5; ++i, ++sent, ++big) ASSERT_TRUE(tx->send(udp_frame(9, i, 1600)));
    }
    const DevStatsSum s = t.rx_accounted("d0", sent);
    EXPECT_EQ(s.rx_packets + s.rx_dropped, sent);
    EXPECT_EQ(s.rx_dropped, big);
    EXPECT_EQ(drop_totals()[static_cast<unsigned>(DropReason::PKT_TOO_BIG)] - big0, cycle == 1 ? 5u : 0u);
    ASSERT_TRUE(t.line("sleep 0.05")) << t.err;
    EXPECT_EQ(base - in_pool(), 2048u + 512u) << "cycle " << cycle;
    ASSERT_TRUE(t.line("ip link set dev d0 down")) << t.err;
    EXPECT_EQ(in_pool(), base) << "a packet was lost in cycle " << cycle;
    if (cycle == 1) {
      ASSERT_TRUE(sh("ip -n " + ns.name() + " link set " + a + " mtu 1500"));
      ASSERT_TRUE(sh("ip -n " + ns.name() + " link set " + b + " mtu 1500"));
    }
  }
}

// The pool runs dry: every other free packet is held here and the received ones stay
// queued (redirected to q0, whose tbf sends its 1600-byte burst and then next to
// nothing), so the fill ring runs nearly empty and the kernel drops what comes. Once the
// held packets are freed, the loan is topped up with no frame to wake a poll: the
// interrupt retries the refill. Without that, all but the few frames still lent would be
// dropped by the kernel for want of a fill frame.
TEST_F(XdpKernelPeer, ReceiveResumesAfterThePoolRanDry) {
  ASSERT_TRUE(t.line(add_generic_d0(ns, a))) << t.err;
  for (const char* l : {"ip link add dev q0 type dummy", "ip link set dev q0 up",
                        "tc qdisc add dev q0 root tbf rate 8bit burst 1600 limit 100000000",
                        "tc qdisc add dev d0 ingress",
                        "tc filter add dev d0 ingress matchall action mirred egress redirect dev q0"})
    ASSERT_TRUE(t.line(l)) << l << ": " << t.err;
  XDP_UP(t, "d0");
  Cpu& cpu = t.r.control_cpu();
  std::vector<Packet*> held;
  while (Packet* p = cpu.alloc()) held.push_back(p);
  ASSERT_GT(held.size(), 200u);
  // Received frames are redirected, not delivered: d0's rx_packets stays 0, the Cpu's
  // processed count says how many it took.
  struct Took {
    uint64_t frames, dropped;
  };
  auto accounted = [&](uint64_t want) {
    Took k{};
    for (int i = 0; i < 100; ++i) {
      k = {cpu.stats().processed.get(), t.dev("d0")->stats_sum().rx_dropped};
      if (k.frames + k.dropped >= want || !t.line("sleep 0.02")) break;
    }
    return k;
  };
  uint64_t sent = 0;
  const Frame f = udp_frame(9, 1, 60);
  for (; sent < 2048 + 500; ++sent) ASSERT_TRUE(tx->send(f));
  const Took dry = accounted(sent);
  ASSERT_EQ(dry.frames + dry.dropped, sent) << dry.frames << " taken, " << dry.dropped << " dropped";
  EXPECT_GE(dry.dropped, 400u);  // the kernel had no fill frame for them
  for (Packet* p : held) cpu.free(p);
  ASSERT_TRUE(t.line("sleep 0.05")) << t.err;  // the retry refills
  for (int i = 0; i < 100; ++i, ++sent) ASSERT_TRUE(tx->send(f));
  const Took after = accounted(sent);
  EXPECT_EQ(after.frames - dry.frames, 100u);
  EXPECT_EQ(after.dropped, dry.dropped);
}

// veth has no AF_XDP zero-copy: asked for, the up fails naming it.
TEST(XdpKernel, ZerocopyRefusedIsAnErrorNamingIt) {
  KernelNs ns("ppxdp");
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type xdp link " + a + " netns " + ns.name() + " zerocopy")) << t.err;
  std::string skip;
  ASSERT_FALSE(xdp_up(t, "d0", skip));
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_TRUE(contains(t.err, "zerocopy refused")) << t.err;
  EXPECT_FALSE(t.dev("d0")->is_up());
  EXPECT_FALSE(contains(run_out("ip -n " + ns.name() + " link show dev " + a), "prog/xdp")) << "program left on " << a;
}

// A veth pair with two rx and two tx queues on each end: `queues 2` binds a socket to
// each, pktgen on two threads sends through both tx queues and the peer gets every frame;
// `queues 3` fails binding queue 2 and says why; numtxqueues above queues is refused.
TEST(XdpKernel, QueuesBindEachRxQueueAndNoMore) {
  KernelNs ns("ppxdp");
  std::string a, b;
  if (!ns.pair(a, b, 2)) GTEST_SKIP() << ns.why();
  const uint64_t rx0 = ns.stat(b, "rx", "packets");
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 numtxqueues 2 type xdp link " + a + " netns " + ns.name() + " queues 2")) << t.err;
  XDP_UP(t, "d0");
  ASSERT_TRUE(t.line("pktgen -i d0 -n 1000 -s 60 -t 2")) << t.err;
  const DevStatsSum s0 = t.dev("d0")->stats_sum();
  EXPECT_GE(s0.tx_packets, 1000u);
  EXPECT_EQ(s0.tx_dropped, 0u);
  for (int i = 0; i < 50 && ns.stat(b, "rx", "packets") - rx0 < s0.tx_packets; ++i) ASSERT_TRUE(t.line("sleep 0.02"));
  EXPECT_EQ(ns.stat(b, "rx", "packets") - rx0, s0.tx_packets);
  ASSERT_TRUE(t.line("ip link set dev d0 down")) << t.err;
  ASSERT_TRUE(t.line("ip link add dev d1 type xdp link " + a + " netns " + ns.name() + " queues 3")) << t.err;
  std::string skip;
  ASSERT_FALSE(xdp_up(t, "d1", skip));
  EXPECT_TRUE(contains(t.err, "queue 2: xsk_socket__create")) << t.err;
  EXPECT_TRUE(contains(t.err, "fewer than 3 rx queues")) << t.err;
  ASSERT_TRUE(t.line("ip link add dev d2 numtxqueues 2 type xdp link " + a + " netns " + ns.name())) << t.err;
  ASSERT_FALSE(xdp_up(t, "d2", skip));
  EXPECT_TRUE(contains(t.err, "numtxqueues 2 exceeds queues 1")) << t.err;
}

// Receive on queue 1. In native mode veth runs the XDP program on the rx queue matching
// the tx queue its peer sent on, and XPS on the peer picks tx queue N for frames sent from
// CPU N. With queues 2, the frames sent from CPU 0 and from CPU 1 all arrive; with
// queues 1, libxdp's program finds no socket for queue 1 and passes those to the kernel's
// stack, so only CPU 0's arrive.
TEST(XdpKernel, QueueOneReceivesWhatThePeerSendsOnItsTxQueueOne) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  if (!CPU_ISSET(0, &mine) || !CPU_ISSET(1, &mine)) GTEST_SKIP() << "needs CPUs 0 and 1";
  KernelNs ns("ppxdp");
  std::string a, b;
  if (!ns.pair(a, b, 2)) GTEST_SKIP() << ns.why();
  const std::string xps = "/sys/class/net/" + b + "/queues/tx-";
  if (!sh("ip netns exec " + ns.name() + " sh -c 'echo 1 > " + xps + "0/xps_cpus && echo 2 > " + xps + "1/xps_cpus'"))
    GTEST_SKIP() << "no XPS (CONFIG_XPS) to steer the peer's tx queue";
  KernelSender tx(ns.name(), b);
  ASSERT_TRUE(tx.ok());
  auto send_from = [&](int cpu, uint32_t n) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    EXPECT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
    for (uint32_t i = 0; i < n; ++i) EXPECT_TRUE(tx.send(udp_frame(static_cast<uint16_t>(9 + cpu), i, 60)));
    EXPECT_EQ(::sched_setaffinity(0, sizeof mine, &mine), 0);
  };
  for (const uint32_t queues : {2u, 1u}) {
    Runner t;
    ASSERT_TRUE(t.line("ip link add dev d0 type xdp link " + a + " netns " + ns.name() + " mode native queues " +
                       std::to_string(queues)))
        << t.err;
    XDP_UP(t, "d0");
    send_from(0, 200);
    send_from(1, 300);
    const uint64_t want = queues == 2 ? 500 : 200;
    DevStatsSum s = t.rx_accounted("d0", want);
    ASSERT_TRUE(t.line("sleep 0.05")) << t.err;
    s = t.dev("d0")->stats_sum();
    EXPECT_EQ(s.rx_packets, want) << "queues " << queues;
    EXPECT_EQ(s.rx_dropped, 0u) << "queues " << queues;
    ASSERT_TRUE(t.line("ip link del dev d0")) << t.err;
  }
}

// Native XDP on a veth whose peer's MTU is over what XDP takes: the kernel refuses, and
// its own words reach the error; generic mode takes the same interface.
TEST(XdpKernel, NativeModeRefusedPassesTheKernelsMessage) {
  KernelNs ns("ppxdp");
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  ASSERT_TRUE(sh("ip -n " + ns.name() + " link set " + b + " mtu 9000"));
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type xdp link " + a + " netns " + ns.name() + " mode native")) << t.err;
  std::string skip;
  ASSERT_FALSE(xdp_up(t, "d0", skip));
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_TRUE(contains(t.err, "(kernel: veth: Peer MTU is too large to set XDP)")) << t.err;
  ASSERT_TRUE(t.line("ip link add dev d1 type xdp link " + a + " netns " + ns.name() + " mode generic")) << t.err;
  XDP_UP(t, "d1");
}

// A tc egress filter on the xdp device drops two of four UDP flows: none of them reaches
// the wire, and sent + dropped is everything pktgen made.
TEST(XdpKernel, EgressFilterDropsAreMissingOnTheWire) {
  KernelNs ns("ppxdp");
  std::string a, b;
  if (!ns.pair(a, b)) GTEST_SKIP() << ns.why();
  KernelCapture cap(ns.name(), b);
  ASSERT_TRUE(cap.ok());
  constexpr uint64_t kN = 2000;
  Runner t;
  ASSERT_TRUE(t.line("ip link add dev d0 type xdp link " + a + " netns " + ns.name())) << t.err;
  XDP_UP(t, "d0");
  ASSERT_TRUE(t.line("tc qdisc add dev d0 clsact")) << t.err;
  ASSERT_TRUE(t.line("tc filter add dev d0 egress protocol ip flower ip_proto udp dst_port 1000-1001 action drop")) << t.err;
  const uint64_t drops0 = drop_totals()[static_cast<unsigned>(DropReason::TC_EGRESS)];
  ASSERT_TRUE(t.line("pktgen -i d0 -n " + std::to_string(kN) + " -s 60 -p 1000-1003")) << t.err;
  const uint64_t dropped = drop_totals()[static_cast<unsigned>(DropReason::TC_EGRESS)] - drops0;
  const uint64_t sent = t.dev("d0")->stats_sum().tx_packets;
  EXPECT_EQ(sent, kN);
  EXPECT_GT(dropped, kN / 2);
  EXPECT_LT(dropped, kN * 4);
  const std::vector<Frame> got = cap.take(sent);
  EXPECT_EQ(got.size(), sent);
  for (const Frame& f : got) ASSERT_GE(udp_dport(f), 1002) << "a dropped flow on the wire";
}

// The userspace datapath between two kernel veths, xdp in and xdp out
// (check_datapath_between_veths).
TEST(XdpKernel, KernelToPktpathToKernelCarriesWhatTheRulesAllow) {
  KernelNs ns("ppxdp");
  SKIP_UNLESS(ns);
  check_datapath_between_veths(ns, "xdp", xdp_up);
}

// The same with both devices on NAPI threads of their own, the script idle meanwhile.
TEST(XdpKernel, ThreadedNapiCarriesTheDatapathWithoutTheScript) {
  KernelNs ns("ppxdt");
  SKIP_UNLESS(ns);
  check_datapath_between_veths(ns, "xdp", xdp_up, true);
}

}  // namespace
}  // namespace pktpath
