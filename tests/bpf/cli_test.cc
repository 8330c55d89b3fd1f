// `pktpath bpf ...` driven in-process (pktpath::cli::run_main) and once as a process.
#include <cstdio>
#include <sstream>

#include "bpf/parse.h"
#include "bpf_test_util.h"
#include "bpf_cli_util.h"

namespace pktpath::bpf {
namespace {

using Out = testing::CliOut;

Out run(std::vector<std::string> args) { return testing::run_bpf_cli(std::move(args)); }

std::string capture(const std::string& name) {
  return testing::data_path("libpcap-apply/captures/" + name);
}

TEST(BpfCli, CheckAcceptsAndRejects) {
  Out o = run({"check", "--bytecode", "1,6 0 0 0,"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out, "ok: 1 instructions\n");
  o = run({"check", "--bytecode", "2,52 0 0 0,6 0 0 0"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("insn 0: division or modulo by constant 0"), std::string::npos) << o.err;
  o = run({"check", "--bytecode", "2,6 0 0 0,6 0 300 0"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("insn 1: field jf: 300 out of range 0..255"), std::string::npos) << o.err;
  o = run({"check", "--expr", "tcp port 80"});
  EXPECT_EQ(o.rc, 0) << o.err;
  o = run({"check", "--expr", "tcp port"});
  EXPECT_EQ(o.rc, 1);
  o = run({"check", "--bytecode-file", "/nonexistent/prog.txt"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("/nonexistent/prog.txt: cannot open"), std::string::npos);
}

TEST(BpfCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run({}).rc, 2);
  EXPECT_EQ(run({"check"}).rc, 2);                                            // no SRC
  EXPECT_EQ(run({"check", "--bytecode", "1,6 0 0 0", "--expr", "ip"}).rc, 2);  // two SRCs
  EXPECT_EQ(run({"frobnicate", "--expr", "ip"}).rc, 2);
  EXPECT_EQ(run({"check", "--expr", "ip", "--bogus"}).rc, 2);
  EXPECT_EQ(run({"check", "--expr"}).rc, 2);
  EXPECT_EQ(run({"check", "--expr", "ip", "--linktype", "NOPE"}).rc, 2);
  EXPECT_EQ(run({"run", "--expr", "ip"}).rc, 2);  // no --pcap
  EXPECT_EQ(run({"run", "--expr", "ip", "--pcap", capture("vrrp.pcap"), "--engine", "x"}).rc, 2);
  EXPECT_EQ(run({"bench", "--expr", "ip"}).rc, 2);
  EXPECT_EQ(run({"bench", "--expr", "ip", "--synthetic", "10", "--pcap", capture("vrrp.pcap")}).rc, 2);
  EXPECT_EQ(run({"bench", "--expr", "ip", "--synthetic", "ten"}).rc, 2);
  EXPECT_EQ(run({"bench", "--expr", "ip", "--synthetic", "10", "--runs", "0"}).rc, 2);
  EXPECT_EQ(run({"--help"}).rc, 0);
}

TEST(BpfCli, DumpListsAndDisassembles) {
  Out o = run({"dump", "--expr", "ip"});
  EXPECT_EQ(o.rc, 0);
  const std::string listing =
      "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n\n"
      "(000) ldh      [12]\n"
      "(001) jeq      #0x800           jt 2\tjf 3\n"
      "(002) ret      #262144\n"
      "(003) ret      #0\n";
  EXPECT_EQ(o.out.substr(0, listing.size()), listing);
  // Then the engine that runs it: the JIT by default, or the one --engine names.
  EXPECT_EQ(o.out.substr(listing.size()).rfind("\nengine: jit (x86-64, ", 0), 0u) << o.out;
  o = run({"dump", "--expr", "ip", "--engine", "threaded"});
  EXPECT_EQ(o.out, listing + "\nengine: threaded\n");
  o = run({"dump", "--bytecode", "3,32 0 0 4294963200,48 0 0 4293918720,22 0 0 0", "--disasm"});
  // As bpf_image: named ancillary offsets, other negative offsets in decimal.
  EXPECT_EQ(o.out, "(000) ld       [proto]\n(001) ldb      [-1048576]\n(002) ret      \n");
}

TEST(BpfCli, RunMatchesLibpcapOnCaptures) {
  // Ethernet pcap, a pcapng file and a non-Ethernet link type (compiled for the file's DLT).
  for (const char* file : {"vrrp.pcap", "rarp_req_reply.pcapng", "slip-bad-direction.pcap"}) {
    for (const char* engine : {"switch", "threaded", "jit"}) {
      const char* expr = std::string(file).find("slip") != std::string::npos ? "ip" : "ip or rarp";
      Out o = run({"run", "--expr", expr, "--pcap", capture(file), "--engine", engine});
      ASSERT_EQ(o.rc, 0) << file << ": " << o.err;
      PacketSet set;
      std::string err;
      ASSERT_TRUE(read_pcap(capture(file), &set, &err)) << err;
      CompileOptions co;
      co.savefile = capture(file);
      Insns prog;
      ASSERT_TRUE(compile_expression(expr, co, &prog, &err)) << err;
      std::string want;
      for (size_t i = 0; i < set.size(); ++i)
        want += std::to_string(testing::pcap_run(prog, set.bytes(i), set.wirelen(i), set.caplen(i))) + "\n";
      EXPECT_EQ(o.out, want) << file << " " << engine;
      EXPECT_GT(set.size(), 0u);
    }
  }
  // --snaplen override changes the compiled return value.
  Out o = run({"run", "--expr", "ip", "--pcap", capture("vrrp.pcap"), "--snaplen", "96"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, 7), "0\n0\n96\n");  // IPv6, IPv6, IPv4
}

TEST(BpfCli, RunErrors) {
  Out o = run({"run", "--expr", "ip", "--pcap", "/nonexistent.pcap"});
  EXPECT_EQ(o.rc, 1);
  o = run({"run", "--bytecode", "1,6 0 0 1", "--pcap", capture("vrrp.pcap"), "--engine", "jit"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, 4), "1\n1\n");
  o = run({"run", "--bytecode", "1,0 0 0 1", "--pcap", capture("vrrp.pcap")});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("last instruction is not a RET"), std::string::npos) << o.err;
}

TEST(BpfCli, BenchJson) {
  Out o = run({"bench", "--expr", "net 192.168.2.0/24", "--synthetic", "20000", "--engine", "switch",
               "--json", "--runs", "3"});
  ASSERT_EQ(o.rc, 0) << o.err;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["engine"], "switch");
  EXPECT_EQ(j["packets"], 20000);
  for (const char* k : {"ns_per_packet", "mpps", "min_ns", "max_ns"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GT(j[k].get<double>(), 0) << k;
  }
  EXPECT_LE(j["min_ns"].get<double>(), j["ns_per_packet"].get<double>());
  EXPECT_LE(j["ns_per_packet"].get<double>(), j["max_ns"].get<double>());
  o = run({"bench", "--bytecode", "1,6 0 0 1", "--synthetic", "1000", "--engine", "all", "--json"});
  ASSERT_EQ(o.rc, 0) << o.err;
  j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[2]["engine"], "jit");
  EXPECT_EQ(j[3]["engine"], "libpcap");
  EXPECT_EQ(j[0]["accepted"], 1000);
  for (const auto& e : j) {  // every engine timed in each of the default 5 rounds
    EXPECT_EQ(e["runs"], 5) << e;
    EXPECT_LE(e["min_ns"].get<double>(), e["median_ns"].get<double>()) << e;
    EXPECT_LE(e["median_ns"].get<double>(), e["max_ns"].get<double>()) << e;
  }
  o = run({"bench", "--bytecode", "1,6 0 0 1", "--synthetic", "1000", "--engine", "all", "--runs", "2"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("engines interleaved, the order reversed every other round"), std::string::npos) << o.out;
  o = run({"bench", "--expr", "ip", "--pcap", capture("vrrp.pcap"), "--packets", "5000"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("jit"), std::string::npos);  // the default engine
  o = run({"bench", "--expr", "ip", "--synthetic", "1000", "--engine", "jit", "--jit-harden", "--json"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(o.out)["engine"], "jit");
}

// libpcap's bpf_filter reads an ancillary offset as an out-of-range packet load, so a
// libpcap figure for such a program would not be like for like.
TEST(BpfCli, BenchLibpcapRefusesAncillaryLoads) {
  const char* anc = "2,48 0 0 4294963200,22 0 0 0";  // ldb [proto]; ret a
  Out o = run({"bench", "--bytecode", anc, "--synthetic", "100", "--engine", "libpcap"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("ancillary"), std::string::npos) << o.err;
  o = run({"bench", "--bytecode", anc, "--synthetic", "100", "--engine", "all", "--json", "--runs", "1"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.err.find("no libpcap row"), std::string::npos) << o.err;
  auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j.size(), 3u);
  for (const auto& row : j) EXPECT_NE(row["engine"], "libpcap");
}

// check and dump default to the kernel's rules, run to libpcap's: a protochain program
// is refused by the first and filters a capture with the second, the dump's engine line
// naming the JIT, bounded, under --mode userland.
TEST(BpfCli, ModesChooseTheRules) {
  Out o = run({"check", "--expr", "ip protochain 17"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("backward jump"), std::string::npos) << o.err;
  o = run({"check", "--expr", "ip protochain 17", "--mode", "userland"});
  EXPECT_EQ(o.rc, 0) << o.err;
  o = run({"check", "--expr", "ip", "--mode", "bogus"});
  EXPECT_EQ(o.rc, 2);
  o = run({"dump", "--expr", "ip protochain 17", "--mode", "userland"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("engine: jit (x86-64, "), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("fallback"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(", userland rules, bounded at 16777216 charged instructions"), std::string::npos) << o.out;
  o = run({"run", "--expr", "ip protochain 17", "--pcap", capture("vrrp.pcap")});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_FALSE(o.out.empty());
  o = run({"run", "--expr", "ip protochain 17", "--pcap", capture("vrrp.pcap"), "--mode", "kernel"});
  EXPECT_EQ(o.rc, 1);
}

TEST(BpfCli, BinaryExitCodes) {
  auto sh = [](const std::string& cmd) {
    int st = std::system((std::string(PKTPATH_BINARY) + " " + cmd + " >/dev/null 2>&1").c_str());
    return WEXITSTATUS(st);
  };
  EXPECT_EQ(sh("bpf check --bytecode '1,6 0 0 0,'"), 0);
  EXPECT_EQ(sh("bpf check --bytecode '1,7 0 0 0'"), 1);
  EXPECT_EQ(sh("bpf check"), 2);
}

}  // namespace
}  // namespace pktpath::bpf
