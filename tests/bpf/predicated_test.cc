// The predicated forms of the JIT and the threaded engine (jit.h JitForm, program.h
// ThreadedForm): which programs get them, and hand-made programs whose blocks off the
// packet's path would change the result if their effects leaked — a scratch store, an
// X write, a load past the packet's end, a division by zero.
#include <pcap/pcap.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "bpf/blocks.h"
#include "bpf/check.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

// Every form of every engine, loaded strictly; each runs on v and must give `want`.
void expect_all_forms(const Insns& prog, const PacketView& v, uint32_t want, const char* what) {
  std::string err;
  auto sw = Program::load(prog, Engine::Switch, &err);
  ASSERT_TRUE(sw) << err;
  EXPECT_EQ(sw->run(v), want) << what << ": switch";
  for (ThreadedForm f : {ThreadedForm::Branching, ThreadedForm::Predicated}) {
    PreparedImage img;
    ASSERT_TRUE(prepare_threaded_form(prog, false, f, &img, &err)) << err;
    EXPECT_EQ(img.fn(img.image, v), want) << what << ": threaded form " << static_cast<int>(f);
  }
  for (JitForm f : {JitForm::Branching, JitForm::Predicated, JitForm::Split}) {
    JitOptions o = testing::strict_jit();
    o.form = f;
    auto j = Program::load(prog, Engine::Jit, o, &err);
    ASSERT_TRUE(j) << err;
    EXPECT_EQ(jit_code_of(j->image())->predicated, f != JitForm::Branching) << what;
    if (f == JitForm::Split) {
      EXPECT_GT(jit_code_of(j->image())->regions, 1u) << what;
    }
    EXPECT_EQ(j->run(v), want) << what << ": jit form " << static_cast<int>(f);
  }
}

