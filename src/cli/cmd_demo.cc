// `pktpath` with no arguments (and `make run`): short versions of the four source
// documents' measurements (examples/seed-00*.pp), then one summary table: each
// document's claim, its figure on the kernel, pktpath's figure here, and the effect.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/bench_runner.h"
#include "bpf/packet_set.h"
#include "bpf/parse.h"
#include "cli/command.h"
#include "cli/script.h"
#include "cli/script_exec.h"
#include "tools/micro_bench.h"

namespace pktpath::cli {

namespace {

// Runs script lines on one fresh instance with JSON Lines output and returns the JSON
// documents the lines printed. Throws on a bad line (the demo's scripts are fixed).
std::vector<nlohmann::json> run_lines(const std::vector<std::string>& lines) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  {
    ScriptRunner runner(true, out);
    for (const std::string& line : lines) {
      std::vector<std::string> words;
      ScriptError e;
      ScriptCommand cmd;
      if (!tokenize_line(line, words, e) || !parse_command(words, cmd, e) || !runner.execute(cmd, e))
        throw std::runtime_error("demo line '" + line + "': " + e.msg);
    }
  }
  std::fclose(out);
  std::vector<nlohmann::json> docs;
  std::istringstream in(std::string(buf, len));
  std::free(buf);
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] == '{') docs.push_back(nlohmann::json::parse(l));
  return docs;
}

struct Row {
  std::string doc, claim, kernel, here, effect;
};

void print_rows(const std::vector<Row>& rows) {
  std::printf("\n%-4s  %-34s  %-30s  %-38s  %s\n", "doc", "claim", "kernel (the document)", "pktpath (here)",
              "effect here");
  for (const Row& r : rows)
    std::printf("%-4s  %-34s  %-30s  %-38s  %s\n", r.doc.c_str(), r.claim.c_str(), r.kernel.c_str(), r.here.c_str(),
                r.effect.c_str());
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char s[128];
  std::snprintf(s, sizeof s, f, a, b, c);
  return s;
}

// Document 000's comparison: the tc egress path (clsact + `bpf da '1,6 0 0 0,'`) without
// and with the netfilter egress check in the hook (no chain attached), before the fix
// (`nf_hook_point=before_fix`: the hooks called through the hook pointer) and after it
// (`on`: the netfilter check a predictable branch on the inline path). Each an A/B
// alternated in one run.
Row doc000(const char* secs) {
  const std::string pg = std::string("pktgen -i foo -n 0 -m 11:11:11:11:11:11 -d 1.1.1.1 --duration ") + secs +
                         " --repeat 3 --ab nf_hook_point=off|";
  auto docs = run_lines({"ip link add dev foo type dummy", "ip link set dev foo up", "tc qdisc add dev foo clsact",
                         "tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,'", pg + "before_fix", pg + "on"});
  const nlohmann::json& before = docs[docs.size() - 2];
  const nlohmann::json& after = docs.back();
  const double size_bits = 60 * 8.0;
  auto ratio = [](const nlohmann::json& ab) {
    const double without = ab["a"]["median_pps"].get<double>(), with = ab["b"]["median_pps"].get<double>();
    return without > 0 ? with / without : 0;
  };
  const double without = after["a"]["median_pps"].get<double>();
  return {"000", "nf egress hook beside tc egress", "x0.987 before fix, ~x1.0 after",
          fmt("%.0f Mb/s without the hook point (%.1f Mpps)", without * size_bits / 1e6, without / 1e6, 0),
          fmt("x%.3f before fix -> x%.3f after", ratio(before), ratio(after), 0)};
}

Row doc001(const char* secs) {
  auto docs = run_lines({"ip link add dev mq0 numtxqueues 2 type dummy", "ip link set dev mq0 up",
                         "tc qdisc add dev mq0 root handle 1: mq",
                         std::string("pktgen -i mq0 -n 0 -t 1 --duration ") + secs + " --repeat 3 --ab bypass=on|off"});
  const nlohmann::json& ab = docs.back();
  double on = ab["a"]["median_pps"].get<double>(), off = ab["b"]["median_pps"].get<double>();
  return {"001", "pfifo_fast bypass (mq, 1 thread)", "2465 -> 2889 kpps (x1.17)",
          fmt("%.0f -> %.0f kpps (off -> on)", off / 1e3, on / 1e3), fmt("x%.2f", off > 0 ? on / off : 0)};
}

Row doc002() {
  MicroBenchOptions o;
  o.filter = "spin_lock";
  o.runs = 5;
  double plain = 0, save = 0;
  for (const auto& r : run_micro_benchmarks(o)) {
    if (r.name == "spin_lock_unlock") plain = r.cycles_per_op;
    if (r.name == "spin_lock_unlock_irqsave") save = r.cycles_per_op;
  }
  return {"002", "defer flush: irqsave -> plain lock", "48 -> 34 cycles (14 saved)",
          fmt("%.1f -> %.1f cycles", save, plain), fmt("%.1f cycles saved per flush", save - plain)};
}

Row doc003(uint64_t packets) {
  bpf::Insns insns;
  std::string err;
  if (!bpf::compile_expression("net 192.168.2.0/24", bpf::CompileOptions{}, &insns, &err))
    throw std::runtime_error("demo: " + err);
  bpf::PacketSet set = bpf::make_synthetic(4096);
  double ns[3] = {0, 0, 0};
  const bpf::Engine engines[3] = {bpf::Engine::Switch, bpf::Engine::Threaded, bpf::Engine::Jit};
  for (int i = 0; i < 3; ++i) {
    auto prog = bpf::Program::load(insns, engines[i], &err);
    if (!prog) continue;  // no JIT on this machine: the column stays 0
    ns[i] = bpf::bench_engine(&*prog, insns, set.views(), packets, 3).ns_per_packet;
  }
  return {"003", "BPF interpreter as threaded code", "~80 ns/pkt saved (Core 2)",
          fmt("%.1f -> %.1f ns/pkt, jit %.1f", ns[0], ns[1], ns[2]),
          fmt("x%.2f threaded, x%.2f jit", ns[1] > 0 ? ns[0] / ns[1] : 0, ns[2] > 0 ? ns[0] / ns[2] : 0)};
}

int cmd_demo(const std::vector<std::string>& args) {
  bool quick = false;
  for (const auto& a : args) {
    if (a == "--quick") quick = true;
    else return usage_error("demo: unknown option '" + a + "' (only --quick)");
  }
  const char* secs = quick ? "0.1" : "0.7";
  std::printf("pktpath demo: the four source documents' measurements, short versions\n");
  std::printf("(full runs: pktpath run examples/seed-00N-*.pp; figures: docs/benchmarks.md)\n");
  std::vector<Row> rows;
  std::printf("  000 egress hooks: dummy + clsact + bpf da '1,6 0 0 0,', pktgen queue_xmit 60 B ...\n");
  std::fflush(stdout);
  rows.push_back(doc000(secs));
  std::printf("  001 pfifo_fast bypass: mq with 2 queues, A/B bypass=on|off ...\n");
  std::fflush(stdout);
  rows.push_back(doc001(secs));
  std::printf("  002 defer list flush: time_bench lock rows ...\n");
  std::fflush(stdout);
  rows.push_back(doc002());
  std::printf("  003 classic BPF: net 192.168.2.0/24 over synthetic packets ...\n");
  std::fflush(stdout);
  rows.push_back(doc003(quick ? 200'000 : 3'000'000));
  print_rows(rows);
  return 0;
}

CommandRegistration reg("demo", "the built-in demo (also: no arguments): `demo [--quick]`", cmd_demo);

}  // namespace
}  // namespace pktpath::cli
