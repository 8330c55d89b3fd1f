// The kernel-mode rule taken from the translation to eBPF (bpf_convert_filter): a jump of
// the translated program must fit the 16-bit offset field. The expansion counts below are
// written out independently of check.cc (one literal per instruction kind); the boundary
// programs are built from them, checked here at exactly 32767 / 32768, and handed to the
// running kernel with SO_ATTACH_FILTER, whose verdict must equal pktpath's.
#include <linux/filter.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bpf/check.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

constexpr uint32_t anc(uint32_t ad) { return ancillary_k(ad); }

struct Kind {
  const char* name;
  Insn insn;
  int ebpf;  // eBPF instructions bpf_convert_filter emits for it (x86-64)
};

// Everything but jumps. Packet loads: convert_bpf_ld_abs (inline path for ABS with k >= 0
// as s32: 4 + [sub if k] + [2 more when k > 32767] + [bswap for H/W], then the 8-insn
// helper call; IND: helper call only, + 1 add when k != 0). LDX MSH: 6 + the byte load.
const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"ld #1", {BPF_LD | BPF_IMM, 0, 0, 1}, 1},
      {"ldx #1", {BPF_LDX | BPF_IMM, 0, 0, 1}, 1},
      {"st M[0]", {BPF_ST, 0, 0, 0}, 1},
      {"tax", {BPF_MISC | BPF_TAX, 0, 0, 0}, 1},
      {"ld len", {BPF_LD | BPF_W | BPF_LEN, 0, 0, 0}, 1},
      {"add #1", {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1}, 1},
      {"div #3", {BPF_ALU | BPF_DIV | BPF_K, 0, 0, 3}, 1},
      {"neg", {BPF_ALU | BPF_NEG, 0, 0, 0}, 1},
      {"div x", {BPF_ALU | BPF_DIV | BPF_X, 0, 0, 0}, 5},
      {"mod x", {BPF_ALU | BPF_MOD | BPF_X, 0, 0, 0}, 5},
      {"ret #0", {BPF_RET | BPF_K, 0, 0, 0}, 2},
      {"ret a", {BPF_RET | BPF_A, 0, 0, 0}, 1},
      {"ldb [0]", {BPF_LD | BPF_B | BPF_ABS, 0, 0, 0}, 12},
      {"ldb [1]", {BPF_LD | BPF_B | BPF_ABS, 0, 0, 1}, 13},
      {"ldb [32767]", {BPF_LD | BPF_B | BPF_ABS, 0, 0, 32767}, 13},
      {"ldb [32768]", {BPF_LD | BPF_B | BPF_ABS, 0, 0, 32768}, 15},
      {"ldh [0]", {BPF_LD | BPF_H | BPF_ABS, 0, 0, 0}, 13},
      {"ldh [12]", {BPF_LD | BPF_H | BPF_ABS, 0, 0, 12}, 14},
      {"ldw [40000]", {BPF_LD | BPF_W | BPF_ABS, 0, 0, 40000}, 16},
      {"ldw [0x7fffffff]", {BPF_LD | BPF_W | BPF_ABS, 0, 0, 0x7fffffff}, 16},
      {"ldw [SKF_NET_OFF]", {BPF_LD | BPF_W | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_NET_OFF)}, 8},
      {"ldb [SKF_LL_OFF+14]", {BPF_LD | BPF_B | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_LL_OFF) + 14}, 8},
      {"ldb [x+0]", {BPF_LD | BPF_B | BPF_IND, 0, 0, 0}, 8},
      {"ldh [x+3]", {BPF_LD | BPF_H | BPF_IND, 0, 0, 3}, 9},
      {"ldw [x+40000]", {BPF_LD | BPF_W | BPF_IND, 0, 0, 40000}, 9},
      {"ldxb msh [0]", {BPF_LDX | BPF_B | BPF_MSH, 0, 0, 0}, 18},
      {"ldxb msh [14]", {BPF_LDX | BPF_B | BPF_MSH, 0, 0, 14}, 19},
      {"ldxb msh [32768]", {BPF_LDX | BPF_B | BPF_MSH, 0, 0, 32768}, 21},
      {"ldxb msh [SKF_NET_OFF]", {BPF_LDX | BPF_B | BPF_MSH, 0, 0, static_cast<uint32_t>(SKF_NET_OFF)}, 14},
      // convert_bpf_extensions / convert_skb_access; the load size does not matter.
      {"ld proto", {BPF_LD | BPF_H | BPF_ABS, 0, 0, anc(SKF_AD_PROTOCOL)}, 2},
      {"ld type", {BPF_LD | BPF_B | BPF_ABS, 0, 0, anc(SKF_AD_PKTTYPE)}, 2},
      {"ld ifidx", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_IFINDEX)}, 4},
      {"ld nla", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_NLATTR)}, 4},
      {"ld nlan", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_NLATTR_NEST)}, 4},
      {"ld mark", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_MARK)}, 1},
      {"ld queue", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_QUEUE)}, 1},
      {"ld hatype", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_HATYPE)}, 4},
      {"ld rxhash", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_RXHASH)}, 1},
      {"ld cpu", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_CPU)}, 4},
      {"ldb cpu", {BPF_LD | BPF_B | BPF_ABS, 0, 0, anc(SKF_AD_CPU)}, 4},
      {"ld xor_x", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_ALU_XOR_X)}, 1},
      {"ld vlan_tci", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_VLAN_TAG)}, 1},
      {"ld vlanp", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_VLAN_TAG_PRESENT)}, 3},
      {"ld poff", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_PAY_OFFSET)}, 4},
      {"ld random", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_RANDOM)}, 4},
      {"ld vlan_tpid", {BPF_LD | BPF_W | BPF_ABS, 0, 0, anc(SKF_AD_VLAN_TPID)}, 2},
  };
  return k;
}

