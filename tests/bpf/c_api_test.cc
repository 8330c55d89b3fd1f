// The C API (include/pktpath/bpf.h) from C++: every function, both acceptance modes, every
// engine, ancillary loads driven by the metadata struct, errors; BpfCApiFromC runs the
// same API from a file compiled as C (c_api_c_test.c).
#include "pktpath/bpf.h"

#include <pcap/pcap.h>

#include <arpa/inet.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bpf/check.h"
#include "bpf/packet_set.h"
#include "bpf/parse.h"
#include "bpf/program.h"

extern "C" int pktpath_c_api_c_test(char* msg, size_t msg_size);

namespace pktpath::bpf {
namespace {

constexpr int kEngines[] = {PKTPATH_BPF_ENGINE_SWITCH, PKTPATH_BPF_ENGINE_THREADED, PKTPATH_BPF_ENGINE_JIT};
constexpr int kModes[] = {PKTPATH_BPF_KERNEL, PKTPATH_BPF_USERLAND};

const pktpath_bpf_insn* c_insns(const Insns& p) { return reinterpret_cast<const pktpath_bpf_insn*>(p.data()); }

// Owns a handle.
struct Handle {
  pktpath_bpf* h = nullptr;
  explicit Handle(pktpath_bpf* p) : h(p) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { pktpath_bpf_free(h); }
};

Insns compile(const char* expr) {
  Insns prog;
  std::string err;
  EXPECT_TRUE(compile_expression(expr, CompileOptions{}, &prog, &err)) << expr << ": " << err;
  return prog;
}

TEST(BpfCApi, Version) {
  EXPECT_EQ(pktpath_bpf_version(), static_cast<unsigned>(PKTPATH_BPF_VERSION));
  EXPECT_EQ(pktpath_bpf_version() >> 16, static_cast<unsigned>(PKTPATH_BPF_VERSION_MAJOR));
  EXPECT_EQ(pktpath_bpf_version() & 0xffff, static_cast<unsigned>(PKTPATH_BPF_VERSION_MINOR));
}

TEST(BpfCApi, InsnLayoutIsPcapAndSockFilter) {
  static_assert(sizeof(pktpath_bpf_insn) == sizeof(bpf_insn));
  static_assert(offsetof(pktpath_bpf_insn, k) == offsetof(bpf_insn, k));
  static_assert(offsetof(pktpath_bpf_insn, k) == offsetof(sock_filter, k));
  pcap_t* p = pcap_open_dead(DLT_EN10MB, 262144);
  ASSERT_NE(p, nullptr);
  bpf_program fp{};
  ASSERT_EQ(pcap_compile(p, &fp, "tcp port 80", 1, PCAP_NETMASK_UNKNOWN), 0);
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  Handle h(pktpath_bpf_load(reinterpret_cast<const pktpath_bpf_insn*>(fp.bf_insns), fp.bf_len, PKTPATH_BPF_KERNEL,
                            PKTPATH_BPF_ENGINE_SWITCH, err, sizeof err));
  ASSERT_NE(h.h, nullptr) << err;
  size_t n = 0;
  const pktpath_bpf_insn* got = pktpath_bpf_insns(h.h, &n);
  ASSERT_EQ(n, fp.bf_len);
  EXPECT_EQ(std::memcmp(got, fp.bf_insns, n * sizeof(bpf_insn)), 0);
  pcap_freecode(&fp);
  pcap_close(p);
}

// Every engine and mode gives what Program gives (and libpcap's bpf_filter) on the
// synthetic set, through both pktpath_bpf_load and pktpath_bpf_compile.
TEST(BpfCApi, EveryEngineAndModeMatchesProgram) {
  PacketSet set = make_synthetic(2000);
  const char* const exprs[] = {"net 192.168.2.0/24", "udp and port 53", "tcp[tcpflags] & tcp-syn != 0",
                               "vlan and ip", "len > 100", "ip6 and tcp port 443"};
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  for (const char* expr : exprs) {
    Insns prog = compile(expr);
    std::string e;
    auto ref = Program::load(prog, Engine::Switch, &e);
    ASSERT_TRUE(ref) << e;
    for (int mode : kModes) {
      for (int engine : kEngines) {
        Handle loaded(pktpath_bpf_load(c_insns(prog), prog.size(), mode, engine, err, sizeof err));
        ASSERT_NE(loaded.h, nullptr) << expr << ": " << err;
        Handle compiled(pktpath_bpf_compile(expr, DLT_EN10MB, 262144, 1, PKTPATH_BPF_NETMASK_UNKNOWN, mode, engine,
                                            err, sizeof err));
        ASSERT_NE(compiled.h, nullptr) << expr << ": " << err;
        EXPECT_EQ(pktpath_bpf_mode(loaded.h), mode);
        EXPECT_EQ(pktpath_bpf_engine(loaded.h), engine) << pktpath_bpf_jit_fallback_reason(loaded.h);
        EXPECT_STREQ(pktpath_bpf_jit_fallback_reason(loaded.h), "");
        size_t n = 0;
        pktpath_bpf_insns(compiled.h, &n);
        EXPECT_EQ(n, prog.size());
        int mismatches = 0;
        for (size_t i = 0; i < set.size(); ++i) {
          PacketView v = PacketView::linear(set.bytes(i), set.caplen(i));
          v.wire_len = set.wirelen(i);
          uint32_t want = ref->run(v);
          uint32_t a = pktpath_bpf_run(loaded.h, set.bytes(i), set.wirelen(i), set.caplen(i), nullptr);
          uint32_t b = pktpath_bpf_run(compiled.h, set.bytes(i), set.wirelen(i), set.caplen(i), nullptr);
          uint32_t pcap = bpf_filter(reinterpret_cast<const bpf_insn*>(prog.data()), set.bytes(i), set.wirelen(i),
                                     set.caplen(i));
          if ((a != want || b != want || pcap != want) && mismatches++ < 3)
            ADD_FAILURE() << expr << " [" << pktpath_bpf_engine_name(engine) << ", mode " << mode << "] packet "
                          << i << ": load " << a << ", compile " << b << ", Program " << want << ", libpcap "
                          << pcap;
        }
      }
    }
  }
}

TEST(BpfCApi, DefaultEngineIsTheDefault) {
  Insns prog = compile("ip");
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  Handle h(pktpath_bpf_load(c_insns(prog), prog.size(), PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_DEFAULT, err,
                            sizeof err));
  ASSERT_NE(h.h, nullptr) << err;
  const int want = default_engine() == Engine::Jit        ? PKTPATH_BPF_ENGINE_JIT
                   : default_engine() == Engine::Threaded ? PKTPATH_BPF_ENGINE_THREADED
                                                          : PKTPATH_BPF_ENGINE_SWITCH;
  EXPECT_EQ(pktpath_bpf_engine(h.h), want);
  EXPECT_STREQ(pktpath_bpf_engine_name(PKTPATH_BPF_ENGINE_JIT), "jit");
  EXPECT_STREQ(pktpath_bpf_engine_name(PKTPATH_BPF_ENGINE_THREADED), "threaded");
  EXPECT_STREQ(pktpath_bpf_engine_name(PKTPATH_BPF_ENGINE_SWITCH), "switch");
  EXPECT_STREQ(pktpath_bpf_engine_name(PKTPATH_BPF_ENGINE_DEFAULT), "?");
  EXPECT_STREQ(pktpath_bpf_engine_name(99), "?");
}

// libpcap's protochain compiles to a backward jump: the kernel's rules refuse it, the
// userland rules load it on every engine, the JIT included. Every engine, and
// pktpath_bpf_filter, gives libpcap's bpf_filter result.
TEST(BpfCApi, UserlandModeTakesBackwardJumps) {
  const char* expr = "ip protochain 17 or ip6 protochain 6";
  Insns prog = compile(expr);
  ASSERT_TRUE(has_backward_jump(prog));
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  err[0] = '\0';
  EXPECT_EQ(pktpath_bpf_load(c_insns(prog), prog.size(), PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, err,
                             sizeof err),
            nullptr);
  EXPECT_EQ(std::string(err), check_program(prog, Acceptance::Kernel).reason);
  EXPECT_EQ(pktpath_bpf_compile(expr, DLT_EN10MB, 262144, 1, PKTPATH_BPF_NETMASK_UNKNOWN, PKTPATH_BPF_KERNEL,
                                PKTPATH_BPF_ENGINE_DEFAULT, err, sizeof err),
            nullptr);
  PacketSet set = make_synthetic(2000);
  for (int engine : kEngines) {
    Handle h(pktpath_bpf_load(c_insns(prog), prog.size(), PKTPATH_BPF_USERLAND, engine, err, sizeof err));
    ASSERT_NE(h.h, nullptr) << err;
    EXPECT_EQ(pktpath_bpf_mode(h.h), PKTPATH_BPF_USERLAND);
    // Every engine runs it itself, the JIT included (bounded, as the interpreters).
    EXPECT_EQ(pktpath_bpf_engine(h.h), engine);
    EXPECT_STREQ(pktpath_bpf_jit_fallback_reason(h.h), "");
    int mismatches = 0, accepted = 0;
    for (size_t i = 0; i < set.size(); ++i) {
      uint32_t want = bpf_filter(reinterpret_cast<const bpf_insn*>(prog.data()), set.bytes(i), set.wirelen(i),
                                 set.caplen(i));
      uint32_t got = pktpath_bpf_run(h.h, set.bytes(i), set.wirelen(i), set.caplen(i), nullptr);
      uint32_t filt = pktpath_bpf_filter(c_insns(prog), set.bytes(i), set.wirelen(i), set.caplen(i));
      accepted += want != 0;
      if ((got != want || filt != want) && mismatches++ < 3)
        ADD_FAILURE() << pktpath_bpf_engine_name(engine) << " packet " << i << ": run " << got << ", filter "
                      << filt << ", libpcap " << want;
    }
    EXPECT_GT(accepted, 0);
  }
}

// A scratch cell read before it is written: the kernel refuses it; userland reads 0.
TEST(BpfCApi, UserlandModeReadsUnwrittenScratchAsZero) {
  Insns prog = {Insn{BPF_LD | BPF_MEM, 0, 0, 3}, Insn{BPF_ALU | BPF_ADD | BPF_K, 0, 0, 5}, Insn{BPF_RET | BPF_A, 0, 0, 0}};
  uint8_t pkt[20] = {};
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  EXPECT_EQ(pktpath_bpf_load(c_insns(prog), prog.size(), PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, err,
                             sizeof err),
            nullptr);
  for (int engine : kEngines) {
    Handle h(pktpath_bpf_load(c_insns(prog), prog.size(), PKTPATH_BPF_USERLAND, engine, err, sizeof err));
    ASSERT_NE(h.h, nullptr) << err;
    EXPECT_EQ(pktpath_bpf_run(h.h, pkt, 20, 20, nullptr), 5u) << pktpath_bpf_engine_name(engine);
  }
  EXPECT_EQ(pktpath_bpf_filter(c_insns(prog), pkt, 20, 20), 5u);
}

// ld ancillary field `ad`; ret a.
Insns ancillary(uint32_t ad) {
  return {Insn{BPF_LD | BPF_W | BPF_ABS, 0, 0, ancillary_k(ad)}, Insn{BPF_RET | BPF_A, 0, 0, 0}};
}

TEST(BpfCApi, MetadataDrivesAncillaryLoads) {
  pktpath_bpf_meta m;
  pktpath_bpf_meta_init(&m);
  EXPECT_EQ(m.hatype, 1);
  EXPECT_EQ(m.net_off, 14u);
  EXPECT_EQ(m.mac_off, 0u);
  EXPECT_EQ(m.has_dev, 0);
  EXPECT_EQ(m.mark, 0u);
  m.mark = 0xdeadbeef;
  m.hash = 0x5a5a1234;
  m.ifindex = 7;
  m.cpu = 3;
  m.protocol = htons(0x86dd);
  m.queue_mapping = 5;
  m.vlan_tci = 0x0123;
  m.vlan_proto = htons(0x88a8);
  m.hatype = 772;  // ARPHRD_LOOPBACK
  m.pkt_type = 4;  // PACKET_OUTGOING
  m.vlan_present = 1;
  m.has_dev = 1;
  const struct {
    uint32_t ad, want;
  } cases[] = {
      {SKF_AD_MARK, 0xdeadbeef}, {SKF_AD_RXHASH, 0x5a5a1234}, {SKF_AD_IFINDEX, 7},
      {SKF_AD_CPU, 3},           {SKF_AD_PROTOCOL, 0x86dd},   {SKF_AD_QUEUE, 5},
      {SKF_AD_VLAN_TAG, 0x0123}, {SKF_AD_VLAN_TPID, 0x88a8},  {SKF_AD_HATYPE, 772},
      {SKF_AD_PKTTYPE, 4},       {SKF_AD_VLAN_TAG_PRESENT, 1},
  };
  uint8_t pkt[64] = {};
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  for (auto c : cases) {
    Insns prog = ancillary(c.ad);
    for (int engine : kEngines) {
      Handle h(pktpath_bpf_load(c_insns(prog), prog.size(), PKTPATH_BPF_KERNEL, engine, err, sizeof err));
      ASSERT_NE(h.h, nullptr) << err;
      EXPECT_EQ(pktpath_bpf_run(h.h, pkt, 64, 64, &m), c.want) << "SKF_AD " << c.ad << " engine " << engine;
    }
  }
  // has_dev 0: IFINDEX and HATYPE end the program returning A (here 0x77).
  pktpath_bpf_meta nodev = m;
  nodev.has_dev = 0;
  for (uint32_t ad : {SKF_AD_IFINDEX, SKF_AD_HATYPE}) {
    Insns prog = {Insn{BPF_LD | BPF_IMM, 0, 0, 0x77}, Insn{BPF_LD | BPF_W | BPF_ABS, 0, 0, ancillary_k(ad)},
                  Insn{BPF_RET | BPF_K, 0, 0, 1}};
    for (int engine : kEngines) {
      Handle h(pktpath_bpf_load(c_insns(prog), prog.size(), PKTPATH_BPF_KERNEL, engine, err, sizeof err));
      ASSERT_NE(h.h, nullptr) << err;
      EXPECT_EQ(pktpath_bpf_run(h.h, pkt, 64, 64, &nodev), 0x77u);
      EXPECT_EQ(pktpath_bpf_run(h.h, pkt, 64, 64, &m), 1u);
    }
  }
}

TEST(BpfCApi, MetadataOffsetsDriveNegativeLoads) {
  uint8_t pkt[64] = {};
  pkt[4] = 0xaa;   // mac header at 4
  pkt[30] = 0xbb;  // network header at 30
  Insns net = {Insn{BPF_LD | BPF_B | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_NET_OFF)},
               Insn{BPF_RET | BPF_A, 0, 0, 0}};
  Insns ll = {Insn{BPF_LD | BPF_B | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_LL_OFF)}, Insn{BPF_RET | BPF_A, 0, 0, 0}};
  pktpath_bpf_meta m;
  pktpath_bpf_meta_init(&m);
  m.mac_off = 4;
  m.net_off = 30;
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  for (int engine : kEngines) {
    Handle hn(pktpath_bpf_load(c_insns(net), net.size(), PKTPATH_BPF_KERNEL, engine, err, sizeof err));
    Handle hl(pktpath_bpf_load(c_insns(ll), ll.size(), PKTPATH_BPF_KERNEL, engine, err, sizeof err));
    ASSERT_NE(hn.h, nullptr);
    ASSERT_NE(hl.h, nullptr);
    EXPECT_EQ(pktpath_bpf_run(hn.h, pkt, 64, 64, &m), 0xbbu);
    EXPECT_EQ(pktpath_bpf_run(hl.h, pkt, 64, 64, &m), 0xaau);
    EXPECT_EQ(pktpath_bpf_run(hn.h, pkt, 64, 64, nullptr), 0u);  // defaults: net header at 14
    m.net_off = 64;                                                // past the buffer: the load fails
    EXPECT_EQ(pktpath_bpf_run(hn.h, pkt, 64, 64, &m), 0u);
    m.net_off = 30;
  }
}

