// Random valid programs (loads of every mode incl. negative offsets and ancillary
// fields, ALU, jumps, scratch memory) on random packets (linear and fragmented):
// switch, threaded and the JIT must agree on every program x packet pair.
#include <cstring>
#include <memory>
#include <random>

#include "bpf/check.h"
#include "bpf_test_util.h"
#include "sanitizer_scale.h"

namespace pktpath::bpf {
namespace {

constexpr int kPrograms = pktpath::testing::scaled<int>(5000, 1000);
constexpr int kPacketsPerProgram = 20;  // 100k pairs in release

// True when libpcap's bpf_filter gives the kernel's semantics for every instruction:
// no ancillary or negative-offset loads, no indirect loads (libpcap does not treat X + k
// as signed) and no shifts by X (libpcap zeroes A for X >= 32; the kernel masks).
bool libpcap_comparable(const Insns& p) {
  for (const Insn& in : p) {
    uint16_t c = in.code;
    if ((bpf_mode(c) == BPF_ABS || bpf_mode(c) == BPF_MSH) && static_cast<int32_t>(in.k) < 0) return false;
    if (bpf_class(c) == BPF_LD && bpf_mode(c) == BPF_IND) return false;
    if (c == (BPF_ALU | BPF_LSH | BPF_X) || c == (BPF_ALU | BPF_RSH | BPF_X)) return false;
  }
  return true;
}

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }

  // A packet offset: mostly small, sometimes SKF_NET_OFF/SKF_LL_OFF relative, sometimes wild.
  uint32_t offset() {
    switch (below(10)) {
      case 0: return static_cast<uint32_t>(SKF_NET_OFF) + below(40);
      case 1: return static_cast<uint32_t>(SKF_LL_OFF) + below(40);
      case 2: return static_cast<uint32_t>(rng_());
      default: return below(300);
    }
  }

  Insn random_insn(size_t pc, size_t n) {
    static const uint16_t kAlu[] = {BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_MOD, BPF_AND,
                                    BPF_OR,  BPF_XOR, BPF_LSH, BPF_RSH, BPF_NEG};
    static const uint16_t kJmp[] = {BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET};
    static const uint16_t kSize[] = {BPF_W, BPF_H, BPF_B};
    const uint32_t room = static_cast<uint32_t>(n - pc - 2);  // insns after this, before the final RET
    Insn in;
    switch (below(14)) {
      case 0: case 1: {
        in.code = BPF_LD | kSize[below(3)] | BPF_ABS;
        in.k = offset();
        if (in_ancillary_window(in.k)) in.k = static_cast<uint32_t>(SKF_AD_OFF) + 4 * below(16);
        if (in.k == static_cast<uint32_t>(SKF_AD_OFF) + SKF_AD_RANDOM) in.k = 0;  // not deterministic
        break;
      }
      case 2: in.code = BPF_LD | kSize[below(3)] | BPF_IND; in.k = offset(); break;
      case 3: in.code = BPF_LDX | BPF_B | BPF_MSH; in.k = offset(); break;
      case 4: {
        uint16_t op = kAlu[below(11)];
        in.code = BPF_ALU | op | (below(2) ? BPF_X : BPF_K);
        in.k = below(4) ? below(64) : static_cast<uint32_t>(rng_());
        if (op == BPF_NEG) in.code = BPF_ALU | BPF_NEG;
        if ((op == BPF_DIV || op == BPF_MOD) && in.k == 0) in.k = 1;
        if (op == BPF_LSH || op == BPF_RSH) in.k &= 31;
        break;
      }
      case 5: case 6: {
        in.code = BPF_JMP | kJmp[below(4)] | (below(2) ? BPF_X : BPF_K);
        in.k = below(3) ? below(256) : static_cast<uint32_t>(rng_());
        uint32_t lim = room < 255 ? room : 255;
        in.jt = static_cast<uint8_t>(below(lim + 1));
        in.jf = static_cast<uint8_t>(below(lim + 1));
        break;
      }
      case 7: in.code = BPF_JMP | BPF_JA; in.k = below(room + 1); break;
      case 8: in.code = below(2) ? BPF_ST : BPF_STX; in.k = below(kMemWords); break;
      case 9: in.code = (below(2) ? BPF_LD : BPF_LDX) | BPF_MEM; in.k = below(kMemWords); break;
      case 10: in.code = (below(2) ? BPF_LD : BPF_LDX) | BPF_IMM; in.k = below(2) ? below(200) : static_cast<uint32_t>(rng_()); break;
      case 11: in.code = (below(2) ? BPF_LD : BPF_LDX) | BPF_W | BPF_LEN; break;
      case 12: in.code = BPF_MISC | (below(2) ? BPF_TAX : BPF_TXA); break;
      default: in.code = BPF_RET | (below(2) ? BPF_A : BPF_K); in.k = below(1000); break;
    }
    return in;
  }

