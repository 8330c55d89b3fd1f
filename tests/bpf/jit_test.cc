// The x86-64 JIT's own properties: W^X mapping, fallback to the threaded engine, jump
// encodings that converge on long programs, constant blinding, and packet loads at every
// offset around the end of exactly-sized packets (ASan sees any read outside them).
// The conformance suite, the libpcap cases and the random differential run the JIT
// through testing::engines() / random_program_test.cc.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "bpf/jit.h"
#include "bpf/parse.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

// The permission string ("r-xp") of the mapping holding addr, or "" when none does.
std::string perms_of(const void* addr) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(maps, line)) {
    uintptr_t lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi)
      return perms;
  }
  return "";
}

Insns net_filter() {
  Insns p;
  std::string err;
  EXPECT_TRUE(compile_expression("net 192.168.2.0/24", CompileOptions{}, &p, &err)) << err;
  return p;
}

TEST(BpfJit, CodeIsMappedReadExecuteNeverWritable) {
  testing::engines();
  std::string err;
  auto p = testing::load(net_filter(), Engine::Jit, &err);
  ASSERT_TRUE(p) << err;
  ASSERT_EQ(p->engine(), Engine::Jit);
  const JitCode* jc = jit_code_of(p->image());
  ASSERT_NE(jc, nullptr);
  EXPECT_GT(jc->code_len, 0u);
  EXPECT_EQ(perms_of(jc->mem), "r-xp");
  // Writing must fault: mprotect semantics say the pages are read+execute only; probe
  // through the maps (a write would crash the test rather than fail it).
  EXPECT_EQ(perms_of(static_cast<const uint8_t*>(jc->mem) + jc->code_len - 1), "r-xp");
  // The other engines have no JIT image.
  auto t = Program::load(net_filter(), Engine::Threaded, &err);
  ASSERT_TRUE(t);
  EXPECT_EQ(jit_code_of(t->image()), nullptr);
}

TEST(BpfJit, ImageIsUnmappedWithTheProgram) {
  std::string err;
  void* mem = nullptr;
  {
    auto p = testing::load(net_filter(), Engine::Jit, &err);
    ASSERT_TRUE(p) << err;
    mem = jit_code_of(p->image())->mem;
    ASSERT_EQ(perms_of(mem), "r-xp");
  }
  // Unmapped now (or reused by someone else, but never still our r-x image).
  EXPECT_NE(perms_of(mem), "r-xp");
}

TEST(BpfJit, FallsBackToThreadedAndSaysWhy) {
  JitOptions o;
  o.force_failure = true;
  o.allow_fallback = true;
  std::string err;
  auto p = Program::load(net_filter(), Engine::Jit, o, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(p->requested_engine(), Engine::Jit);
  EXPECT_EQ(p->engine(), Engine::Threaded);
  EXPECT_NE(p->jit_fallback_reason().find("jit:"), std::string::npos);
  uint8_t pkt[34] = {};
  pkt[12] = 0x08;
  pkt[26] = 192, pkt[27] = 168, pkt[28] = 2, pkt[29] = 9;
  EXPECT_NE(p->run(PacketView::linear(pkt, sizeof pkt)), 0u);

  o.allow_fallback = false;
  EXPECT_FALSE(Program::load(net_filter(), Engine::Jit, o, &err));
  EXPECT_NE(err.find("jit:"), std::string::npos);

  o.force_failure = false;
  auto q = Program::load(net_filter(), Engine::Jit, o, &err);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->engine(), Engine::Jit);
  EXPECT_TRUE(q->jit_fallback_reason().empty());
}

// A packet of exactly n bytes on the heap.
std::unique_ptr<uint8_t[]> exact_packet(uint32_t n, uint32_t seed) {
  std::unique_ptr<uint8_t[]> b(new uint8_t[n]);
  for (uint32_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed * 131 + i * 7 + 1);
  return b;
}