// Random programs of libpcap's test shapes: blocks `[ldx 4*([k]&0xf);] [ld ABS|IND;] [and #m;] jcond #k` jumping forward
// to later blocks or to one of the `ret #k` at the end; packets of 0-80 bytes so that
// loads fail on and off the path, fragments for the slow path.
TEST(BpfPredicated, LibpcapShapedProgramsAgree) {
  std::mt19937_64 rng(20261202);
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  static const uint16_t kSz[] = {BPF_W, BPF_H, BPF_B};
  static const uint16_t kJ[] = {BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET};
  long pairs = 0, nonzero = 0, programs = 0, split = 0;
  for (int i = 0; i < 2000; ++i) {
    const size_t blocks = 1 + below(12), rets = 1 + below(3);
    std::vector<Insns> body(blocks);
    for (Insns& bl : body) {
      if (below(4) == 0) bl.push_back({BPF_LDX | BPF_B | BPF_MSH, 0, 0, below(4) ? 14 : below(90)});
      if (below(5) != 0) {
        const bool ind = below(3) == 0;
        uint32_t k = below(8) == 0 ? static_cast<uint32_t>(SKF_NET_OFF) + below(20) : below(90);
        if (ind) k = below(60);
        bl.push_back({static_cast<uint16_t>(BPF_LD | kSz[below(3)] | (ind ? BPF_IND : BPF_ABS)), 0, 0, k});
        if (below(2)) bl.push_back({BPF_ALU | BPF_AND | BPF_K, 0, 0, below(2) ? 0xff00u : static_cast<uint32_t>(rng())});
      }
      bl.push_back({static_cast<uint16_t>(BPF_JMP | kJ[below(4)] | BPF_K), 0, 0, below(3) ? below(256) : static_cast<uint32_t>(rng())});
    }
    Insns prog;
    std::vector<size_t> start(blocks + rets);
    size_t at = 0;
    for (size_t j = 0; j < blocks; ++j) start[j] = at, at += body[j].size();
    for (size_t j = 0; j < rets; ++j) start[blocks + j] = at + j;
    for (size_t j = 0; j < blocks; ++j) {
      Insn& jmp = body[j].back();
      const size_t pc = start[j] + body[j].size() - 1;
      jmp.jt = static_cast<uint8_t>(start[j + 1 + below(static_cast<uint32_t>(blocks + rets - j - 1))] - pc - 1);
      jmp.jf = static_cast<uint8_t>(start[j + 1 + below(static_cast<uint32_t>(blocks + rets - j - 1))] - pc - 1);
      prog.insert(prog.end(), body[j].begin(), body[j].end());
    }
    for (size_t j = 0; j < rets; ++j) prog.push_back({BPF_RET | BPF_K, 0, 0, j == 0 ? 0 : 100 + below(1000)});
    std::string err;
    ASSERT_TRUE(check_program(prog).ok) << check_program(prog).reason;
    ++programs;
    auto sw = Program::load(prog, Engine::Switch, &err);
    ASSERT_TRUE(sw) << err;
    PreparedImage tab;
    ASSERT_TRUE(prepare_threaded_form(prog, false, ThreadedForm::Predicated, &tab, &err)) << err;
    JitOptions o = testing::strict_jit();
    o.form = JitForm::Predicated;
    auto jp = Program::load(prog, Engine::Jit, o, &err);
    ASSERT_TRUE(jp) << err;
    ASSERT_TRUE(jit_code_of(jp->image())->predicated);
    o.form = JitForm::Split;
    auto js = Program::load(prog, Engine::Jit, o, &err);
    ASSERT_TRUE(js) << err;
    ASSERT_TRUE(jit_code_of(js->image())->predicated);
    split += jit_code_of(js->image())->regions > 1;
    for (int j = 0; j < 30; ++j) {
      std::vector<uint8_t> buf(below(81));
      for (auto& x : buf) x = below(4) ? static_cast<uint8_t>(below(4)) : static_cast<uint8_t>(rng());
      PacketView v = PacketView::linear(buf.data(), static_cast<uint32_t>(buf.size()));
      PacketFrag frags[1];
      if (buf.size() > 20 && below(4) == 0) {  // head + one fragment
        v.headlen = below(static_cast<uint32_t>(buf.size()));
        frags[0] = {buf.data() + v.headlen, static_cast<uint32_t>(buf.size()) - v.headlen};
        v.frags = frags;
        v.nr_frags = 1;
      }
      const uint32_t a = sw->run(v), b = tab.fn(tab.image, v), c = jp->run(v), d = js->run(v);
      ++pairs;
      nonzero += a != 0;
      ASSERT_TRUE(a == b && a == c && a == d) << "program " << i << " packet " << j << ": switch " << a
                                              << ", threaded predicated " << b << ", predicated jit " << c
                                              << ", split jit " << d;
    }
  }
  std::printf("libpcap-shaped programs: %ld program x packet pairs on %ld programs agree (%ld non-zero; %ld "
              "programs split into regions)\n", pairs, programs, nonzero, split);
  EXPECT_GT(split, programs / 2);
  EXPECT_GT(nonzero, pairs / 10);
  EXPECT_LT(nonzero, pairs - pairs / 10);
}

TEST(BpfPredicated, StoreOffThePathKeepsTheCell) {
  // byte 0 == 1: M[0] = 7; else M[0] = 5 (the later block, off the path for byte 0 == 1).
  const Insns prog = {
      {BPF_LD | BPF_B | BPF_ABS, 0, 0, 0},
      {BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 1},  // -> 5 or 2
      {BPF_LD | BPF_IMM, 0, 0, 5},
      {BPF_ST, 0, 0, 0},
      {BPF_JMP | BPF_JA, 0, 0, 3},  // -> 8
      {BPF_LD | BPF_IMM, 0, 0, 7},
      {BPF_ST, 0, 0, 0},
      {BPF_LDX | BPF_IMM, 0, 0, 9},  // falls through into 8
      {BPF_LD | BPF_IMM, 0, 0, 0},
      {BPF_LD | BPF_MEM, 0, 0, 0},
      {BPF_ALU | BPF_ADD | BPF_X, 0, 0, 0},
      {BPF_RET | BPF_A, 0, 0, 0},
  };
  uint8_t one[] = {1, 0}, zero[] = {0, 0};
  expect_all_forms(prog, PacketView::linear(one, 2), 7 + 9, "byte 1");
  expect_all_forms(prog, PacketView::linear(zero, 2), 5 + 0, "byte 0");
}

