// The threaded engine's superinstructions (program.h threaded_shapes): JEQ-or slots,
// load-and-test pairs and tests that return by a select must run exactly as the
// instructions they replace — on libpcap's own programs for `host`, `net` and `port`, and
// on random programs built to have those shapes, with jumps landing inside them, second
// loads past the packet's end and `ret a` reading the A a pair leaves.
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "bpf/check.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

Insns compile(const char* expr) {
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 262144);
  bpf_program fp;
  EXPECT_EQ(pcap_compile(dead, &fp, expr, 1, PCAP_NETMASK_UNKNOWN), 0) << expr << ": " << pcap_geterr(dead);
  Insns prog(reinterpret_cast<const Insn*>(fp.bf_insns), reinterpret_cast<const Insn*>(fp.bf_insns) + fp.bf_len);
  pcap_freecode(&fp);
  pcap_close(dead);
  return prog;
}

// The returns that end a random program: `ret #0`, then `ret #k`, the last sometimes `ret a`.
template <typename Below>
void push_returns(Insns& prog, size_t rets, Below& below) {
  for (size_t j = 0; j < rets; ++j) {
    if (j == rets - 1 && below(2)) prog.push_back({BPF_RET | BPF_A, 0, 0, 0});
    else prog.push_back({BPF_RET | BPF_K, 0, 0, j == 0 ? 0 : 100 + below(1000)});
  }
}

void add_shapes(ThreadedShapes& seen, const ThreadedShapes& s) {
  seen.jeq_or += s.jeq_or, seen.pairs += s.pairs, seen.pairs_or += s.pairs_or, seen.returning += s.returning;
  seen.guarded += s.guarded, seen.headers += s.headers, seen.ext_steps += s.ext_steps;
}

// libpcap's code for these expressions has each shape where the comment says.
TEST(BpfThreadedShapes, LibpcapProgramsHaveThem) {
  const ThreadedShapes net = threaded_shapes(compile("net 192.168.2.0/24"));
  EXPECT_GE(net.pairs, 2u);      // source or destination, for IPv4 and for ARP
  EXPECT_GE(net.returning, 2u);  // each pair's second test picks between the two returns
  EXPECT_GE(net.jeq_or, 1u);     // ARP or RARP
  const ThreadedShapes port = threaded_shapes(compile("tcp and (port 80 or port 443)"));
  EXPECT_GE(port.jeq_or, 4u);    // 80 or 443, on each port of IPv4 and of IPv6
  EXPECT_GE(port.pairs_or, 2u);  // either port, for IPv4 and for IPv6
  EXPECT_GE(port.guarded, 3u);   // tcp and not a fragment (IPv4), the IPv4 ports
  const ThreadedShapes five = threaded_shapes(compile("tcp and (port 80 or port 443) and not net 10.0.0.0/8"));
  EXPECT_GE(five.guarded, 4u);   // IPv4: tcp, not a fragment, the ports; IPv6: tcp
  EXPECT_EQ(five.headers, 1u);   // IPv4: tcp, not a fragment, the header length
  EXPECT_GE(threaded_shapes(compile("port 80")).headers, 1u);  // not a fragment (the protocol is a jeq list)
  const ThreadedShapes chain = threaded_shapes(compile("ip6 protochain 17"));
  EXPECT_GE(chain.jeq_or, 2u);   // the extension header list
  EXPECT_EQ(chain.guarded, 0u);  // it loops: no guarded test
  EXPECT_EQ(chain.ext_steps, 1u);  // the step over an IPv6 extension header
  EXPECT_EQ(threaded_shapes(compile("ip protochain 17")).ext_steps, 0u);  // IPv4's step differs
  const ThreadedShapes none = threaded_shapes(compile("ip and len > 100"));
  EXPECT_EQ(none.jeq_or + none.pairs, 0u);
}

