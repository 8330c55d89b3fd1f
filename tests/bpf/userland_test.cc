// The two acceptance modes (bpf/check.h): the kernel's checker and libpcap's userland
// rules, and how userland programs the kernel refuses run (bounded, scratch reads 0).
#include <gtest/gtest.h>

#include "bpf/check.h"
#include "bpf/parse.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

constexpr uint32_t back(int32_t k) { return static_cast<uint32_t>(k); }

TEST(BpfUserland, BackwardJumpOnlyInUserland) {
  // ldb [0]; jeq #7 -> ret #1, else ja back to the load (loops while byte 0 != 7)
  Insns p = {{BPF_LD | BPF_B | BPF_ABS, 0, 0, 0},
             {BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 7},
             {BPF_JMP | BPF_JA, 0, 0, back(-3)},
             {BPF_RET | BPF_K, 0, 0, 1}};
  CheckResult k = check_program(p, Acceptance::Kernel);
  ASSERT_FALSE(k.ok);
  EXPECT_EQ(k.index, 2);
  EXPECT_NE(k.reason.find("backward jump"), std::string::npos) << k.reason;
  EXPECT_TRUE(check_program(p, Acceptance::Userland).ok);
  EXPECT_TRUE(has_backward_jump(p));
}

TEST(BpfUserland, UserlandRefusesWhatLibpcapRefuses) {
  auto rejects = [](Insns p, const char* what) {
    CheckResult r = check_program(p, Acceptance::Userland);
    EXPECT_FALSE(r.ok) << what;
    return r.reason;
  };
  // A jump to itself, a backward jump before the start, a forward one past the end.
  EXPECT_NE(rejects({{BPF_JMP | BPF_JA, 0, 0, back(-1)}, {BPF_RET | BPF_K, 0, 0, 0}}, "ja -1").find("itself"),
            std::string::npos);
  rejects({{BPF_LD | BPF_IMM, 0, 0, 0}, {BPF_JMP | BPF_JA, 0, 0, back(-3)}, {BPF_RET | BPF_K, 0, 0, 0}},
          "before the start");
  rejects({{BPF_JMP | BPF_JA, 0, 0, 1}, {BPF_RET | BPF_K, 0, 0, 0}}, "past the end");
  rejects({{BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0}, {BPF_RET | BPF_K, 0, 0, 0}}, "jt past the end");
  rejects({{BPF_ALU | BPF_DIV | BPF_K, 0, 0, 0}, {BPF_RET | BPF_A, 0, 0, 0}}, "div by 0");
  rejects({{BPF_ST, 0, 0, 16}, {BPF_RET | BPF_A, 0, 0, 0}}, "M[16]");
  rejects({{BPF_LD | BPF_IMM, 0, 0, 0}}, "no RET at the end");
  rejects({{0xff, 0, 0, 0}, {BPF_RET | BPF_A, 0, 0, 0}}, "bad opcode");
  rejects({}, "empty");
}

TEST(BpfUserland, ScratchReadBeforeWriteReadsZero) {
  Insns p = {{BPF_LD | BPF_MEM, 0, 0, 3}, {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 5}, {BPF_RET | BPF_A, 0, 0, 0}};
  EXPECT_FALSE(check_program(p, Acceptance::Kernel).ok);
  ASSERT_TRUE(check_program(p, Acceptance::Userland).ok);
  for (Engine e : testing::engines()) {
    std::string err;
    auto prog = testing::load(p, e, &err, Acceptance::Userland);
    ASSERT_TRUE(prog) << err;
    EXPECT_TRUE(prog->bounded());
    EXPECT_EQ(prog->run(PacketView{}), 5u) << engine_name(e);
  }
}