TEST(BpfPredicated, LoadPastTheEndEndsTheProgramOnlyOnThePath) {
  const Insns prog = {
      {BPF_LD | BPF_B | BPF_ABS, 0, 0, 0},
      {BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 1},  // -> 4 or 2
      {BPF_LD | BPF_W | BPF_ABS, 0, 0, 100},
      {BPF_RET | BPF_A, 0, 0, 0},
      {BPF_LDX | BPF_B | BPF_MSH, 0, 0, 1},
      {BPF_LD | BPF_H | BPF_IND, 0, 0, 0},  // X = 4 * (byte 1 & 15): past the end for 0x0f
      {BPF_RET | BPF_K, 0, 0, 9},
  };
  uint8_t on_path_fails[] = {0, 0x0f, 0, 0}, off_path_fails[] = {1, 0, 0, 0}, both_fail[] = {1, 0x0f, 0, 0};
  expect_all_forms(prog, PacketView::linear(on_path_fails, 4), 0, "ld [100] on the path");
  expect_all_forms(prog, PacketView::linear(off_path_fails, 4), 9, "ld [100] off the path");
  expect_all_forms(prog, PacketView::linear(both_fail, 4), 0, "ldh [x] on the path");
  expect_all_forms(prog, PacketView::linear(both_fail, 0), 0, "empty packet");
}

TEST(BpfPredicated, ThreadedDivisionByZeroOffThePathDoesNotEnd) {
  // The JIT's predicated form leaves division by X out (predicated_jit_ok); the threaded
  // one runs it and must not end the program for a block off the path.
  const Insns prog = {
      {BPF_LD | BPF_B | BPF_ABS, 0, 0, 0},
      {BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 1},  // -> 2 or 4
      {BPF_ALU | BPF_DIV | BPF_X, 0, 0, 0},  // X == 0
      {BPF_RET | BPF_A, 0, 0, 0},
      {BPF_RET | BPF_K, 0, 0, 3},
  };
  EXPECT_FALSE(predicated_jit_ok(prog));
  uint8_t zero[] = {0}, one[] = {1};
  std::string err;
  PreparedImage img;
  ASSERT_TRUE(prepare_threaded_form(prog, false, ThreadedForm::Predicated, &img, &err)) << err;
  EXPECT_EQ(img.fn(img.image, PacketView::linear(zero, 1)), 3u);
  EXPECT_EQ(img.fn(img.image, PacketView::linear(one, 1)), 0u);
}

TEST(BpfPredicated, BlocksOfAFilter) {
  // libpcap's `ip6 or arp`: ldh [12]; jeq #0x86dd jt 3 jf 2; jeq #0x806 jt 3 jf 4; ret; ret.
  const Insns prog = {
      {BPF_LD | BPF_H | BPF_ABS, 0, 0, 12},    {BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 0x86dd},
      {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0x806}, {BPF_RET | BPF_K, 0, 0, 262144},
      {BPF_RET | BPF_K, 0, 0, 0},
  };
  const Blocks b = find_blocks(prog);
  EXPECT_EQ(b.leader, (std::vector<uint8_t>{1, 0, 1, 1, 1}));
  EXPECT_EQ(b.first, (std::vector<uint32_t>{0, 0, 2, 3, 4}));
  EXPECT_TRUE(b.writes_a[0]);
  EXPECT_FALSE(b.writes_a[2]);
}