// libpcap's programs on the synthetic set: the threaded engine as libpcap.
TEST(BpfThreadedShapes, LibpcapProgramsAgree) {
  const PacketSet set = make_synthetic(4000, 20261204);
  for (const char* expr :
       {"net 192.168.2.0/24", "host 10.0.0.1", "port 80", "tcp and (port 80 or port 443) and not net 10.0.0.0/8",
        "src or dst port 53 or port 123", "tcp and (port 80 or port 443)", "ether host 00:11:22:33:44:55", "ip6 protochain 17",
        "arp or rarp or icmp", "portrange 1000-2000 and host 192.168.2.1"}) {
    const Insns prog = compile(expr);
    std::string err;
    auto th = testing::load(prog, Engine::Threaded, &err, Acceptance::Userland);
    ASSERT_TRUE(th) << expr << ": " << err;
    for (size_t i = 0; i < set.size(); ++i) {
      const uint8_t* d = set.bytes(i);
      const uint32_t len = set.caplen(i);
      ASSERT_EQ(th->run_linear(d, len, len), testing::pcap_run(prog, d, len, len)) << expr << ", packet " << i;
    }
  }
}

// Random programs of blocks `[ld ABS|IND [; and #m]] [jeq #k;] jcond #k`, where a block's false edge
// often falls into a next block of the same shape with the same true target, tests are
// often `jeq` on a few constants, and returns are `ret #k` or `ret a`; every engine form
// against the switch interpreter on short packets (second loads fail) and fragments.
TEST(BpfThreadedShapes, ShapedProgramsAgree) {
  std::mt19937_64 rng(20261204);
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  static const uint16_t kSz[] = {BPF_W, BPF_H, BPF_B};
  static const uint16_t kJ[] = {BPF_JEQ, BPF_JEQ, BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET};
  ThreadedShapes seen;
  long runs = 0, nonzero = 0;
  for (int i = 0; i < 6000; ++i) {
    const size_t blocks = 1 + below(10), rets = 2 + below(2);
    std::vector<Insns> body(blocks);
    uint16_t shape = 0;
    uint32_t mask = 0;
    for (size_t j = 0; j < blocks; ++j) {
      Insns& bl = body[j];
      const bool same = j > 0 && below(2);  // the previous block's shape again
      if (!same) {
        const bool ind = below(3) == 0;
        shape = below(5) ? static_cast<uint16_t>(BPF_LD | kSz[below(3)] | (ind ? BPF_IND : BPF_ABS)) : 0;
        mask = below(2) && !ind ? (below(2) ? 0xff00u : static_cast<uint32_t>(rng())) : 0;
      }
      if (j == 0 || below(6) == 0) bl.push_back({BPF_LDX | BPF_B | BPF_MSH, 0, 0, below(4) ? 0 : below(40)});
      const bool lone = same && below(3) == 0;  // a test of the A the previous block left
      if (shape != 0 && !lone) {
        bl.push_back({shape, 0, 0, below(40)});
        if (mask != 0) bl.push_back({BPF_ALU | BPF_AND | BPF_K, 0, 0, mask});
      }
      // Two `jeq` on the same true target (`port 80 or port 443`) end a third of the blocks.
      if (below(3) == 0) bl.push_back({BPF_JMP | BPF_JEQ | BPF_K, 0, 0, below(4)});
      bl.push_back({static_cast<uint16_t>(BPF_JMP | kJ[below(6)] | BPF_K), 0, 0, below(4) ? below(4) : below(256)});
    }
    std::vector<size_t> start(blocks + rets);
    size_t at = 0;
    for (size_t j = 0; j < blocks; ++j) start[j] = at, at += body[j].size();
    for (size_t j = 0; j < rets; ++j) start[blocks + j] = at + j;
    auto pick = [&](size_t j) { return start[j + 1 + below(static_cast<uint32_t>(blocks + rets - j - 1))]; };
    std::vector<size_t> t(blocks), f(blocks);
    for (size_t j = 0; j < blocks; ++j) t[j] = pick(j), f[j] = pick(j);
    for (size_t j = 0; j + 1 < blocks; ++j)
      if (below(2)) f[j] = start[j + 1], t[j + 1] = t[j] > start[j + 1] ? t[j] : t[j + 1];
    Insns prog;
    for (size_t j = 0; j < blocks; ++j) {
      Insn& jmp = body[j].back();
      const size_t pc = start[j] + body[j].size() - 1;
      jmp.jt = static_cast<uint8_t>(t[j] - pc - 1);
      jmp.jf = static_cast<uint8_t>(f[j] - pc - 1);
      if (body[j].size() > 1 && bpf_class(body[j][body[j].size() - 2].code) == BPF_JMP) {
        body[j][body[j].size() - 2].jt = static_cast<uint8_t>(t[j] - pc);  // jf 0: on to the last jump
      }
      prog.insert(prog.end(), body[j].begin(), body[j].end());
    }
    push_returns(prog, rets, below);
    ASSERT_TRUE(check_program(prog).ok) << check_program(prog).reason;
    add_shapes(seen, threaded_shapes(prog));
    std::string err;
    auto sw = Program::load(prog, Engine::Switch, &err);
    ASSERT_TRUE(sw) << err;
    auto th = Program::load(prog, Engine::Threaded, &err);
    ASSERT_TRUE(th) << err;
    auto jit = testing::load(prog, Engine::Jit, &err);
    ASSERT_TRUE(jit) << err;
    for (int k = 0; k < 40; ++k) {
      std::vector<uint8_t> buf(below(61));
      for (auto& x : buf) x = below(3) ? static_cast<uint8_t>(below(4)) : static_cast<uint8_t>(rng());
      PacketView v = PacketView::linear(buf.data(), static_cast<uint32_t>(buf.size()));
      PacketFrag frags[1];
      if (buf.size() > 20 && below(4) == 0) {
        v.headlen = below(static_cast<uint32_t>(buf.size()));
        frags[0] = {buf.data() + v.headlen, static_cast<uint32_t>(buf.size()) - v.headlen};
        v.frags = frags;
        v.nr_frags = 1;
      }
      const uint32_t want = sw->run(v);
      ++runs;
      nonzero += want != 0;
      ASSERT_EQ(th->run(v), want) << "program " << i << " packet " << k;
      ASSERT_EQ(jit->run(v), want) << "program " << i << " packet " << k;
      if (v.nr_frags == 0) {
        ASSERT_EQ(th->run_linear(buf.data(), v.wire_len, v.headlen), want) << "program " << i << " packet " << k;
      }
    }
  }
  std::printf("shaped programs: %ld runs agree (%ld non-zero); %u JEQ-or slots, %u pairs (%u JEQ-or), %u "
              "returning, %u guarded\n", runs, nonzero, seen.jeq_or, seen.pairs, seen.pairs_or, seen.returning,
              seen.guarded);
  EXPECT_GT(seen.jeq_or, 400u);
  EXPECT_GT(seen.pairs, 400u);
  EXPECT_GT(seen.pairs_or, 20u);
  EXPECT_GT(seen.returning, 400u);
  EXPECT_GT(seen.guarded, 400u);
  EXPECT_GT(nonzero, runs / 10);
}

