// Parsers: accepted forms, and the error table — each malformed input and its message.
#include <filesystem>
#include <fstream>

#include "bpf/check.h"
#include "bpf/disasm.h"
#include "bpf/parse.h"
#include "bpf_test_util.h"

namespace pktpath::bpf {
namespace {

const Insns kIpv4Prog = {{0x28, 0, 0, 12}, {0x15, 0, 1, 0x800}, {0x6, 0, 0, 65535}, {0x6, 0, 0, 0}};

TEST(BpfParse, TcStringAndTrailingComma) {
  Insns p;
  std::string err;
  ASSERT_TRUE(parse_bytecode("4,40 0 0 12,21 0 1 2048,6 0 0 65535,6 0 0 0", &p, &err)) << err;
  EXPECT_EQ(p, kIpv4Prog);
  ASSERT_TRUE(parse_bytecode("1,6 0 0 0,", &p, &err)) << err;  // document 000's form
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], (Insn{6, 0, 0, 0}));
  ASSERT_TRUE(parse_bytecode(" 2 , 0x28 0 0 0xc , 6  0 0 1 ,\n", &p, &err)) << err;
  EXPECT_EQ(p[0], (Insn{0x28, 0, 0, 12}));
}

TEST(BpfParse, DddAndCArrayForms) {
  Insns p;
  std::string err;
  ASSERT_TRUE(parse_bytecode_file_text("4\n40 0 0 12\n21 0 1 2048\n6 0 0 65535\n6 0 0 0\n", &p, &err)) << err;
  EXPECT_EQ(p, kIpv4Prog);
  const char* dd =
      "{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 1, 0x00000800 },\n"
      "{ 0x6, 0, 0, 0x0000ffff },\n{ 0x6, 0, 0, 0x00000000 },\n";
  ASSERT_TRUE(parse_bytecode_file_text(dd, &p, &err)) << err;
  EXPECT_EQ(p, kIpv4Prog);
  // Round trips through our own listings.
  ASSERT_TRUE(parse_bytecode(format_ddd(kIpv4Prog), &p, &err)) << err;
  EXPECT_EQ(p, kIpv4Prog);
  ASSERT_TRUE(parse_bytecode(format_tc(kIpv4Prog), &p, &err)) << err;
  EXPECT_EQ(p, kIpv4Prog);
}

TEST(BpfParse, ReadsFileAndNamesItInErrors) {
  auto path = (std::filesystem::temp_directory_path() / "pktpath_bpf_parse.txt").string();
  { std::ofstream(path) << "2\n6 0 0 1\n6 0 0 x\n"; }
  Insns p;
  std::string err;
  EXPECT_FALSE(read_bytecode_file(path, &p, &err));
  EXPECT_EQ(err, path + ": line 3: insn 1: field k: bad number 'x'");
  std::filesystem::remove(path);
  EXPECT_FALSE(read_bytecode_file(path, &p, &err));
  EXPECT_EQ(err, path + ": cannot open: No such file or directory");
}

TEST(BpfParse, ExpressionMatchesTcpdump) {
  Insns p;
  std::string err;
  ASSERT_TRUE(compile_expression("ip", CompileOptions{}, &p, &err)) << err;
  Insns want = kIpv4Prog;
  want[2].k = 262144;  // the default snaplen, as `tcpdump -ddd ip` prints for Ethernet
  EXPECT_EQ(p, want);
  CompileOptions raw;
  raw.linktype = parse_linktype("RAW");
  ASSERT_GE(raw.linktype, 0);
  ASSERT_TRUE(compile_expression("ip", raw, &p, &err)) << err;
  EXPECT_NE(p, want);
  EXPECT_EQ(parse_linktype("EN10MB"), 1);
  EXPECT_EQ(parse_linktype("DLT_EN10MB"), 1);
  EXPECT_EQ(parse_linktype("113"), 113);
  EXPECT_EQ(parse_linktype("nonsense"), -1);
}

struct ErrorCase {
  const char* input;
  const char* message;
};