// Jumps: [mov tmp, K when K < 0 as s32] then one jump (jf == 0; jt == 0 for JEQ/JGT/JGE,
// inverted) or two (Jxx to jt, JA to jf). `last` is the slot of the last jump.
struct JumpKind {
  const char* name;
  Insn insn;
  int ebpf;
  int last;
};
const std::vector<JumpKind>& jump_kinds() {
  static const std::vector<JumpKind> j = {
      {"ja 0", {BPF_JMP | BPF_JA, 0, 0, 0}, 1, 0},
      {"jeq #0 jt 0 jf 0", {BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0}, 1, 0},
      {"jeq #7 jt 3 jf 0", {BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 7}, 1, 0},
      {"jeq #7 jt 0 jf 4", {BPF_JMP | BPF_JEQ | BPF_K, 0, 4, 7}, 1, 0},
      {"jeq #7 jt 3 jf 2", {BPF_JMP | BPF_JEQ | BPF_K, 3, 2, 7}, 2, 1},
      {"jset #1 jt 0 jf 2", {BPF_JMP | BPF_JSET | BPF_K, 0, 2, 1}, 2, 1},
      {"jeq #0x80000000 jt 0 jf 0", {BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0x80000000}, 2, 1},
      {"jgt #0x90000000 jt 0 jf 3", {BPF_JMP | BPF_JGT | BPF_K, 0, 3, 0x90000000}, 2, 1},
      {"jeq #0xffffffff jt 3 jf 2", {BPF_JMP | BPF_JEQ | BPF_K, 3, 2, 0xffffffff}, 3, 2},
      {"jge x jt 1 jf 2 (k ignored)", {BPF_JMP | BPF_JGE | BPF_X, 1, 2, 0x80000000}, 2, 1},
      {"jset x jt 0 jf 1", {BPF_JMP | BPF_JSET | BPF_X, 0, 1, 0}, 2, 1},
  };
  return j;
}

constexpr Insn kMsh = {BPF_LDX | BPF_B | BPF_MSH, 0, 0, 0};  // 18 eBPF, sets seen_ld_abs
constexpr Insn kFill = {BPF_LD | BPF_IMM, 0, 0, 1};          // 1 eBPF
constexpr Insn kRet = {BPF_RET | BPF_K, 0, 0, 0};
constexpr int kMshEbpf = 18;
constexpr int kPrologue = 7;  // A = 0, X = 0, ctx; + data and headlen (a packet load is present)
constexpr int kCopies = 1000;

// `ebpf` eBPF instructions: 1000 copies of x (when x_ebpf > 0), then MSHs, then fillers.
void append_body(Insns& p, const Insn& x, int x_ebpf, int64_t ebpf) {
  const int copies = x_ebpf > 0 ? kCopies : 0;
  ebpf -= int64_t{copies} * x_ebpf;
  p.insert(p.end(), copies, x);
  p.insert(p.end(), static_cast<size_t>(ebpf / kMshEbpf), kMsh);
  p.insert(p.end(), static_cast<size_t>(ebpf % kMshEbpf), kFill);
}

// `ja` at insn 0 whose eBPF offset is exactly `off` (it jumps to the final ret).
Insns ja_with_offset(const Insn& x, int x_ebpf, int64_t off) {
  Insns p = {{BPF_JMP | BPF_JA, 0, 0, 0}};
  append_body(p, x, x_ebpf, off);
  p[0].k = static_cast<uint32_t>(p.size() - 1);
  p.push_back(kRet);
  return p;
}

