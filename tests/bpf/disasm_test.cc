// The listings of src/bpf/disasm: hand-written programs over every opcode class with the
// lines libpcap 1.10 prints for them, then libpcap's own bpf_image/bpf_dump as the
// reference on every 16-bit code.
#include <pcap/pcap.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bpf/disasm.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

struct Line {
  Insn in;
  const char* d;  // what `tcpdump -d` prints for it at its index
};

// One instruction per line; jump targets are relative to the line's own index.
const std::vector<Line> kEveryClass = {
    // BPF_LD: absolute (word, half, byte), ancillary (named and not), negative windows,
    // indirect, length, immediate (hex), scratch memory.
    {{0x28, 0, 0, 12}, "(000) ldh      [12]"},
    {{0x20, 0, 0, 26}, "(001) ld       [26]"},
    {{0x30, 0, 0, 23}, "(002) ldb      [23]"},
    {{0x20, 0, 0, 0xfffff000}, "(003) ld       [proto]"},
    {{0x28, 0, 0, 0xfffff02c}, "(004) ldh      [vlan_tci]"},
    {{0x30, 0, 0, 0xfffff030}, "(005) ldb      [vlanp]"},
    {{0x20, 0, 0, 0xfffff002}, "(006) ld       [-4094]"},      // not an SKF_AD_* offset
    {{0x30, 0, 0, 0xfff00000}, "(007) ldb      [-1048576]"},   // SKF_NET_OFF
    {{0x50, 0, 0, 14}, "(008) ldb      [x + 14]"},
    {{0x48, 0, 0, 0xffffffff}, "(009) ldh      [x + -1]"},
    {{0x40, 0, 0, 2}, "(010) ld       [x + 2]"},
    {{0x80, 0, 0, 0}, "(011) ld       #pktlen"},
    {{0x00, 0, 0, 0x800}, "(012) ld       #0x800"},
    {{0x60, 0, 0, 3}, "(013) ld       M[3]"},
    // BPF_LDX: immediate, memory, the IP header length idiom; LDX LEN is not in bpf_image.
    {{0x01, 0, 0, 0xff}, "(014) ldx      #0xff"},
    {{0x61, 0, 0, 15}, "(015) ldx      M[15]"},
    {{0xb1, 0, 0, 14}, "(016) ldxb     4*([14]&0xf)"},
    {{0x81, 0, 0, 0}, "(017) unimp    0x81"},
    // BPF_ST, BPF_STX.
    {{0x02, 0, 0, 1}, "(018) st       M[1]"},
    {{0x03, 0, 0, 2}, "(019) stx      M[2]"},
    // BPF_ALU with K: arithmetic and shifts in signed decimal, bitwise in hex.
    {{0x04, 0, 0, 0xffffffff}, "(020) add      #-1"},
    {{0x14, 0, 0, 3}, "(021) sub      #3"},
    {{0x24, 0, 0, 10}, "(022) mul      #10"},
    {{0x34, 0, 0, 4}, "(023) div      #4"},
    {{0x94, 0, 0, 7}, "(024) mod      #7"},
    {{0x54, 0, 0, 0x1fff}, "(025) and      #0x1fff"},
    {{0x44, 0, 0, 0x80}, "(026) or       #0x80"},
    {{0xa4, 0, 0, 0xff}, "(027) xor      #0xff"},
    {{0x64, 0, 0, 2}, "(028) lsh      #2"},
    {{0x74, 0, 0, 4}, "(029) rsh      #4"},
    // BPF_ALU with X, and NEG (no operand: the padding and the space stay).
    {{0x0c, 0, 0, 0}, "(030) add      x"},
    {{0x5c, 0, 0, 0}, "(031) and      x"},
    {{0xac, 0, 0, 0}, "(032) xor      x"},
    {{0x84, 0, 0, 0}, "(033) neg      "},
    // BPF_MISC.
    {{0x07, 0, 0, 0}, "(034) tax      "},
    {{0x87, 0, 0, 0}, "(035) txa      "},
    // BPF_JMP: ja prints its target; the conditionals both targets, after a 16-wide operand.
    {{0x05, 0, 0, 1}, "(036) ja       38"},
    {{0x15, 0, 1, 0x86dd}, "(037) jeq      #0x86dd          jt 38\tjf 39"},
    {{0x25, 1, 0, 100}, "(038) jgt      #0x64            jt 40\tjf 39"},
    {{0x35, 2, 3, 0}, "(039) jge      #0x0             jt 42\tjf 43"},
    {{0x45, 0, 0, 0x1fff}, "(040) jset     #0x1fff          jt 41\tjf 41"},
    {{0x1d, 0, 1, 0}, "(041) jeq      x                jt 42\tjf 43"},
    {{0x2d, 0, 1, 0}, "(042) jgt      x                jt 43\tjf 44"},
    {{0x3d, 0, 1, 0}, "(043) jge      x                jt 44\tjf 45"},
    {{0x4d, 255, 255, 0}, "(044) jset     x                jt 300\tjf 300"},
    {{0x65, 0, 0, 0}, "(045) unimp    0x65             jt 46\tjf 46"},  // no such jump
    // BPF_RET: K in signed decimal, A without operand; RET X is not in bpf_image.
    {{0x06, 0, 0, 262144}, "(046) ret      #262144"},
    {{0x16, 0, 0, 0}, "(047) ret      "},
    {{0x0e, 0, 0, 0}, "(048) unimp    0xe"},
    {{0x06, 0, 0, 0xffffffff}, "(049) ret      #-1"},
};