// The JIT's frame is the caller's stack: a program run before, from the same frame, leaves
// its M[3] exactly where the next one's M[3] lies. The bounded program must still read 0.
TEST(BpfUserland, JitScratchStartsZeroedOnADirtyStack) {
  const Insns writer = {{BPF_LD | BPF_IMM, 0, 0, 0x5a5a5a5a}, {BPF_ST, 0, 0, 3}, {BPF_RET | BPF_A, 0, 0, 0}};
  const Insns reader = {{BPF_LD | BPF_MEM, 0, 0, 3}, {BPF_RET | BPF_A, 0, 0, 0}};
  std::string err;
  auto w = testing::load(writer, Engine::Jit, &err);
  auto r = testing::load(reader, Engine::Jit, &err, Acceptance::Userland);
  ASSERT_TRUE(w && r) << err;
  ASSERT_TRUE(r->bounded());
  ASSERT_EQ(r->engine(), Engine::Jit);
  const PacketView v{};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(w->image().fn(w->image().image, v), 0x5a5a5a5au);
    EXPECT_EQ(r->image().fn(r->image().image, v), 0u);
  }
}

// Which cells a bounded run must clear: those some path reads before writing, loops included.
TEST(BpfUserland, ScratchReadUnsetFollowsEveryPath) {
  const Insn ret_a{BPF_RET | BPF_A, 0, 0, 0};
  EXPECT_EQ(scratch_read_unset(Insns{{BPF_ST, 0, 0, 3}, {BPF_LD | BPF_MEM, 0, 0, 3}, ret_a}), 0u);
  EXPECT_EQ(scratch_read_unset(Insns{{BPF_LDX | BPF_MEM, 0, 0, 3}, ret_a}), 1u << 3);
  // The store on the true edge only: the false edge reads M[2] unwritten.
  const Insns one_edge = {{BPF_LD | BPF_B | BPF_ABS, 0, 0, 0}, {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 1},
                          {BPF_ST, 0, 0, 2}, {BPF_LD | BPF_MEM, 0, 0, 2}, ret_a};
  EXPECT_EQ(scratch_read_unset(one_edge), 1u << 2);
  // A loop reading M[1] that was stored before it, and one whose first pass reads M[4] first.
  EXPECT_EQ(scratch_read_unset(Insns{{BPF_LD | BPF_IMM, 0, 0, 0}, {BPF_ST, 0, 0, 1}, {BPF_LD | BPF_MEM, 0, 0, 1},
                                {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1}, {BPF_ST, 0, 0, 1},
                                {BPF_JMP | BPF_JGT | BPF_K, 1, 0, 10}, {BPF_JMP | BPF_JA, 0, 0, back(-5)}, ret_a}),
            0u);
  EXPECT_EQ(scratch_read_unset(Insns{{BPF_LD | BPF_MEM, 0, 0, 4}, {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1}, {BPF_ST, 0, 0, 4},
                                {BPF_JMP | BPF_JGT | BPF_K, 1, 0, 10}, {BPF_JMP | BPF_JA, 0, 0, back(-5)}, ret_a}),
            1u << 4);
  // An unreachable read does not count.
  EXPECT_EQ(scratch_read_unset(Insns{{BPF_RET | BPF_K, 0, 0, 1}, {BPF_LD | BPF_MEM, 0, 0, 5}, ret_a}), 0u);
  Insns chain;
  std::string err;
  ASSERT_TRUE(compile_expression("ip6 protochain 17", CompileOptions{}, &chain, &err)) << err;
  EXPECT_EQ(scratch_read_unset(chain), 0u);  // every M[0] read follows its store

  // Run bounded (an untaken backward jump makes the kernel refuse it), after a program
  // that leaves M[2] dirty on the JIT's stack: the edge without the store reads 0.
  Insns p = one_edge;
  p.back() = {BPF_JMP | BPF_JA, 0, 0, 1};
  p.push_back({BPF_JMP | BPF_JA, 0, 0, back(-2)});  // never taken
  p.push_back(ret_a);
  ASSERT_TRUE(check_program(p, Acceptance::Userland).ok) << check_program(p, Acceptance::Userland).reason;
  const Insns writer = {{BPF_LD | BPF_IMM, 0, 0, 0x5a5a5a5a}, {BPF_ST, 0, 0, 2}, {BPF_RET | BPF_A, 0, 0, 0}};
  auto w = testing::load(writer, Engine::Jit, &err);
  ASSERT_TRUE(w) << err;
  for (Engine e : testing::engines()) {
    auto prog = testing::load(p, e, &err, Acceptance::Userland);
    ASSERT_TRUE(prog) << err;
    ASSERT_TRUE(prog->bounded());
    const uint8_t stored[1] = {1}, not_stored[1] = {0};
    w->image().fn(w->image().image, PacketView{});
    EXPECT_EQ(prog->run(PacketView::linear(stored, 1)), 1u) << engine_name(e);
    w->image().fn(w->image().image, PacketView{});
    EXPECT_EQ(prog->run(PacketView::linear(not_stored, 1)), 0u) << engine_name(e);
  }
}