// The shapes again, laid out with filler between blocks (up to 200 instructions) and
// between a block's two `jeq`, so that a JEQ-or reads its second `jeq` through jf, a
// JEQ-or pair's second group lies far from the first and a pair's targets lie more than
// 255 slots from its load slot; and with targets anywhere within a jump's reach — onto a
// group's jump or mask slot, a second `jeq`, the filler. Run bounded (userland) too.
TEST(BpfThreadedShapes, JumpsIntoShapesAndFarTargetsAgree) {
  std::mt19937_64 rng(20261206);
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  static const uint16_t kSz[] = {BPF_W, BPF_H, BPF_B};
  static const uint16_t kJ[] = {BPF_JEQ, BPF_JEQ, BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET};
  static const uint16_t kFiller[] = {BPF_ALU | BPF_ADD | BPF_K, BPF_LD | BPF_IMM, BPF_LDX | BPF_IMM};
  ThreadedShapes seen;
  long runs = 0, nonzero = 0, far = 0;
  for (int i = 0; i < 2500; ++i) {
    const size_t blocks = 1 + below(8), rets = 2 + below(2);
    Insns prog;
    std::vector<size_t> start(blocks), first_jeq(blocks, SIZE_MAX), last(blocks);
    uint16_t shape = 0;
    uint32_t mask = 0;
    for (size_t j = 0; j < blocks; ++j) {
      const uint32_t filler = below(4);  // none half the time, else a little or a lot
      for (size_t n = filler == 0 ? 30 + below(170) : filler == 1 ? 1 + below(2) : 0; n; --n)
        prog.push_back({kFiller[below(3)], 0, 0, below(4)});
      start[j] = prog.size();
      if (j == 0 || below(3) == 0) {
        const bool ind = below(3) == 0;
        shape = below(6) ? static_cast<uint16_t>(BPF_LD | kSz[below(3)] | (ind ? BPF_IND : BPF_ABS)) : 0;
        mask = below(2) && !ind ? (below(2) ? 0xff00u : static_cast<uint32_t>(rng())) : 0;
      }
      if (below(6) == 0) prog.push_back({BPF_LDX | BPF_B | BPF_MSH, 0, 0, below(4) ? 0 : below(40)});
      if (shape != 0 && below(4) != 0) {
        prog.push_back({shape, 0, 0, below(40)});
        if (mask != 0) prog.push_back({BPF_ALU | BPF_AND | BPF_K, 0, 0, mask});
      }
      if (below(2) == 0) {
        first_jeq[j] = prog.size();
        prog.push_back({BPF_JMP | BPF_JEQ | BPF_K, 0, 0, below(4)});
        for (size_t n = below(3) == 0 ? 1 + below(3) : 0; n; --n) prog.push_back({kFiller[below(3)], 0, 0, below(4)});
      }
      last[j] = prog.size();
      prog.push_back({static_cast<uint16_t>(BPF_JMP | kJ[below(6)] | BPF_K), 0, 0, below(4) ? below(4) : below(256)});
    }
    const size_t body = prog.size();
    push_returns(prog, rets, below);
    const size_t n = prog.size();
    // A target after pc within `reach`: anywhere a third of the time, else a block start
    // or a return; the next instruction where none is in reach.
    auto pick = [&](size_t pc, size_t reach) {
      const size_t hi = std::min(n - 1, pc + reach);
      if (pc >= hi) return SIZE_MAX;
      if (below(3) == 0) return pc + 1 + below(static_cast<uint32_t>(hi - pc));
      std::vector<size_t> c;
      for (size_t j = 0; j < blocks; ++j)
        if (start[j] > pc && start[j] <= hi) c.push_back(start[j]);
      for (size_t r = body; r < n; ++r)
        if (r <= hi) c.push_back(r);
      return c.empty() ? pc + 1 : c[below(static_cast<uint32_t>(c.size()))];
    };
    size_t carried = SIZE_MAX;  // a true target the previous block passed on with its false edge
    for (size_t j = 0; j < blocks; ++j) {
      const size_t pc = last[j];
      const size_t lo = first_jeq[j] != SIZE_MAX ? first_jeq[j] : pc;
      const size_t reach = 256 - (pc - lo);  // the first `jeq` reaches the same true target
      const bool link = j + 1 < blocks && start[j + 1] <= pc + 256 && below(2);  // false edge into the next block
      size_t f = link ? start[j + 1] : pick(pc, 256);
      size_t t = carried != SIZE_MAX && carried > pc && carried <= lo + 256 ? carried : SIZE_MAX;
      if (t == SIZE_MAX && link && last[j + 1] + 1 < lo + 256)  // a true target past the next block, to pass on
        t = pick(last[j + 1], lo + 256 - last[j + 1]);
      if (t == SIZE_MAX) t = pick(pc, reach);
      carried = link ? t : SIZE_MAX;
      prog[pc].jt = static_cast<uint8_t>(t - pc - 1);
      prog[pc].jf = static_cast<uint8_t>(f - pc - 1);
      if (lo != pc) {
        prog[lo].jt = static_cast<uint8_t>(t - lo - 1);
        prog[lo].jf = static_cast<uint8_t>(pc - lo - 1);  // over the filler, onto the last jump
      }
      far += t > pc + 128 || f > pc + 128;
    }
    ASSERT_TRUE(check_program(prog).ok) << check_program(prog).reason;
    add_shapes(seen, threaded_shapes(prog));
    std::string err;
    auto sw = Program::load(prog, Engine::Switch, &err);
    ASSERT_TRUE(sw) << err;
    auto th = Program::load(prog, Engine::Threaded, &err);
    ASSERT_TRUE(th) << err;
    auto thb = testing::load(prog, Engine::Threaded, &err, Acceptance::Userland);
    ASSERT_TRUE(thb) << err;
    auto jit = testing::load(prog, Engine::Jit, &err);
    ASSERT_TRUE(jit) << err;
    for (int k = 0; k < 30; ++k) {
      std::vector<uint8_t> buf(below(61));
      for (auto& x : buf) x = below(3) ? static_cast<uint8_t>(below(4)) : static_cast<uint8_t>(rng());
      const uint32_t len = static_cast<uint32_t>(buf.size());
      const uint32_t want = sw->run(PacketView::linear(buf.data(), len));
      ++runs;
      nonzero += want != 0;
      ASSERT_EQ(th->run(PacketView::linear(buf.data(), len)), want) << "program " << i << " packet " << k;
      ASSERT_EQ(th->run_linear(buf.data(), len, len), want) << "program " << i << " packet " << k;
      ASSERT_EQ(thb->run_linear(buf.data(), len, len), want) << "program " << i << " packet " << k;
      ASSERT_EQ(jit->run_linear(buf.data(), len, len), want) << "program " << i << " packet " << k;
    }
  }
  std::printf("laid-out programs: %ld runs agree (%ld non-zero); %u JEQ-or slots, %u pairs (%u JEQ-or), %u "
              "returning; %ld jumps over 128 slots\n", runs, nonzero, seen.jeq_or, seen.pairs, seen.pairs_or,
              seen.returning, far);
  EXPECT_GT(seen.jeq_or, 3000u);
  EXPECT_GT(seen.pairs, 80u);
  EXPECT_GT(seen.pairs_or, 40u);
  EXPECT_GT(far, 1000);
  EXPECT_GT(nonzero, runs / 10);
}