// The Auto rules: short forward-only programs run predicated on the JIT, long ones branch;
// the threaded engine branches unless asked, and a loop always branches.
TEST(BpfPredicated, AutoChoosesByShape) {
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 262144);
  ASSERT_NE(dead, nullptr);
  auto compile = [&](const char* expr) {
    bpf_program fp;
    EXPECT_EQ(pcap_compile(dead, &fp, expr, 1, PCAP_NETMASK_UNKNOWN), 0) << expr;
    Insns p(reinterpret_cast<const Insn*>(fp.bf_insns), reinterpret_cast<const Insn*>(fp.bf_insns) + fp.bf_len);
    pcap_freecode(&fp);
    return p;
  };
  const Insns net = compile("net 192.168.2.0/24");
  const Insns five = compile("tcp and (port 80 or port 443) and not net 10.0.0.0/8");
  const Insns chain = compile("ip6 protochain 17");
  pcap_close(dead);
  std::string err;
  for (const Insns* p : {&net, &five}) {
    auto j = Program::load(*p, Engine::Jit, Acceptance::Userland, &err);
    ASSERT_TRUE(j) << err;
    ASSERT_EQ(j->engine(), Engine::Jit);
    EXPECT_TRUE(jit_code_of(j->image())->predicated);
    EXPECT_FALSE(threaded_predicated(*p, ThreadedForm::Auto));
    EXPECT_TRUE(threaded_predicated(*p, ThreadedForm::Predicated));
  }
  // Auto splits the five-term filter after its ethertype tests (IPv4, IPv6, neither: three
  // regions), which saves five of its fifteen blocks' runs, and `net` (IPv4, ARP or RARP,
  // neither), which saves two; `ip` (one test) stays one straight line. Split asks for the
  // regions regardless.
  std::string why;
  auto five_auto = Program::load(five, Engine::Jit, Acceptance::Userland, &why);
  auto net_auto = Program::load(net, Engine::Jit, Acceptance::Userland, &why);
  JitOptions split;
  split.form = JitForm::Split;
  auto net_split = Program::load(net, Engine::Jit, Acceptance::Userland, split, &why);
  ASSERT_TRUE(five_auto && net_auto && net_split) << why;
  EXPECT_EQ(jit_code_of(five_auto->image())->regions, 3u);
  EXPECT_EQ(jit_code_of(net_auto->image())->regions, 3u);
  EXPECT_EQ(jit_code_of(net_split->image())->regions, 3u);
  Insns ip = {{BPF_LD | BPF_H | BPF_ABS, 0, 0, 12}, {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0x800},
              {BPF_RET | BPF_K, 0, 0, 262144}, {BPF_RET | BPF_K, 0, 0, 0}};
  auto ip_auto = Program::load(ip, Engine::Jit, Acceptance::Userland, &why);
  ASSERT_TRUE(ip_auto) << why;
  EXPECT_EQ(jit_code_of(ip_auto->image())->regions, 1u);
  EXPECT_FALSE(threaded_predicated(chain, ThreadedForm::Auto));  // a backward jump
  EXPECT_FALSE(threaded_predicated(chain, ThreadedForm::Predicated));
  Insns longer(kPredicatedMaxInsns, Insn{BPF_LD | BPF_IMM, 0, 0, 1});
  longer.push_back({BPF_RET | BPF_A, 0, 0, 0});
  auto j = Program::load(longer, Engine::Jit, &err);
  ASSERT_TRUE(j) << err;
  EXPECT_FALSE(jit_code_of(j->image())->predicated);
  JitOptions blind;
  blind.blind = true;
  auto jb = Program::load(net, Engine::Jit, blind, &err);
  ASSERT_TRUE(jb) << err;
  EXPECT_FALSE(jit_code_of(jb->image())->predicated);  // blinding keeps the branching form
}

}  // namespace
}  // namespace pktpath::bpf
