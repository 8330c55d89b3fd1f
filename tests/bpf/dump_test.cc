// `pktpath bpf dump -d|-dd|-ddd`: each flag prints exactly that listing, and the built
// binary prints byte for byte what the real `tcpdump -d|-dd|-ddd EXPR` prints (tcpdump
// without an interface compiles for Ethernet with a 262144-byte snapshot: "Warning:
// assuming Ethernet") on every expression of libpcap's apply set that libpcap compiles.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/disasm.h"
#include "bpf/parse.h"
#include "bpf_test_util.h"
#include "bpf_cli_util.h"

extern char** environ;

namespace pktpath::bpf {
namespace {

using Out = testing::CliOut;

Out run_cli(std::vector<std::string> args) { return testing::run_bpf_cli(std::move(args)); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs argv (no shell, so expressions need no quoting); stdout and stderr via files.
Out run_process(const std::vector<std::string>& argv) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(getpid());
  const std::string out_path = (dir / ("pktpath_dump_test_out." + tag)).string();
  const std::string err_path = (dir / ("pktpath_dump_test_err." + tag)).string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  Out o{-1, {}, {}};
  if (posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
    int st = 0;
    waitpid(pid, &st, 0);
    o.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    o.out = slurp(out_path);
    o.err = slurp(err_path);
  }
  posix_spawn_file_actions_destroy(&fa);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return o;
}

// tcpdump on PATH, or empty.
std::string find_tcpdump() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');) {
    if (d.empty()) continue;
    std::string p = d + "/tcpdump";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

const Insns kIp = {{0x28, 0, 0, 12}, {0x15, 0, 1, 0x800}, {0x6, 0, 0, 262144}, {0x6, 0, 0, 0}};

TEST(BpfDump, FlagsPrintOneListing) {
  Out o = run_cli({"dump", "--expr", "ip", "-d"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out,
            "(000) ldh      [12]\n"
            "(001) jeq      #0x800           jt 2\tjf 3\n"
            "(002) ret      #262144\n"
            "(003) ret      #0\n");
  EXPECT_EQ(o.err, "");
  o = run_cli({"dump", "--expr", "ip", "-dd"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out,
            "{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 1, 0x00000800 },\n"
            "{ 0x6, 0, 0, 0x00040000 },\n{ 0x6, 0, 0, 0x00000000 },\n");
  o = run_cli({"dump", "--expr", "ip", "-ddd"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out, "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n");
  // --ddd and --disasm are -ddd and -d; the flag may come before the source.
  EXPECT_EQ(run_cli({"dump", "--expr", "ip", "--ddd"}).out, format_ddd(kIp));
  EXPECT_EQ(run_cli({"dump", "--expr", "ip", "--disasm"}).out, disassemble(kIp));
  EXPECT_EQ(run_cli({"dump", "-d", "--bytecode", format_tc(kIp)}).out, disassemble(kIp));
  // A program the checker rejects is still listed; the note goes to stderr only.
  o = run_cli({"dump", "--bytecode", "3,7 0 0 0,52 0 0 0,22 0 0 0", "-d"});
  EXPECT_EQ(o.rc, 0);
  EXPECT_EQ(o.out, "(000) tax      \n(001) div      #0\n(002) ret      \n");
  EXPECT_NE(o.err.find("rejects it"), std::string::npos) << o.err;
  o = run_cli({"dump", "--bytecode", "1,0 0 0 0", "-dd"});
  EXPECT_EQ(o.out, "{ 0x0, 0, 0, 0x00000000 },\n");
  EXPECT_NE(o.err.find("note:"), std::string::npos);
  // One listing flag at a time.
  EXPECT_EQ(run_cli({"dump", "--expr", "ip", "-d", "-dd"}).rc, 2);
  EXPECT_EQ(run_cli({"dump", "--expr", "ip", "-ddd", "--disasm"}).rc, 2);
  EXPECT_EQ(run_cli({"dump", "--expr", "ip", "-dddd"}).rc, 2);
  // Without a listing flag: -ddd, -d, then the engine line.
  o = run_cli({"dump", "--expr", "ip", "--engine", "threaded"});
  EXPECT_EQ(o.out, format_ddd(kIp) + "\n" + disassemble(kIp) + "\nengine: threaded\n");
}

TEST(BpfDump, ByteIdenticalToTcpdump) {
  const std::string tcpdump = find_tcpdump();
  if (tcpdump.empty())
    GTEST_SKIP() << "tcpdump is not on PATH (scripts/install-deps installs it); nothing to compare with";
  // The reference invocation, checked once: Ethernet with a 262144-byte snapshot.
  Out ref = run_process({tcpdump, "-d", "ip"});
  ASSERT_EQ(ref.rc, 0) << ref.err;
  ASSERT_EQ(ref.out, disassemble(kIp)) << "tcpdump -d ip: not EN10MB/262144?";

  nlohmann::json cases = testing::load_json(testing::data_path("libpcap-apply/apply.json"));
  std::vector<std::string> exprs;
  std::set<std::string> seen;
  for (const auto& c : cases)
    if (seen.insert(c["expr"].get<std::string>()).second) exprs.push_back(c["expr"]);
  int compared = 0, not_compiled = 0, netmask_only = 0;
  for (const std::string& expr : exprs) {
    Insns prog;
    std::string err;
    if (!compile_expression(expr, CompileOptions{}, &prog, &err)) {
      // tcpdump compiles with netmask 0 where pktpath passes PCAP_NETMASK_UNKNOWN; an
      // expression that needs the netmask (`ip broadcast`) compiles only there. Compare
      // the formatter on tcpdump's program for it, since the CLI has no netmask option.
      CompileOptions zero;
      zero.netmask = 0;
      Out t = run_process({tcpdump, "-d", expr});
      if (compile_expression(expr, zero, &prog, &err)) {
        ASSERT_EQ(t.rc, 0) << expr << ": " << t.err;
        EXPECT_EQ(disassemble(prog), t.out) << expr;
        EXPECT_EQ(format_dd(prog), run_process({tcpdump, "-dd", expr}).out) << expr;
        EXPECT_EQ(format_ddd(prog), run_process({tcpdump, "-ddd", expr}).out) << expr;
        ++netmask_only;
      } else {
        EXPECT_NE(t.rc, 0) << expr << ": tcpdump compiles what libpcap refused here";
        ++not_compiled;
      }
      continue;
    }
    for (const char* flag : {"-d", "-dd", "-ddd"}) {
      Out want = run_process({tcpdump, flag, expr});
      ASSERT_EQ(want.rc, 0) << "tcpdump " << flag << " '" << expr << "': " << want.err;
      Out got = run_process({PKTPATH_BINARY, "bpf", "dump", "--expr", expr, flag});
      ASSERT_EQ(got.rc, 0) << "pktpath " << flag << " '" << expr << "': " << got.err;
      EXPECT_EQ(got.out, want.out) << flag << " '" << expr << "'";
    }
    ++compared;
  }
  std::printf("bpf dump vs %s: %d expressions compared with -d, -dd and -ddd through the binary, "
              "%d more (netmask) through the formatter, %d that libpcap does not compile\n",
              tcpdump.c_str(), compared, netmask_only, not_compiled);
  EXPECT_GE(compared, 90);  // 93 with Debian 12's libpcap 1.10.3
}

}  // namespace
}  // namespace pktpath::bpf