// A JEQ-or pair (`port 80 or port 443` on two offsets) whose second group lies 200 slots
// after the first and whose false target 200 after that: the pair's targets, kept in its
// load slot, are 230 and 406 slots away (beyond 8 bits).
TEST(BpfThreadedShapes, PairTargetsFarFromTheLoadSlot) {
  const Insn filler{BPF_RET | BPF_K, 0, 0, 99};  // no path reaches it
  Insns prog(407, filler);
  prog[0] = {BPF_LD | BPF_H | BPF_ABS, 0, 0, 12};
  prog[1] = {BPF_JMP | BPF_JEQ | BPF_K, 228, 0, 80};     // true: 230
  prog[2] = {BPF_JMP | BPF_JEQ | BPF_K, 227, 200, 443};  // false: 203, the second group
  prog[203] = {BPF_LD | BPF_H | BPF_ABS, 0, 0, 14};
  prog[204] = {BPF_JMP | BPF_JEQ | BPF_K, 25, 0, 80};
  prog[205] = {BPF_JMP | BPF_JEQ | BPF_K, 24, 200, 443};  // false: 406
  prog[230] = {BPF_RET | BPF_A, 0, 0, 0};
  prog[406] = {BPF_RET | BPF_K, 0, 0, 7};
  ASSERT_TRUE(check_program(prog).ok) << check_program(prog).reason;
  EXPECT_EQ(threaded_shapes(prog).pairs_or, 1u);
  std::string err;
  for (const Acceptance mode : {Acceptance::Kernel, Acceptance::Userland}) {
    auto th = testing::load(prog, Engine::Threaded, &err, mode);
    ASSERT_TRUE(th) << err;
    // Bytes 12..15: the two 16-bit fields the groups load.
    const uint8_t first[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 80, 0, 0};
    const uint8_t second[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xbb};
    const uint8_t neither[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2};
    EXPECT_EQ(th->run_linear(first, 16, 16), 80u);
    EXPECT_EQ(th->run_linear(second, 16, 16), 443u);
    EXPECT_EQ(th->run_linear(neither, 16, 16), 7u);
    EXPECT_EQ(th->run_linear(first, 13, 13), 0u);    // the first load fails
    EXPECT_EQ(th->run_linear(first, 14, 14), 80u);   // the second fails, but the first test held
    EXPECT_EQ(th->run_linear(neither, 14, 14), 0u);  // the second fails after the first test failed
  }
}