TEST(BpfCApi, WirelenAndBuflen) {
  // ld len; ret a — and ld [100]; ret #1.
  Insns len = {Insn{BPF_LD | BPF_W | BPF_LEN, 0, 0, 0}, Insn{BPF_RET | BPF_A, 0, 0, 0}};
  Insns far = {Insn{BPF_LD | BPF_B | BPF_ABS, 0, 0, 100}, Insn{BPF_RET | BPF_K, 0, 0, 1}};
  std::vector<uint8_t> pkt(200, 0);
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  for (int engine : kEngines) {
    Handle hl(pktpath_bpf_load(c_insns(len), len.size(), PKTPATH_BPF_KERNEL, engine, err, sizeof err));
    Handle hf(pktpath_bpf_load(c_insns(far), far.size(), PKTPATH_BPF_KERNEL, engine, err, sizeof err));
    ASSERT_NE(hl.h, nullptr);
    ASSERT_NE(hf.h, nullptr);
    EXPECT_EQ(pktpath_bpf_run(hl.h, pkt.data(), 1500, 54, nullptr), 1500u);
    EXPECT_EQ(pktpath_bpf_run(hf.h, pkt.data(), 1500, 54, nullptr), 0u);
    EXPECT_EQ(pktpath_bpf_run(hf.h, pkt.data(), 1500, 101, nullptr), 1u);
    EXPECT_EQ(pktpath_bpf_filter(c_insns(len), pkt.data(), 1500, 54), 1500u);
    EXPECT_EQ(pktpath_bpf_filter(c_insns(far), pkt.data(), 1500, 54), 0u);
  }
}