  // A program that passes the checker (retries the rare scratch-read-before-write).
  Insns program() {
    for (;;) {
      size_t n = 2 + below(40);
      Insns p;
      // Write some scratch cells first so that MEM loads are usually legal.
      for (uint32_t c = 0; c < kMemWords; c += 1 + below(3)) p.push_back({BPF_ST, 0, 0, c});
      n += p.size();
      while (p.size() + 1 < n) {
        // Sometimes the shapes the threaded engine fuses: ld; [and #m;] jcond #k.
        if (below(6) == 0 && p.size() + 4 < n) {
          static const uint16_t kSz[] = {BPF_W, BPF_H, BPF_B};
          static const uint16_t kJ[] = {BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET};
          bool ind = below(2);
          p.push_back({static_cast<uint16_t>(BPF_LD | kSz[below(3)] | (ind ? BPF_IND : BPF_ABS)), 0, 0, below(80)});
          if (!ind && below(2)) p.push_back({BPF_ALU | BPF_AND | BPF_K, 0, 0, below(2) ? 0xff : static_cast<uint32_t>(rng_())});
          Insn j = random_insn(p.size(), n);
          j.code = static_cast<uint16_t>(BPF_JMP | kJ[below(4)] | BPF_K);
          uint32_t room = static_cast<uint32_t>(n - p.size() - 2);
          j.jt = static_cast<uint8_t>(below(std::min<uint32_t>(room, 255) + 1));
          j.jf = static_cast<uint8_t>(below(std::min<uint32_t>(room, 255) + 1));
          j.k = below(2) ? below(256) : static_cast<uint32_t>(rng_());
          p.push_back(j);
          continue;
        }
        p.push_back(random_insn(p.size(), n));
      }
      p.push_back({static_cast<uint16_t>(BPF_RET | BPF_A), 0, 0, 0});
      if (check_program(p).ok) return p;
    }
  }

  // A forward-only program whose scratch cells are not all written first: stores in the
  // body (on some paths only) and, in userland mode, reads before any write. What the
  // predicated forms must get right: a block off the packet's path stores nothing.
  Insns acyclic_program(Acceptance* mode) {
    for (;;) {
      size_t n = 2 + below(50);
      Insns p;
      while (p.size() + 1 < n) p.push_back(random_insn(p.size(), n));
      p.push_back({static_cast<uint16_t>(BPF_RET | BPF_A), 0, 0, 0});
      if (check_program(p).ok) {
        *mode = Acceptance::Kernel;
        return p;
      }
      if (check_program(p, Acceptance::Userland).ok) {
        *mode = Acceptance::Userland;
        return p;
      }
    }
  }