Insns insns_of(const std::vector<Line>& lines) {
  Insns p;
  for (const Line& l : lines) p.push_back(l.in);
  return p;
}

TEST(BpfDisasm, EveryOpcodeClass) {
  std::string want;
  for (size_t i = 0; i < kEveryClass.size(); ++i) {
    EXPECT_EQ(disassemble_insn(kEveryClass[i].in, i), kEveryClass[i].d) << "insn " << i;
    want += std::string(kEveryClass[i].d) + "\n";
  }
  EXPECT_EQ(disassemble(insns_of(kEveryClass)), want);
}

TEST(BpfDisasm, JumpTargetsAndWideIndexes) {
  // ja's target is n + 1 + k in 32 bits, printed signed; indexes past 999 widen.
  EXPECT_EQ(disassemble_insn({0x05, 0, 0, 0xfffffffe}, 0), "(000) ja       -1");
  EXPECT_EQ(disassemble_insn({0x05, 0, 0, 2000}, 1000), "(1000) ja       3001");
  EXPECT_EQ(disassemble_insn({0x15, 3, 4, 7}, 4094), "(4094) jeq      #0x7             jt 4098\tjf 4099");
  // The operand column is 16 wide (%-16s).
  EXPECT_EQ(disassemble_insn({0x15, 0, 0, 0xffffffff}, 0), "(000) jeq      #0xffffffff      jt 1\tjf 1");
}

TEST(BpfDisasm, DdAndDddForms) {
  const Insns ip = {{0x28, 0, 0, 12}, {0x15, 0, 1, 0x800}, {0x6, 0, 0, 262144}, {0x6, 0, 0, 0}};
  EXPECT_EQ(format_dd(ip),
            "{ 0x28, 0, 0, 0x0000000c },\n"
            "{ 0x15, 0, 1, 0x00000800 },\n"
            "{ 0x6, 0, 0, 0x00040000 },\n"
            "{ 0x6, 0, 0, 0x00000000 },\n");
  EXPECT_EQ(format_ddd(ip), "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n");
  const Insns odd = {{0x0, 255, 1, 0xffffffff}, {0xffff, 0, 0, 0xfffff000}};
  EXPECT_EQ(format_dd(odd), "{ 0x0, 255, 1, 0xffffffff },\n{ 0xffff, 0, 0, 0xfffff000 },\n");
  EXPECT_EQ(format_ddd(odd), "2\n0 255 1 4294967295\n65535 0 0 4294963200\n");
}

// libpcap's bpf_image on every 16-bit code, with immediates that exercise sign, width,
// every ancillary offset and the negative load windows.
TEST(BpfDisasm, EqualsLibpcapBpfImageOnEveryCode) {
  std::vector<uint32_t> ks = {0, 1, 9, 12, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
                              0xfff00000, 0xfff0000e, 0xffe00000, 0xffdfffff};
  for (uint32_t ad = 0; ad < 72; ++ad) ks.push_back(0xfffff000u + ad);
  ks.push_back(0xffffefff);
  size_t compared = 0;
  for (uint32_t code = 0; code <= 0xffff; ++code) {
    // Every k on the codes classic BPF defines; the plain few on the rest.
    const bool low = code < 0x100;
    for (size_t ki = 0; ki < (low ? ks.size() : 8); ++ki) {
      for (size_t pc : {size_t{0}, size_t{7}, size_t{4095}}) {
        const Insn in{static_cast<uint16_t>(code), static_cast<uint8_t>(ki * 37), static_cast<uint8_t>(255 - ki),
                      ks[ki]};
        const bpf_insn b{in.code, in.jt, in.jf, in.k};
        const std::string want = bpf_image(&b, static_cast<int>(pc));
        ASSERT_EQ(disassemble_insn(in, pc), want) << "code " << code << " k " << in.k << " pc " << pc;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 200000u);
}

// bpf_dump(-d, -dd, -ddd) itself, printing to stdout, on the every-class program.
TEST(BpfDisasm, EqualsLibpcapBpfDump) {
  Insns prog = insns_of(kEveryClass);
  bpf_program fp{static_cast<u_int>(prog.size()), reinterpret_cast<bpf_insn*>(prog.data())};
  for (int option : {1, 2, 3}) {
    std::fflush(stdout);
    ::testing::internal::CaptureStdout();
    bpf_dump(&fp, option);
    std::fflush(stdout);
    const std::string want = ::testing::internal::GetCapturedStdout();
    const std::string got = option == 1 ? disassemble(prog) : option == 2 ? format_dd(prog) : format_ddd(prog);
    EXPECT_EQ(got, want) << "bpf_dump option " << option;
  }
}

}  // namespace
}  // namespace pktpath::bpf