// A guarded test's way out clears a mask and the packet runs on: whatever ends the run
// on the way onward — `ret a`, `ret #k`, a load past the packet, an ancillary load with
// no device (which returns A), a division by X == 0 — it must still return 0, the way
// out's `ret #0`, on every engine form.
TEST(BpfThreadedShapes, GuardedWayOutStillReturnsZero) {
  const Insn ret0{BPF_RET | BPF_K, 0, 0, 0};
  // Onward endings, each after `ldb [0]; jeq #1` (out on false) and `ld #77` (A nonzero).
  const std::vector<Insns> endings = {
      {{BPF_RET | BPF_A, 0, 0, 0}},
      {{BPF_RET | BPF_K, 0, 0, 5}},
      {{BPF_LD | BPF_H | BPF_ABS, 0, 0, 1000}, {BPF_RET | BPF_A, 0, 0, 0}},
      {{BPF_LD | BPF_W | BPF_ABS, 0, 0, ancillary_k(SKF_AD_IFINDEX)}, {BPF_RET | BPF_K, 0, 0, 9}},
      {{BPF_LDX | BPF_IMM, 0, 0, 0}, {BPF_ALU | BPF_DIV | BPF_X, 0, 0, 0}, {BPF_RET | BPF_A, 0, 0, 0}},
  };
  for (const bool out_true : {false, true}) {
    for (size_t e = 0; e < endings.size(); ++e) {
      Insns prog = {{BPF_LD | BPF_B | BPF_ABS, 0, 0, 0}, {BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1}, {BPF_LD | BPF_IMM, 0, 0, 77}};
      prog.insert(prog.end(), endings[e].begin(), endings[e].end());
      const uint8_t out = static_cast<uint8_t>(prog.size() - 2);  // jt/jf from slot 1 to the ret #0
      if (out_true) prog[1].jt = out;
      else prog[1].jf = out;
      prog.push_back(ret0);
      ASSERT_TRUE(check_program(prog).ok) << check_program(prog).reason;
      ASSERT_EQ(threaded_shapes(prog).guarded, 1u) << "ending " << e;
      std::string err;
      auto sw = Program::load(prog, Engine::Switch, &err);
      auto th = Program::load(prog, Engine::Threaded, &err);
      auto jit = testing::load(prog, Engine::Jit, &err);
      ASSERT_TRUE(sw && th && jit) << err;
      for (const uint8_t first : {0, 1, 2}) {
        const uint8_t pkt[4] = {first, 0, 0, 0};
        const PacketView v = PacketView::linear(pkt, sizeof pkt);
        const uint32_t want = sw->run(v);
        ASSERT_EQ(want == 0, (first == 1) == out_true || e == 2 || e == 4) << "ending " << e;  // 3 returns A
        EXPECT_EQ(th->run(v), want) << "ending " << e << ", byte " << int{first} << ", out on " << out_true;
        EXPECT_EQ(jit->run(v), want) << "ending " << e << ", byte " << int{first};
        if (e != 3) {  // an ancillary load needs the view
          EXPECT_EQ(th->run_linear(pkt, 4, 4), want) << "ending " << e;
        }
      }
    }
  }
}