  // A program that loops, as libpcap's protochain does: all scratch cells written, a
  // counter in M[15], a random forward-only body (it may return early), a latch that
  // counts and jumps back until the counter reaches 1..20, then a random tail. Only
  // instructions whose semantics libpcap's bpf_filter shares, so it is a third oracle.
  Insns loop_program() {
    for (;;) {
      Insns p;
      for (uint32_t c = 0; c < kMemWords; ++c) p.push_back({BPF_ST, 0, 0, c});  // A == 0
      const size_t loop = p.size();
      const size_t body = 1 + below(20);
      for (size_t i = 0; i < body; ++i) {
        Insn in = random_insn(i, body + 1);  // jumps land in the body or on the latch
        if ((in.code == BPF_ST || in.code == BPF_STX) && in.k == kMemWords - 1) in.k = 0;
        p.push_back(in);
      }
      const uint32_t rounds = 1 + below(20);
      p.push_back({BPF_LD | BPF_MEM, 0, 0, kMemWords - 1});
      p.push_back({BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1});
      p.push_back({BPF_ST, 0, 0, kMemWords - 1});
      p.push_back({BPF_JMP | BPF_JGE | BPF_K, 1, 0, rounds});
      p.push_back({BPF_JMP | BPF_JA, 0, 0, static_cast<uint32_t>(static_cast<int32_t>(loop) - static_cast<int32_t>(p.size()) - 1)});
      const size_t tail = below(5);
      for (size_t i = 0; i < tail; ++i) p.push_back(random_insn(i, tail + 1));
      p.push_back({static_cast<uint16_t>(BPF_RET | BPF_A), 0, 0, 0});
      bool anc = false;
      for (const Insn& in : p) anc |= in_ancillary_window(in.k) && bpf_class(in.code) == BPF_LD;
      if (!anc && libpcap_comparable(p) && check_program(p, Acceptance::Userland).ok) return p;
    }
  }

  // A packet: random bytes or synthetic-looking, sometimes split into head + 2 frags.
  void packet(std::vector<uint8_t>& buf, PacketView& v, PacketFrag* frags) {
    uint32_t len = below(5) == 0 ? below(20) : below(200);
    buf.resize(len);
    for (auto& b : buf) b = static_cast<uint8_t>(rng_());
    v = PacketView::linear(buf.data(), len);
    v.meta.protocol = below(2) ? 0x0008 : 0xdd86;
    v.meta.mark = static_cast<uint32_t>(rng_());
    v.meta.vlan_present = below(2);
    v.meta.vlan_tci = static_cast<uint16_t>(rng_());
    v.meta.has_dev = below(4) != 0;
    v.meta.ifindex = 3;
    v.meta.cpu = below(8);
    if (len > 4 && below(3) == 0) {
      uint32_t head = below(len);
      uint32_t f1 = below(len - head + 1);
      v.headlen = head;
      v.net_off = head < 14 ? head : 14;
      frags[0] = {buf.data() + head, f1};
      frags[1] = {buf.data() + head + f1, len - head - f1};
      v.frags = frags;
      v.nr_frags = 2;
    }
  }

 private:
  std::mt19937_64 rng_;
};

// The generator's packet copied to exactly-sized heap blocks (head and each fragment on
// their own), so ASan reports any engine reading a byte outside the packet.
struct ExactPacket {
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  PacketFrag frags[2];
  PacketView v;

  explicit ExactPacket(const PacketView& src) : v(src) {
    v.data = copy(src.data, src.headlen);
    for (uint32_t i = 0; i < src.nr_frags; ++i) frags[i] = {copy(src.frags[i].data, src.frags[i].len), src.frags[i].len};
    v.frags = src.nr_frags ? frags : nullptr;
  }
  const uint8_t* copy(const uint8_t* p, uint32_t n) {
    blocks.emplace_back(new uint8_t[n]);
    if (n) std::memcpy(blocks.back().get(), p, n);
    return blocks.back().get();
  }
};