// Bytecode files may carry `#` comments (whole-line and after an instruction) and blank
// lines, in the -ddd/tc form and the -dd form; errors keep the file's line numbers.
TEST(BpfParse, BytecodeFileCommentsAndBlankLines) {
  Insns p;
  std::string err;
  const char* ddd =
      "# tcpdump -ddd ip, with notes\n"
      "\n"
      "4   # instruction count\n"
      "40 0 0 12\t# ldh [12]\n"
      "   # an indented comment line\n"
      "21 0 1 2048#jeq #0x800, no space before the comment\n"
      "\n\n"
      "6 0 0 65535\n"
      "6 0 0 0 #\n"
      "# trailing comment line, no newline at the end";
  ASSERT_TRUE(parse_bytecode_file_text(ddd, &p, &err)) << err;
  EXPECT_EQ(p, kIpv4Prog);
  const char* dd =
      "# tcpdump -dd ip\n"
      "{ 0x28, 0, 0, 0x0000000c },  # ldh [12]\n"
      "\n"
      "{ 0x15, 0, 1, 0x00000800 },\n"
      "# { 0x6, 0, 0, 0x00000001 },  a commented-out instruction\n"
      "{ 0x6, 0, 0, 0x0000ffff },\n{ 0x6, 0, 0, 0x00000000 },\n";
  ASSERT_TRUE(parse_bytecode_file_text(dd, &p, &err)) << err;
  EXPECT_EQ(p, kIpv4Prog);
  // A file of comments alone has no program.
  EXPECT_FALSE(parse_bytecode_file_text("# nothing\n\n", &p, &err));
  EXPECT_EQ(err, "empty bytecode: expected 'N,code jt jf k,...'");
  // Malformed lines among comments: the message names the line and the word.
  const ErrorCase cases[] = {
      {"# head\n2\n6 0 0 1 # ok\n\n6 0 zz 0 # bad jf\n", "line 5: insn 1: field jf: bad number 'zz'"},
      {"2\n6 0 0 1\n6 0 0 0 ret\n", "line 3: insn 1: expected 4 fields (code jt jf k), got 5 (extra 'ret')"},
      {"# c\n1\n6 0 0 0;\n", "line 3: insn 0: field k: bad number '0;'"},
      {"# c\n{ 0x6, 0, 0, 0 },\n{ 0x6, 0, q, 0 }, # x\n", "line 3: insn 1: field jf: bad number 'q'"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_FALSE(parse_bytecode_file_text(c.input, &p, &err)) << "accepted: " << c.input;
    EXPECT_EQ(err, c.message) << "input: " << c.input;
  }
  // Through the file reader, as --bytecode-file and tc's bytecode-file use it.
  auto path = (std::filesystem::temp_directory_path() / "pktpath_bpf_comments.txt").string();
  { std::ofstream(path) << "# ret 1\n\n1\n6 0 0 1  # accept\n"; }
  ASSERT_TRUE(read_bytecode_file(path, &p, &err)) << err;
  EXPECT_EQ(p, (Insns{{6, 0, 0, 1}}));
  std::filesystem::remove(path);
}

TEST(BpfParse, ErrorTable) {
  const ErrorCase cases[] = {
      {"", "empty bytecode: expected 'N,code jt jf k,...'"},
      {",,,", "empty bytecode: expected 'N,code jt jf k,...'"},
      {"x,6 0 0 0", "instruction count: bad number 'x'"},
      {"0,", "instruction count: 0 (must be at least 1)"},
      {"70000,6 0 0 0", "instruction count: 70000 out of range 0..65535"},
      {"2,6 0 0 0", "instruction count 2 but 1 instructions given"},
      {"1,6 0 0 0,6 0 0 0", "instruction count 1 but 2 instructions given"},
      {"1,6 0 0", "insn 0: expected 4 fields (code jt jf k), got 3"},
      {"1,6 0 0 0 0", "insn 0: expected 4 fields (code jt jf k), got 5 (extra '0')"},
      {"2,6 0 0 0,65536 0 0 0", "insn 1: field code: 65536 out of range 0..65535"},
      {"1,6 256 0 0", "insn 0: field jt: 256 out of range 0..255"},
      {"1,6 0 -1 0", "insn 0: field jf: bad number '-1'"},
      {"1,6 0 0 4294967296", "insn 0: field k: 4294967296 out of range 0..4294967295"},
      {"1,6 0 0 0x", "insn 0: field k: bad number '0x'"},
      {"1,6 0 0 12abc", "insn 0: field k: bad number '12abc'"},
      {"1,6 0 0 99999999999999999999999", "insn 0: field k: 99999999999999999999999 out of range 0..4294967295"},
      {"2\n6 0 0 0\n6 0 zz 0\n", "line 3: insn 1: field jf: bad number 'zz'"},
      {"{ 0x6, 0, 0 },", "line 1: insn 0: expected 4 fields (code jt jf k), got 3"},
      {"{ 0x6, 0, 0, 0 },\n{ 0x6, 0x100, 0, 0 },", "line 2: insn 1: field jt: 0x100 out of range 0..255"},
      {"{ 0x6, 0, 0, 0 ", "line 1: insn 0: missing '}'"},
      {"{ 0x6, 0, 0, 0 } }", "line 1: '}' without '{'"},
      {"{ 0x6, 0, 0, 0 } ; ", "line 1: unexpected ';' outside { }"},
      {"{ }", "line 1: insn 0: expected 4 fields (code jt jf k), got 0"},
  };
  for (const ErrorCase& c : cases) {
    Insns p;
    std::string err;
    EXPECT_FALSE(parse_bytecode_file_text(c.input, &p, &err)) << "accepted: " << c.input;
    EXPECT_EQ(err, c.message) << "input: " << c.input;
  }
  Insns p;
  std::string err;
  EXPECT_FALSE(compile_expression("tcp port", CompileOptions{}, &p, &err));
  EXPECT_EQ(err.rfind("expression: ", 0), 0u) << err;
}

// The checker's reasons, one per kernel rule.
TEST(BpfCheck, ReasonTable) {
  const struct {
    Insns prog;
    const char* reason;
  } cases[] = {
      {{}, "empty program (needs 1..4096 instructions)"},
      {Insns(4097, Insn{6, 0, 0, 0}), "too many instructions: 4097 (BPF_MAXINSNS is 4096)"},
      {{{0x21, 0, 0, 0}, {6, 0, 0, 0}}, "insn 0: opcode 0x21 not allowed"},
      {{{0xe, 0, 0, 0}}, "insn 0: opcode 0xe not allowed"},
      {{{0x34, 0, 0, 0}, {6, 0, 0, 0}}, "insn 0: division or modulo by constant 0"},
      {{{0x94, 0, 0, 0}, {6, 0, 0, 0}}, "insn 0: division or modulo by constant 0"},
      {{{0x64, 0, 0, 32}, {6, 0, 0, 0}}, "insn 0: shift by constant 32 >= 32"},
      {{{0x02, 0, 0, 16}, {6, 0, 0, 0}}, "insn 0: scratch index 16 out of range (M[0..15])"},
      {{{0x05, 0, 0, 1}, {6, 0, 0, 0}}, "insn 0: jump offset 1 leaves the program"},
      {{{0x15, 1, 0, 0}, {6, 0, 0, 0}}, "insn 0: jump target jt=1 jf=0 leaves the program"},
      {{{0x20, 0, 0, 0xfffff040}, {6, 0, 0, 0}}, "insn 0: unknown ancillary offset SKF_AD_OFF+64"},
      {{{0x30, 0, 0, 0xffffffff}, {6, 0, 0, 0}}, "insn 0: unknown ancillary offset SKF_AD_OFF+4095"},
      {{{0x00, 0, 0, 1}}, "insn 0: last instruction is not a RET"},
      {{{0x60, 0, 0, 3}, {6, 0, 0, 0}}, "insn 0: M[3] may be read before it is written"},
      // Written on one path only: the read after the join is rejected.
      {{{0x15, 0, 1, 0}, {0x02, 0, 0, 1}, {0x61, 0, 0, 1}, {6, 0, 0, 0}},
       "insn 2: M[1] may be read before it is written"},
  };
  for (const auto& c : cases) {
    CheckResult r = check_program(c.prog);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.reason, c.reason);
  }
  // Written on both paths: accepted.
  Insns ok = {{0x15, 0, 2, 0}, {0x02, 0, 0, 1}, {0x05, 0, 0, 1}, {0x03, 0, 0, 1}, {0x61, 0, 0, 1}, {0x16, 0, 0, 0}};
  EXPECT_TRUE(check_program(ok).ok) << check_program(ok).reason;
}

}  // namespace
}  // namespace pktpath::bpf