// A body, then jump j whose last eBPF jump instruction is eBPF instruction `pos`.
Insns jump_at(const JumpKind& j, const Insn& x, int x_ebpf, int64_t pos) {
  Insns p;
  append_body(p, x, x_ebpf, pos - kPrologue - j.last);
  p.push_back(j.insn);
  p.insert(p.end(), std::max(j.insn.jt, j.insn.jf), kFill);
  p.push_back(kRet);
  return p;
}

struct Boundary {
  std::string name;
  Insns prog;
  bool accept;
  int index;    // the jump the rejection names
  int64_t off;  // the offset the rejection names
};

// Every boundary program: for each kind, a ja over it at offset 32767 / 32768 and a jump
// placed at eBPF instruction 32767 / 32768; for each jump kind, placed at 32767 / 32768.
std::vector<Boundary> boundaries() {
  std::vector<Boundary> b;
  for (const Kind& k : kinds())
    for (int64_t t : {32767, 32768}) {
      b.push_back({fmt::format("ja over {} offset {}", k.name, t), ja_with_offset(k.insn, k.ebpf, t),
                   t == 32767, 0, t});
      Insns p = jump_at(jump_kinds()[1], k.insn, k.ebpf, t);
      const int at = static_cast<int>(p.size() - 2);
      b.push_back({fmt::format("jeq after {} at eBPF {}", k.name, t), std::move(p), t == 32767, at, -t - 1});
    }
  for (const JumpKind& j : jump_kinds())
    for (int64_t t : {32767, 32768}) {
      Insns p = jump_at(j, kMsh, kMshEbpf, t);
      const int at = static_cast<int>(p.size() - 2 - std::max(j.insn.jt, j.insn.jf));
      b.push_back({fmt::format("{} at eBPF {}", j.name, t), std::move(p), t == 32767, at, -t - 1});
    }
  return b;
}

// lib/test_bpf.c's "BPF_MAXINSNS: jump over MSH": ja over 4094 MSH to ret #0xabababab.
Insns jump_over_msh() {
  Insns p(kMaxInsns, kMsh);
  p[0] = {BPF_JMP | BPF_JA, 0, 0, kMaxInsns - 2};
  p[kMaxInsns - 1] = {BPF_RET | BPF_K, 0, 0, 0xabababab};
  return p;
}

// The heaviest program without an instruction of 9 or more eBPF: 4093 `ldb [x+0]` (8 each)
// under one ja, and a conditional jump after them.
Insns light_maximum() {
  Insns p = {{BPF_JMP | BPF_JA, 0, 0, kMaxInsns - 3}};
  p.insert(p.end(), kMaxInsns - 3, Insn{BPF_LD | BPF_B | BPF_IND, 0, 0, 0});
  p.push_back({BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0});
  p.push_back(kRet);
  return p;
}

// Conditional jumps reach at most 255 instructions: over 255 of the heaviest (21) the
// offset is 5355, far inside 16 bits.
Insns longest_conditional() {
  Insns p = {{BPF_JMP | BPF_JEQ | BPF_K, 255, 0, 0}};
  p.insert(p.end(), 255, Insn{BPF_LDX | BPF_B | BPF_MSH, 0, 0, 32768});
  p.push_back(kRet);
  return p;
}

TEST(BpfEbpfJumps, ExpansionTable) {
  for (const Kind& k : kinds()) EXPECT_EQ(ebpf_expansion(k.insn), k.ebpf) << k.name;
  for (const JumpKind& j : jump_kinds()) EXPECT_EQ(ebpf_expansion(j.insn), j.ebpf) << j.name;
  for (const Insn& one : {Insn{BPF_LD | BPF_MEM, 0, 0, 3}, Insn{BPF_LDX | BPF_MEM, 0, 0, 3},
                          Insn{BPF_STX, 0, 0, 3}, Insn{BPF_MISC | BPF_TXA, 0, 0, 0},
                          Insn{BPF_LDX | BPF_W | BPF_LEN, 0, 0, 0}, Insn{BPF_ALU | BPF_MOD | BPF_K, 0, 0, 7},
                          Insn{BPF_ALU | BPF_LSH | BPF_X, 0, 0, 0}})
    EXPECT_EQ(ebpf_expansion(one), 1) << one.code;
}

TEST(BpfEbpfJumps, BoundaryPrograms) {
  for (const Boundary& b : boundaries()) {
    ASSERT_LE(b.prog.size(), kMaxInsns) << b.name;
    CheckResult r = check_program(b.prog, Acceptance::Kernel);
    if (b.accept) {
      EXPECT_TRUE(r.ok) << b.name << ": " << r.reason;
      continue;
    }
    ASSERT_FALSE(r.ok) << b.name;
    EXPECT_TRUE(r.translation) << b.name;
    EXPECT_EQ(r.index, b.index) << b.name << ": " << r.reason;
    EXPECT_EQ(r.reason.rfind(fmt::format("insn {}: jump offset {} does not fit the 16 bits of an eBPF "
                                         "jump (the kernel's bpf_convert_filter refuses it",
                                         b.index, b.off),
                             0),
              0u)
        << b.name << ": " << r.reason;
  }
}