TEST(BpfRandomPrograms, SwitchThreadedJitAgree) {
  testing::engines();  // strict JIT: no silent fallback
  Gen g(20261130);
  std::vector<uint8_t> buf;
  PacketFrag frags[2];
  long pairs = 0, nonzero = 0, vs_libpcap = 0;
  for (int i = 0; i < kPrograms; ++i) {
    Insns prog = g.program();
    std::string err;
    auto sw = testing::load(prog, Engine::Switch, &err);
    auto th = testing::load(prog, Engine::Threaded, &err);
    auto jt = testing::load(prog, Engine::Jit, &err);
    ASSERT_TRUE(sw && th && jt) << err;
    ASSERT_EQ(jt->engine(), Engine::Jit);
    for (int j = 0; j < kPacketsPerProgram; ++j) {
      PacketView gv;
      g.packet(buf, gv, frags);
      ExactPacket ep(gv);
      const PacketView& v = ep.v;
      uint32_t a = sw->run(v), b = th->run(v), c = jt->run(v);
      ++pairs;
      nonzero += a != 0;
      if (a != b || a != c) {
        ADD_FAILURE() << "program " << i << " packet " << j << ": switch " << a << ", threaded " << b
                      << ", jit " << c;
        return;
      }
      // A third, independent oracle where its semantics coincide (linear packets).
      if (v.nr_frags == 0 && libpcap_comparable(prog)) {
        ++vs_libpcap;
        uint32_t lp = testing::pcap_run(prog, v.data, v.wire_len, v.len);
        if (lp != a) {
          ADD_FAILURE() << "program " << i << " packet " << j << ": pktpath " << a << ", libpcap " << lp;
          return;
        }
      }
    }
  }
  std::printf("random programs: %ld program x packet pairs agree on switch, threaded, jit (%ld non-zero; "
              "%ld also checked against libpcap's bpf_filter)\n", pairs, nonzero, vs_libpcap);
  EXPECT_GT(nonzero, pairs / 10);  // the programs do real work, not just fail their loads
  EXPECT_GT(vs_libpcap, pairs / 20);
}

// The predicated forms (every block run, effects committed only on the packet's path)
// against the branching forms and the switch engine, on programs that write scratch
// cells on some paths, read cells never written (userland), load past the packet's end
// off the path, divide by a zero X off the path.
TEST(BpfRandomPrograms, PredicatedFormsAgreeWithBranching) {
  Gen g(20261202);
  std::vector<uint8_t> buf;
  PacketFrag frags[2];
  long pairs = 0, nonzero = 0, jit_pred = 0, userland = 0;
  JitOptions branching = testing::strict_jit(), predicated = testing::strict_jit(), split = testing::strict_jit();
  branching.form = JitForm::Branching;
  predicated.form = JitForm::Predicated;
  split.form = JitForm::Split;
  long jit_split = 0;
  for (int i = 0; i < kPrograms; ++i) {
    Acceptance mode;
    Insns prog = i % 2 ? g.acyclic_program(&mode) : g.program();
    if (i % 2 == 0) mode = Acceptance::Kernel;
    if (i % 4 == 1)  // only `ret #k`: the predicated JIT looks the result up by the path's last block
      for (Insn& in : prog)
        if (in.code == (BPF_RET | BPF_A)) in = {BPF_RET | BPF_K, 0, 0, 77 + static_cast<uint32_t>(&in - prog.data())};
    std::string err;
    auto sw = Program::load(prog, Engine::Switch, mode, &err);
    ASSERT_TRUE(sw) << err;
    const bool bounded = sw->bounded();
    userland += bounded;
    PreparedImage tb, tp;
    ASSERT_TRUE(prepare_threaded_form(prog, bounded, ThreadedForm::Branching, &tb, &err)) << err;
    ASSERT_TRUE(prepare_threaded_form(prog, bounded, ThreadedForm::Predicated, &tp, &err)) << err;
    // The JIT's forms on every program, bounded ones too (their scratch reads start at 0).
    std::optional<Program> jb, jp, js;
    {
      jb = Program::load(prog, Engine::Jit, mode, branching, &err);
      jp = Program::load(prog, Engine::Jit, mode, predicated, &err);
      js = Program::load(prog, Engine::Jit, mode, split, &err);
      ASSERT_TRUE(jb && jp && js) << err;
      ASSERT_EQ(jb->bounded(), bounded);
      ASSERT_FALSE(jit_code_of(jb->image())->predicated);
      ASSERT_EQ(jit_code_of(jp->image())->predicated, predicated_jit_ok(prog));
      ASSERT_EQ(jit_code_of(js->image())->predicated, predicated_jit_ok(prog));
      if (predicated_jit_ok(prog)) {
        ASSERT_EQ(jit_code_of(jp->image())->regions, 1u);
      }
      jit_pred += predicated_jit_ok(prog);
      jit_split += jit_code_of(js->image())->regions > 1;
    }
    for (int j = 0; j < kPacketsPerProgram; ++j) {
      PacketView gv;
      g.packet(buf, gv, frags);
      ExactPacket ep(gv);
      const PacketView& v = ep.v;
      const uint32_t a = sw->run(v), b = tb.fn(tb.image, v), c = tp.fn(tp.image, v);
      const uint32_t d = jb ? jb->run(v) : a, e = jp ? jp->run(v) : a, s = js ? js->run(v) : a;
      ++pairs;
      nonzero += a != 0;
      if (a != b || a != c || a != d || a != e || a != s) {
        ADD_FAILURE() << "program " << i << " (" << acceptance_name(mode) << ") packet " << j << ": switch " << a
                      << ", threaded branching " << b << ", predicated " << c << ", jit branching " << d
                      << ", predicated " << e << ", split " << s;
        return;
      }
    }
  }
  std::printf("predicated forms: %ld program x packet pairs agree (%ld non-zero); %ld programs on the "
              "predicated JIT (%ld split into regions), %ld userland-bounded\n", pairs, nonzero, jit_pred, jit_split,
              userland);
  EXPECT_GT(nonzero, pairs / 10);
  EXPECT_GT(jit_pred, kPrograms / 4);
  EXPECT_GT(jit_split, kPrograms / 20);
  EXPECT_GT(userland, kPrograms / 20);
}