// libpcap's IPv4 transport-header prologue in one slot (tcp, not a fragment, the header
// length): every protocol, fragment offset, header length and truncation point, against
// libpcap, through both entries.
TEST(BpfThreadedShapes, HeaderPrologueAgreesWithLibpcap) {
  std::vector<std::vector<uint8_t>> pkts;
  for (const uint8_t proto : {6, 17, 1})
    for (const uint16_t frag : {0x0000, 0x2000, 0x0001, 0x1fff})
      for (const uint8_t ihl : {5, 6, 15}) {
        std::vector<uint8_t> b(14 + 4 * ihl + 20, 0);
        b[12] = 0x08, b[14] = static_cast<uint8_t>(0x40 | ihl), b[23] = proto;
        b[20] = static_cast<uint8_t>(frag >> 8), b[21] = static_cast<uint8_t>(frag);
        const size_t l4 = 14 + 4 * ihl;
        b[l4 + 1] = 80, b[l4 + 2] = 0x01, b[l4 + 3] = 0xbb, b[l4 + 13] = 0x12;
        for (size_t cut = 0; cut <= b.size(); cut += cut < 40 ? 1 : 7) pkts.emplace_back(b.begin(), b.begin() + cut);
      }
  for (const char* expr : {"tcp port 80", "udp port 80 or udp port 443", "port 443", "tcp[13] & 2 != 0",
                           "tcp and (port 80 or port 443) and not net 10.0.0.0/8", "portrange 70-90"}) {
    const Insns prog = compile(expr);
    std::string err;
    auto th = testing::load(prog, Engine::Threaded, &err, Acceptance::Userland);
    ASSERT_TRUE(th) << expr << ": " << err;
    long hits = 0;
    for (const std::vector<uint8_t>& b : pkts) {
      const uint32_t len = static_cast<uint32_t>(b.size());
      const uint32_t want = testing::pcap_run(prog, b.data(), len, len);
      hits += want != 0;
      ASSERT_EQ(th->run_linear(b.data(), len, len), want) << expr << ", " << len << " bytes";
      ASSERT_EQ(th->run(PacketView::linear(b.data(), len)), want) << expr << ", " << len << " bytes";
    }
    EXPECT_GT(hits, 0) << expr;
  }
  EXPECT_EQ(threaded_shapes(compile("tcp port 80")).headers, 1u);
}