TEST(BpfJit, LoadsAroundThePacketEndMatchTheReference) {
  testing::engines();
  const uint16_t sizes[] = {BPF_W, BPF_H, BPF_B};
  const uint32_t xs[] = {0, 1, 3, 0x7fffffff, 0x80000000u, 0xfffffffcu, 0xffffffffu};
  long checked = 0;
  for (uint32_t len : {0u, 1u, 2u, 3u, 4u, 5u, 14u, 15u, 60u}) {
    auto pkt = exact_packet(len, len);
    PacketView v = PacketView::linear(pkt.get(), len);
    for (uint16_t sz : sizes) {
      for (uint32_t k = 0; k < len + 6; ++k) {
        for (uint32_t base : {0u, static_cast<uint32_t>(SKF_NET_OFF), static_cast<uint32_t>(SKF_LL_OFF)}) {
          const uint32_t kk = base + k;
          Insns abs = {{static_cast<uint16_t>(BPF_LD | sz | BPF_ABS), 0, 0, kk}, {BPF_RET | BPF_A, 0, 0, 0}};
          Insns msh = {{BPF_LDX | BPF_B | BPF_MSH, 0, 0, kk}, {BPF_MISC | BPF_TXA, 0, 0, 0}, {BPF_RET | BPF_A, 0, 0, 0}};
          std::vector<Insns> progs = {abs, msh};
          for (uint32_t x : xs) {
            progs.push_back({{BPF_LDX | BPF_IMM, 0, 0, x},
                             {static_cast<uint16_t>(BPF_LD | sz | BPF_IND), 0, 0, kk},
                             {BPF_RET | BPF_A, 0, 0, 0}});
          }
          for (const Insns& prog : progs) {
            std::string err;
            auto ref = Program::load(prog, Engine::Switch, &err);
            auto jit = testing::load(prog, Engine::Jit, &err);
            ASSERT_TRUE(ref && jit) << err;
            ASSERT_EQ(jit->run(v), ref->run(v)) << "len " << len << " code " << prog[prog.size() - 2].code
                                                << " k " << kk;
            ++checked;
          }
        }
      }
    }
  }
  std::printf("jit: %ld load programs checked at the packet end\n", checked);
}

TEST(BpfJit, DivisionByZeroXReturnsZero) {
  testing::engines();
  for (uint16_t op : {BPF_DIV, BPF_MOD}) {
    Insns p = {{BPF_LD | BPF_IMM, 0, 0, 77}, {BPF_LDX | BPF_IMM, 0, 0, 0},
               {static_cast<uint16_t>(BPF_ALU | op | BPF_X), 0, 0, 0}, {BPF_RET | BPF_K, 0, 0, 5}};
    std::string err;
    auto j = testing::load(p, Engine::Jit, &err);
    ASSERT_TRUE(j) << err;
    EXPECT_EQ(j->run(PacketView{}), 0u);
    p[1].k = 10;
    p[3] = {BPF_RET | BPF_A, 0, 0, 0};
    auto j2 = testing::load(p, Engine::Jit, &err);
    ASSERT_TRUE(j2) << err;
    EXPECT_EQ(j2->run(PacketView{}), op == BPF_DIV ? 7u : 7u);  // 77/10 = 7, 77%10 = 7
  }
}