// Programs with backward jumps that terminate: userland mode runs them bounded on every
// engine (the JIT plain and blinded), and every result is libpcap's bpf_filter's — the
// bound is never what ends them.
TEST(BpfRandomPrograms, LoopingProgramsAgreeWithLibpcap) {
  Gen g(20261201);
  std::vector<uint8_t> buf;
  PacketFrag frags[2];
  long pairs = 0, nonzero = 0;
  for (int i = 0; i < kPrograms / 5; ++i) {
    Insns prog = g.loop_program();
    ASSERT_FALSE(check_program(prog, Acceptance::Kernel).ok);
    std::string err;
    auto sw = testing::load(prog, Engine::Switch, &err, Acceptance::Userland);
    auto th = testing::load(prog, Engine::Threaded, &err, Acceptance::Userland);
    auto jt = testing::load(prog, Engine::Jit, &err, Acceptance::Userland);
    JitOptions blind = testing::strict_jit();
    blind.blind = true;
    auto jb = Program::load(prog, Engine::Jit, Acceptance::Userland, blind, &err);
    ASSERT_TRUE(sw && th && jt && jb) << err;
    ASSERT_TRUE(sw->bounded() && th->bounded() && jt->bounded() && jb->bounded());
    ASSERT_EQ(jt->engine(), Engine::Jit);
    ASSERT_NE(jit_code_of(jb->image()), nullptr);
    for (int j = 0; j < kPacketsPerProgram; ++j) {
      PacketView gv;
      g.packet(buf, gv, frags);
      if (gv.nr_frags) gv = PacketView::linear(gv.data, gv.wire_len);  // libpcap sees one buffer
      ExactPacket ep(gv);
      const PacketView& v = ep.v;
      uint32_t a = sw->run(v), b = th->run(v), c = jt->run(v), cb = jb->run(v);
      uint32_t lp = testing::pcap_run(prog, v.data, v.wire_len, v.len);
      uint32_t raw = run_userland(prog, v);
      ++pairs;
      nonzero += a != 0;
      if (a != b || a != c || a != cb || a != lp || a != raw) {
        ADD_FAILURE() << "program " << i << " packet " << j << ": switch " << a << ", threaded " << b
                      << ", jit " << c << ", blinded " << cb << ", run_userland " << raw << ", libpcap " << lp;
        return;
      }
    }
  }
  std::printf("looping programs: %ld program x packet pairs agree with libpcap (%ld non-zero)\n", pairs, nonzero);
  EXPECT_GT(nonzero, pairs / 20);
}