TEST(BpfCApi, FilterMatchesLibpcapBpfFilter) {
  PacketSet set = make_synthetic(2000);
  for (const char* expr : {"ip", "net 192.168.2.0/24", "tcp port 80 or tcp port 443", "ip[8] % 7 = 1", "less 70"}) {
    Insns prog = compile(expr);
    int mismatches = 0;
    for (size_t i = 0; i < set.size(); ++i) {
      uint32_t want = bpf_filter(reinterpret_cast<const bpf_insn*>(prog.data()), set.bytes(i), set.wirelen(i),
                                 set.caplen(i));
      uint32_t got = pktpath_bpf_filter(c_insns(prog), set.bytes(i), set.wirelen(i), set.caplen(i));
      if (got != want && mismatches++ < 3)
        ADD_FAILURE() << expr << " packet " << i << ": got " << got << ", libpcap " << want;
    }
  }
  EXPECT_EQ(pktpath_bpf_filter(nullptr, nullptr, 0, 0), 0xffffffffu);
}

TEST(BpfCApi, Errors) {
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  // The checker's reason, as check_program gives it.
  Insns no_ret = {Insn{BPF_LD | BPF_H | BPF_ABS, 0, 0, 12}};
  const std::string reason = check_program(no_ret).reason;
  ASSERT_FALSE(reason.empty());
  for (int mode : kModes) {
    std::memset(err, 'x', sizeof err);
    EXPECT_EQ(pktpath_bpf_load(c_insns(no_ret), 1, mode, PKTPATH_BPF_ENGINE_JIT, err, sizeof err), nullptr);
    EXPECT_NE(std::strlen(err), 0u);
    if (mode == PKTPATH_BPF_KERNEL) {
      EXPECT_EQ(std::string(err), reason);
    }
  }
  // The kernel rejects an unknown ancillary field; an empty program.
  Insns bad_anc = ancillary(SKF_AD_MAX);
  EXPECT_EQ(pktpath_bpf_load(c_insns(bad_anc), bad_anc.size(), PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, err,
                             sizeof err),
            nullptr);
  EXPECT_EQ(pktpath_bpf_load(nullptr, 0, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, err, sizeof err), nullptr);
  EXPECT_NE(std::strlen(err), 0u);
  EXPECT_EQ(pktpath_bpf_load(nullptr, 3, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("NULL"), std::string::npos) << err;
  // Unknown mode or engine.
  Insns ok = compile("ip");
  EXPECT_EQ(pktpath_bpf_load(c_insns(ok), ok.size(), 7, PKTPATH_BPF_ENGINE_SWITCH, err, sizeof err), nullptr);
  EXPECT_EQ(std::string(err), "unknown acceptance mode 7");
  EXPECT_EQ(pktpath_bpf_load(c_insns(ok), ok.size(), PKTPATH_BPF_KERNEL, -1, err, sizeof err), nullptr);
  EXPECT_EQ(std::string(err), "unknown engine -1");
  // libpcap's message for a bad expression; a NULL expression.
  EXPECT_EQ(pktpath_bpf_compile("tcp port", DLT_EN10MB, 262144, 1, PKTPATH_BPF_NETMASK_UNKNOWN, PKTPATH_BPF_USERLAND,
                                PKTPATH_BPF_ENGINE_DEFAULT, err, sizeof err),
            nullptr);
  EXPECT_EQ(std::string(err).rfind("expression: ", 0), 0u) << err;
  EXPECT_EQ(pktpath_bpf_compile(nullptr, DLT_EN10MB, 262144, 1, PKTPATH_BPF_NETMASK_UNKNOWN, PKTPATH_BPF_USERLAND,
                                PKTPATH_BPF_ENGINE_DEFAULT, err, sizeof err),
            nullptr);
  EXPECT_NE(std::strlen(err), 0u);
  // A link type that has no such field: libpcap refuses.
  EXPECT_EQ(pktpath_bpf_compile("ether host 1:2:3:4:5:6", DLT_RAW, 65535, 1, PKTPATH_BPF_NETMASK_UNKNOWN,
                                PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_DEFAULT, err, sizeof err),
            nullptr);
  // A short buffer gets the message cut, NUL-terminated; NULL or 0 is not written.
  char tiny[8];
  std::memset(tiny, 'x', sizeof tiny);
  EXPECT_EQ(pktpath_bpf_load(c_insns(no_ret), 1, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, tiny, sizeof tiny),
            nullptr);
  EXPECT_EQ(std::string(tiny), reason.substr(0, 7));
  std::memset(tiny, 'x', sizeof tiny);
  EXPECT_EQ(pktpath_bpf_load(c_insns(no_ret), 1, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, tiny, 0), nullptr);
  EXPECT_EQ(tiny[0], 'x');
  EXPECT_EQ(pktpath_bpf_load(c_insns(no_ret), 1, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, nullptr, 0), nullptr);
  pktpath_bpf_free(nullptr);
}

TEST(BpfCApi, OneHandleRunsOnManyThreads) {
  PacketSet set = make_synthetic(4000);
  char err[PKTPATH_BPF_ERRBUF_SIZE];
  for (int engine : kEngines) {
    Handle h(pktpath_bpf_compile("udp and port 53 or net 192.168.2.0/24", DLT_EN10MB, 262144, 1,
                                 PKTPATH_BPF_NETMASK_UNKNOWN, PKTPATH_BPF_USERLAND, engine, err, sizeof err));
    ASSERT_NE(h.h, nullptr) << err;
    std::vector<uint32_t> want(set.size());
    for (size_t i = 0; i < set.size(); ++i)
      want[i] = pktpath_bpf_run(h.h, set.bytes(i), set.wirelen(i), set.caplen(i), nullptr);
    std::vector<int> bad(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int round = 0; round < 5; ++round)
          for (size_t i = 0; i < set.size(); ++i)
            if (pktpath_bpf_run(h.h, set.bytes(i), set.wirelen(i), set.caplen(i), nullptr) != want[i]) ++bad[t];
      });
    for (auto& th : threads) th.join();
    for (int b : bad) EXPECT_EQ(b, 0);
  }
}

TEST(BpfCApiFromC, EveryFunction) {
  char msg[512];
  int failures = pktpath_c_api_c_test(msg, sizeof msg);
  EXPECT_EQ(failures, 0) << msg;
}

}  // namespace
}  // namespace pktpath::bpf