// protochain's step over an IPv6 extension header in one slot: chains of up to four
// headers of each kind and length, ending in several protocols, cut at every length.
// libpcap's step over an AH header sets X to the AH length instead of adding it, so a
// chain through AH may loop forever in libpcap's bpf_filter (unbounded); there the
// switch interpreter, bounded, is the reference.
TEST(BpfThreadedShapes, ExtensionHeaderStepAgreesWithLibpcap) {
  std::mt19937 rng(20261204);
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  static const uint8_t kExt[] = {0, 60, 43, 44};
  static const uint8_t kLast[] = {6, 17, 58, 59};
  struct Pkt {
    std::vector<uint8_t> bytes;
    bool ah;
  };
  std::vector<Pkt> pkts;
  for (int n = 0; n < 300; ++n) {
    std::vector<uint8_t> b(14 + 40, 0);
    b[12] = 0x86, b[13] = 0xdd, b[14] = 0x60;
    size_t next = 14 + 6;  // where the next-header value goes
    bool ah = false;
    for (uint32_t ext = below(5); ext; --ext) {
      const size_t at = b.size();
      ah |= n % 40 == 0 && ext == 1;  // now and then an AH header, last in the chain
      b[next] = ah ? 51 : kExt[below(4)];
      const uint8_t units = static_cast<uint8_t>(below(3));
      b.resize(at + 8 * (units + 1u), 0xa5);
      b[at + 1] = units;
      next = at;
    }
    b[next] = kLast[below(4)];
    b.resize(b.size() + 20, 0);
    for (size_t cut = 14; cut < b.size(); cut += 1 + below(6)) pkts.push_back({{b.begin(), b.begin() + cut}, ah});
    pkts.push_back({b, ah});
  }
  for (const char* expr : {"ip6 protochain 17", "ip6 protochain 6", "ip6 protochain 51", "ip6 protochain 44"}) {
    const Insns prog = compile(expr);
    ASSERT_EQ(threaded_shapes(prog).ext_steps, 1u) << expr;
    std::string err;
    auto th = testing::load(prog, Engine::Threaded, &err, Acceptance::Userland);
    auto sw = testing::load(prog, Engine::Switch, &err, Acceptance::Userland);
    ASSERT_TRUE(th && sw) << expr << ": " << err;
    long hits = 0, against_libpcap = 0;
    for (const Pkt& p : pkts) {
      const uint8_t* d = p.bytes.data();
      const uint32_t len = static_cast<uint32_t>(p.bytes.size());
      const uint32_t want = sw->run_linear(d, len, len);
      if (!p.ah) {
        ASSERT_EQ(want, testing::pcap_run(prog, d, len, len)) << expr << ", " << len << " bytes";
        ++against_libpcap;
      }
      hits += want != 0;
      ASSERT_EQ(th->run_linear(d, len, len), want) << expr << ", " << len << " bytes";
      ASSERT_EQ(th->run(PacketView::linear(d, len)), want) << expr << ", " << len << " bytes";
    }
    EXPECT_GT(hits, 20) << expr;
    EXPECT_GT(against_libpcap, 1000) << expr;
  }
}