// Every ancillary field (inline in the image, or through load_ancillary) on metadata with
// every field random, with and without a device, as A and X vary.
TEST(BpfJit, AncillaryLoadsMatchTheReference) {
  testing::engines();
  std::mt19937 r(42);
  auto u32 = [&r] { return static_cast<uint32_t>(r()); };
  uint8_t pkt[64];
  for (auto& b : pkt) b = static_cast<uint8_t>(u32());
  long checked = 0;
  for (uint32_t ad = 0; ad < SKF_AD_MAX; ad += 4) {
    if (ad == SKF_AD_RANDOM) continue;  // not deterministic between engines
    for (uint16_t sz : {BPF_W, BPF_H, BPF_B}) {
      Insns prog = {{BPF_LD | BPF_IMM, 0, 0, 0}, {BPF_LDX | BPF_IMM, 0, 0, 0},
                    {static_cast<uint16_t>(BPF_LD | sz | BPF_ABS), 0, 0, ancillary_k(ad)},
                    {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1}, {BPF_RET | BPF_A, 0, 0, 0}};
      for (int trial = 0; trial < 50; ++trial) {
        prog[0].k = trial % 3 ? u32() : u32() % 64;
        prog[1].k = u32() % 64;
        std::string err;
        auto ref = Program::load(prog, Engine::Switch, &err);
        auto jit = testing::load(prog, Engine::Jit, &err);
        ASSERT_TRUE(ref && jit) << err;
        PacketView v = PacketView::linear(pkt, sizeof pkt);
        PacketMeta& m = v.meta;
        m.mark = u32(), m.hash = u32(), m.ifindex = static_cast<int32_t>(u32()), m.cpu = u32() % 64;
        m.protocol = static_cast<uint16_t>(u32()), m.queue_mapping = static_cast<uint16_t>(u32());
        m.vlan_tci = static_cast<uint16_t>(u32()), m.vlan_proto = static_cast<uint16_t>(u32());
        m.hatype = static_cast<uint16_t>(u32()), m.pkt_type = static_cast<uint8_t>(u32());
        m.vlan_present = u32() & 1, m.has_dev = u32() & 1;
        ASSERT_EQ(jit->run(v), ref->run(v)) << "ad " << ad << " trial " << trial;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// A 4096-instruction program whose conditional jumps span up to 255 instructions of
// 10+ bytes each (rel32 needed) next to short ones (rel8): the passes must converge and
// the result must match the reference.
Insns long_jumps_program(uint32_t seed) {
  std::mt19937 r(seed);  // 32-bit results, narrowed explicitly below
  auto u = [&r](uint32_t m) { return static_cast<uint32_t>(r() % m); };
  Insns p;
  const size_t n = kMaxInsns;
  while (p.size() + 1 < n) {
    size_t room = n - p.size() - 2;
    switch (r() % 4) {
      case 0: {
        uint32_t lim = room < 255 ? static_cast<uint32_t>(room) : 255;
        uint8_t jt = static_cast<uint8_t>(r() % (lim + 1)), jf = static_cast<uint8_t>(r() % (lim + 1));
        p.push_back({BPF_JMP | BPF_JGT | BPF_K, jt, jf, u(64)});
        break;
      }
      case 1: p.push_back({BPF_ALU | BPF_ADD | BPF_K, 0, 0, static_cast<uint32_t>(r())}); break;
      case 2: p.push_back({BPF_LD | BPF_W | BPF_ABS, 0, 0, u(64)}); break;
      default: p.push_back({BPF_ALU | BPF_RSH | BPF_K, 0, 0, 26}); break;
    }
  }
  p.push_back({BPF_RET | BPF_A, 0, 0, 0});
  return p;
}

TEST(BpfJit, LongProgramsConvergeAndAgree) {
  testing::engines();
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    Insns prog = long_jumps_program(seed);
    std::string err;
    auto ref = Program::load(prog, Engine::Switch, &err);
    auto jit = testing::load(prog, Engine::Jit, &err);
    ASSERT_TRUE(ref && jit) << err;
    const JitCode* jc = jit_code_of(jit->image());
    ASSERT_NE(jc, nullptr);
    EXPECT_GE(jc->passes, 2u);  // the first pass is all-near; a later one shortened jumps
    for (uint32_t len : {0u, 20u, 40u, 68u, 100u}) {
      auto pkt = exact_packet(len, seed + len);
      PacketView v = PacketView::linear(pkt.get(), len);
      ASSERT_EQ(jit->run(v), ref->run(v)) << "seed " << seed << " len " << len;
    }
  }
}

TEST(BpfJit, ConstantBlindingHidesImmediatesAndKeepsResults) {
  const uint32_t magic = 0x5eedf00du;
  Insns p = {{BPF_LD | BPF_IMM, 0, 0, magic}, {BPF_ALU | BPF_XOR | BPF_K, 0, 0, 0x01020304},
             {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, magic ^ 0x01020304}, {BPF_RET | BPF_K, 0, 0, 0x7357c0de},
             {BPF_RET | BPF_A, 0, 0, 0}};
  auto contains = [](const JitCode* jc, uint32_t v) {
    const auto* b = static_cast<const uint8_t*>(jc->mem);
    for (size_t i = 0; i + 4 <= jc->code_len; ++i)
      if (std::memcmp(b + i, &v, 4) == 0) return true;
    return false;
  };
  std::string err;
  JitOptions o = testing::strict_jit();
  auto plain = Program::load(p, Engine::Jit, o, &err);
  ASSERT_TRUE(plain) << err;
  EXPECT_TRUE(contains(jit_code_of(plain->image()), magic));
  o.blind = true;
  auto blinded = Program::load(p, Engine::Jit, o, &err);
  ASSERT_TRUE(blinded) << err;
  EXPECT_FALSE(contains(jit_code_of(blinded->image()), magic));
  EXPECT_FALSE(contains(jit_code_of(blinded->image()), 0x7357c0deu));
  EXPECT_EQ(plain->run(PacketView{}), 0x7357c0deu);
  EXPECT_EQ(blinded->run(PacketView{}), 0x7357c0deu);
  // Blinded images of real filters agree with the reference on every packet.
  PacketSet set = make_synthetic(2000, 7);
  for (const char* expr : {"net 192.168.2.0/24", "udp and port 53", "ip[8] / 3 = 21", "ip[8] % 7 = 1",
                           "tcp[tcpflags] & tcp-syn != 0", "ip6 or arp", "ip[2:2] * 3 > 200"}) {
    Insns prog;
    ASSERT_TRUE(compile_expression(expr, CompileOptions{}, &prog, &err)) << err;
    auto ref = Program::load(prog, Engine::Switch, &err);
    auto jb = Program::load(prog, Engine::Jit, o, &err);
    ASSERT_TRUE(ref && jb) << err;
    for (const PacketView& v : set.views()) ASSERT_EQ(jb->run(v), ref->run(v)) << expr;
  }
}

}  // namespace
}  // namespace pktpath::bpf