TEST(BpfUserland, KernelValidProgramsRunUnboundedInEitherMode) {
  Insns p;
  std::string err;
  ASSERT_TRUE(compile_expression("net 192.168.2.0/24", CompileOptions{}, &p, &err)) << err;
  auto prog = testing::load(p, Engine::Jit, &err, Acceptance::Userland);
  ASSERT_TRUE(prog) << err;
  EXPECT_FALSE(prog->bounded());
  EXPECT_EQ(prog->engine(), Engine::Jit);
  EXPECT_EQ(prog->acceptance(), Acceptance::Userland);
}

TEST(BpfUserland, AnInfiniteLoopEndsAtTheBoundOnEveryEngine) {
  // ld #1; L: add #1; ja L  — never returns on libpcap's bpf_filter.
  Insns p = {{BPF_LD | BPF_IMM, 0, 0, 1}, {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1}, {BPF_JMP | BPF_JA, 0, 0, back(-2)},
             {BPF_RET | BPF_A, 0, 0, 0}};
  for (Engine e : testing::engines()) {
    std::string err;
    auto prog = testing::load(p, e, &err, Acceptance::Userland);
    ASSERT_TRUE(prog) << err;
    EXPECT_EQ(prog->engine(), e);  // the JIT compiles it itself (strict: no fallback)
    EXPECT_EQ(prog->run(PacketView{}), 0u) << engine_name(e);
  }
  EXPECT_EQ(run_userland(p, PacketView{}), 0u);
}

// Unbounded, the JIT refuses a backward jump (only Program::load's bounded path may hand
// one to it); when the JIT fails on a bounded program, the fallback runs it bounded on the
// threaded engine and says why.
TEST(BpfUserland, JitRefusesUnboundedLoopsAndFallsBackBounded) {
  Insns p = {{BPF_LD | BPF_IMM, 0, 0, 1}, {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1}, {BPF_JMP | BPF_JA, 0, 0, back(-2)},
             {BPF_RET | BPF_A, 0, 0, 0}};
  PreparedImage img;
  std::string err;
  EXPECT_FALSE(prepare_jit_with(p, JitOptions{}, &img, &err));
  EXPECT_NE(err.find("backward jump"), std::string::npos) << err;
  ASSERT_TRUE(prepare_jit_bounded(p, JitOptions{}, &img, &err)) << err;
  EXPECT_EQ(img.fn(img.image, PacketView{}), 0u);
  JitOptions o;
  o.force_failure = true;
  auto prog = Program::load(p, Engine::Jit, Acceptance::Userland, o, &err);
  ASSERT_TRUE(prog) << err;
  EXPECT_EQ(prog->engine(), Engine::Threaded);
  EXPECT_TRUE(prog->bounded());
  EXPECT_NE(prog->jit_fallback_reason().find("jit:"), std::string::npos);
  EXPECT_EQ(prog->run(PacketView{}), 0u);
}