// A guarded way out runs on through the blocks after it: a random draw there would
// advance the per-thread state that the next packet's draw reads. Such programs are not
// guarded (nor run predicated), so every engine draws the same numbers, packet after
// packet, from a fresh thread's state.
TEST(BpfThreadedShapes, RandomDrawsAreNotMadeOffThePath) {
  const Insns prog = {{BPF_LD | BPF_B | BPF_ABS, 0, 0, 0},
                      {BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 1},  // out on false
                      {BPF_LD | BPF_W | BPF_ABS, 0, 0, ancillary_k(SKF_AD_RANDOM)},
                      {BPF_RET | BPF_A, 0, 0, 0},
                      {BPF_RET | BPF_K, 0, 0, 0}};
  ASSERT_TRUE(check_program(prog).ok) << check_program(prog).reason;
  EXPECT_EQ(threaded_shapes(prog).guarded, 0u);
  EXPECT_FALSE(threaded_predicated(prog, ThreadedForm::Predicated));
  auto draws = [&](const PreparedImage& img) {
    std::vector<uint32_t> got;
    std::thread([&] {  // a fresh thread: the random state starts at its seed
      for (const uint8_t first : {0, 1, 0, 1, 1}) {
        const uint8_t pkt[1] = {first};
        got.push_back(img.fn(img.image, PacketView::linear(pkt, 1)));
      }
    }).join();
    return got;
  };
  std::string err;
  PreparedImage reference, predicated;
  ASSERT_TRUE(prepare_switch(prog, &reference, &err)) << err;
  ASSERT_TRUE(prepare_threaded_form(prog, false, ThreadedForm::Predicated, &predicated, &err)) << err;
  const std::vector<uint32_t> want = draws(reference);
  EXPECT_NE(want[1], 0u);
  EXPECT_NE(want[3], want[1]);
  EXPECT_EQ(draws(predicated), want);
  for (Engine e : testing::engines()) {
    auto p = testing::load(prog, e, &err);
    ASSERT_TRUE(p) << err;
    EXPECT_EQ(draws(p->image()), want) << engine_name(e);
  }
}

}  // namespace
}  // namespace pktpath::bpf