TEST(BpfEbpfJumps, ReachableOnlyWithHeavyInstructions) {
  EXPECT_TRUE(check_program(light_maximum()).ok) << check_program(light_maximum()).reason;
  EXPECT_TRUE(check_program(longest_conditional()).ok) << check_program(longest_conditional()).reason;
  CheckResult r = check_program(jump_over_msh());
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.index, 0);
  // 4094 MSH of 18: the ja measures 73692.
  EXPECT_EQ(r.reason, "insn 0: jump offset 73692 does not fit the 16 bits of an eBPF jump (the kernel's "
                      "bpf_convert_filter refuses it)");
}

TEST(BpfEbpfJumps, UserlandDoesNotApplyIt) {
  Insns p = jump_over_msh();
  EXPECT_TRUE(check_program(p, Acceptance::Userland).ok);
  for (const Boundary& b : boundaries())
    EXPECT_TRUE(check_program(b.prog, Acceptance::Userland).ok) << b.name;
  // It runs unbounded (nothing loops) and returns what the kernel test expects if accepted.
  std::string err;
  auto prog = testing::load(p, Engine::Switch, &err, Acceptance::Userland);
  ASSERT_TRUE(prog) << err;
  EXPECT_FALSE(prog->bounded());
  const uint8_t data[4] = {0xfa, 0xfb, 0xfc, 0xfd};
  EXPECT_EQ(prog->run(PacketView::linear(data, sizeof data)), 0xababababu);
}

// --- Against the running kernel -----------------------------------------------------------

// Raises net.core.optmem_max for the test (the socket is charged the translated program's
// size, so large accepted programs would otherwise fail with ENOMEM) and restores it.
class OptmemGuard {
 public:
  explicit OptmemGuard(long want) {
    std::ifstream in(kPath);
    if (!(in >> old_)) return;
    if (old_ >= want) return;
    std::ofstream out(kPath);
    out << want;
    out.close();
    raised_ = out.good();
  }
  ~OptmemGuard() {
    if (!raised_) return;
    std::ofstream out(kPath);
    out << old_;
  }
  long old_value() const { return old_; }

 private:
  static constexpr const char* kPath = "/proc/sys/net/core/optmem_max";
  long old_ = -1;
  bool raised_ = false;
};

// 0 when the kernel attaches the program, else the errno.
int kernel_attach(const Insns& p) {
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  if (fd < 0) return errno;
  sock_fprog fprog{static_cast<unsigned short>(p.size()),
                   reinterpret_cast<sock_filter*>(const_cast<Insn*>(p.data()))};
  int rc = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog);
  int e = rc == 0 ? 0 : errno;
  close(fd);
  return e;
}

TEST(BpfEbpfJumps, SameVerdictAsTheRunningKernel) {
  // The largest accepted program here translates to about 74k eBPF instructions (~600 KB).
  OptmemGuard guard(8 << 20);
  std::vector<Boundary> all = boundaries();
  all.push_back({"jump over MSH", jump_over_msh(), false, 0, 0});
  all.push_back({"light maximum", light_maximum(), true, 0, 0});
  all.push_back({"longest conditional", longest_conditional(), true, 0, 0});
  Insns exec_all_msh(kMaxInsns - 1, kMsh);  // no jump at all: any length translates
  exec_all_msh.push_back(kRet);
  all.push_back({"4095 msh, no jump", exec_all_msh, true, 0, 0});
  int agreed = 0;
  for (const Boundary& b : all) {
    const bool ours = check_program(b.prog, Acceptance::Kernel).ok;
    ASSERT_EQ(ours, b.accept) << b.name;
    const int e = kernel_attach(b.prog);
    if (e != 0 && e != EINVAL)
      GTEST_SKIP() << "SO_ATTACH_FILTER failed with " << std::strerror(e) << " on '" << b.name
                   << "' (net.core.optmem_max was " << guard.old_value() << ")";
    EXPECT_EQ(e == 0, ours) << b.name << ": kernel " << (e == 0 ? "accepts" : "refuses (EINVAL)")
                            << ", pktpath " << (ours ? "accepts" : "refuses");
    ++agreed;
  }
  std::printf("ebpf jump limit: %d programs, pktpath and the running kernel agree on each\n", agreed);
}

}  // namespace
}  // namespace pktpath::bpf