TEST(BpfUserland, EnginesStopAtTheSameJump) {
  // Counts iterations in M[0] and returns the count once it reaches `limit`: below the
  // bound it returns the limit; above it every engine returns 0.
  auto counter = [](uint32_t limit) {
    return Insns{{BPF_LD | BPF_IMM, 0, 0, 0},    {BPF_ST, 0, 0, 0},
                 {BPF_LD | BPF_MEM, 0, 0, 0},    {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1},
                 {BPF_ST, 0, 0, 0},              {BPF_JMP | BPF_JGE | BPF_K, 1, 0, limit},
                 {BPF_JMP | BPF_JA, 0, 0, back(-5)}, {BPF_RET | BPF_A, 0, 0, 0}};
  };
  // 8 instructions: each backward jump charges 8; the run ends once charges pass 2^24.
  const uint32_t last_allowed = static_cast<uint32_t>(kUserlandBound / 8);  // jumps that fit
  JitOptions blind = testing::strict_jit();
  blind.blind = true;
  for (int variant = 0; variant < 4; ++variant) {
    const Engine e = variant < 3 ? testing::engines()[variant] : Engine::Jit;
    const JitOptions jo = variant < 3 ? testing::strict_jit() : blind;
    std::string err;
    auto ok = Program::load(counter(last_allowed + 1), e, Acceptance::Userland, jo, &err);
    auto over = Program::load(counter(last_allowed + 2), e, Acceptance::Userland, jo, &err);
    ASSERT_TRUE(ok && over) << err;
    ASSERT_EQ(ok->engine(), e);
    EXPECT_EQ(ok->run(PacketView{}), last_allowed + 1) << engine_name(e) << " variant " << variant;
    EXPECT_EQ(over->run(PacketView{}), 0u) << engine_name(e) << " variant " << variant;
  }
}

// The same with a slow-path helper call inside the loop (a load below the packet, through
// SKF_LL_OFF, always calls load_packet on the JIT): the JIT's budget register survives it.
TEST(BpfUserland, BoundHoldsAcrossHelperCalls) {
  auto counter = [](uint32_t limit) {
    return Insns{{BPF_LD | BPF_IMM, 0, 0, 0},         {BPF_ST, 0, 0, 0},
                 {BPF_LD | BPF_B | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_LL_OFF)},
                 {BPF_LD | BPF_MEM, 0, 0, 0},         {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1},
                 {BPF_ST, 0, 0, 0},                   {BPF_JMP | BPF_JGE | BPF_K, 1, 0, limit},
                 {BPF_JMP | BPF_JA, 0, 0, back(-6)},  {BPF_RET | BPF_A, 0, 0, 0}};
  };
  const uint8_t pkt[20] = {7};
  const PacketView v = PacketView::linear(pkt, sizeof pkt);
  const uint32_t last_allowed = static_cast<uint32_t>(kUserlandBound / 9);
  for (Engine e : testing::engines()) {
    std::string err;
    auto ok = testing::load(counter(last_allowed + 1), e, &err, Acceptance::Userland);
    auto over = testing::load(counter(last_allowed + 2), e, &err, Acceptance::Userland);
    ASSERT_TRUE(ok && over) << err;
    EXPECT_EQ(ok->run(v), last_allowed + 1) << engine_name(e);
    EXPECT_EQ(over->run(v), 0u) << engine_name(e);
  }
}

TEST(BpfUserland, ProtochainRunsInUserlandAndMatchesLibpcap) {
  Insns p;
  std::string err;
  ASSERT_TRUE(compile_expression("ip6 protochain 17", CompileOptions{}, &p, &err)) << err;
  ASSERT_TRUE(has_backward_jump(p));
  EXPECT_FALSE(check_program(p, Acceptance::Kernel).ok);
  // IPv6, a hop-by-hop header, then UDP.
  uint8_t f[14 + 40 + 8 + 8] = {};
  f[12] = 0x86, f[13] = 0xdd;
  f[14] = 0x60;
  f[14 + 6] = 0;        // next header: hop-by-hop
  f[14 + 40] = 17;      // hop-by-hop's next header: UDP
  f[14 + 40 + 1] = 0;   // 8 bytes long
  for (Engine e : testing::engines()) {
    auto prog = testing::load(p, e, &err, Acceptance::Userland);
    ASSERT_TRUE(prog) << err;
    EXPECT_EQ(prog->engine(), e);
    const uint32_t want = testing::pcap_run(p, f, sizeof f, sizeof f);
    EXPECT_NE(want, 0u);
    EXPECT_EQ(prog->run(PacketView::linear(f, sizeof f)), want) << engine_name(e);
    f[14 + 40] = 6;  // TCP instead: no match
    EXPECT_EQ(prog->run(PacketView::linear(f, sizeof f)), testing::pcap_run(p, f, sizeof f, sizeof f));
    f[14 + 40] = 17;
  }
}

}  // namespace
}  // namespace pktpath::bpf