// The LinearFn entry (Program::run_linear: the packet in registers, no view) against the
// view entry on the same linear buffer, for every engine and JIT form, bounded loops and
// blinding included; the wire length sometimes larger than the buffer (a snapshot).
TEST(BpfRandomPrograms, LinearEntryAgreesWithTheView) {
  Gen g(20261203);
  std::vector<uint8_t> buf;
  PacketFrag frags[2];
  long pairs = 0, nonzero = 0, linear_images = 0;
  JitOptions forms[4] = {testing::strict_jit(), testing::strict_jit(), testing::strict_jit(), testing::strict_jit()};
  forms[0].form = JitForm::Branching;
  forms[1].form = JitForm::Predicated;
  forms[2].form = JitForm::Split;
  forms[3].blind = true;
  for (int i = 0; i < kPrograms / 2; ++i) {
    Acceptance mode = Acceptance::Kernel;
    Insns prog = i % 3 == 0 ? g.program() : i % 3 == 1 ? g.acyclic_program(&mode) : g.loop_program();
    if (i % 3 == 2) mode = Acceptance::Userland;
    for (Insn& in : prog)  // the linear entry is for programs without ancillary loads
      if (bpf_class(in.code) == BPF_LD && bpf_mode(in.code) == BPF_ABS && in_ancillary_window(in.k)) in.k &= 0xff;
    std::string err;
    std::vector<Program> progs;
    for (Engine e : {Engine::Switch, Engine::Threaded}) {
      auto p = Program::load(prog, e, mode, &err);
      ASSERT_TRUE(p) << err;
      progs.push_back(std::move(*p));
    }
    for (const JitOptions& o : forms) {
      auto p = Program::load(prog, Engine::Jit, mode, o, &err);
      ASSERT_TRUE(p) << err;
      ASSERT_NE(p->image().linear, nullptr) << "a JIT program without ancillary loads has a linear image";
      progs.push_back(std::move(*p));
    }
    for (const Program& p : progs) linear_images += p.image().linear != nullptr;
    for (int j = 0; j < kPacketsPerProgram; ++j) {
      PacketView gv;
      g.packet(buf, gv, frags);
      const uint32_t buflen = static_cast<uint32_t>(buf.size());
      const uint32_t wire = j % 4 == 0 ? buflen + g.below(100) : buflen;
      PacketView lv = PacketView::linear(buf.data(), buflen);
      lv.wire_len = wire;
      ExactPacket ep(lv);
      const uint32_t want = progs[0].run(ep.v);
      ++pairs;
      nonzero += want != 0;
      for (const Program& p : progs) {
        const uint32_t got = p.run_linear(ep.v.data, wire, buflen);
        if (got != want || p.run(ep.v) != want) {
          ADD_FAILURE() << "program " << i << " packet " << j << " on " << engine_name(p.engine()) << ": linear " << got
                        << ", view " << p.run(ep.v) << ", switch " << want;
          return;
        }
      }
    }
  }
  EXPECT_EQ(linear_images, long{kPrograms / 2} * 5);  // every engine but switch has one
  std::printf("linear entry: %ld program x packet pairs agree with the view entry (%ld non-zero, %ld linear images)\n",
              pairs, nonzero, linear_images);
  EXPECT_GT(nonzero, pairs / 10);
}

}  // namespace
}  // namespace pktpath::bpf
