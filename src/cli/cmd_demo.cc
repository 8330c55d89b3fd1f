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
    const double without = ab["a"]["level_pps"].get<double>(), with = ab["b"]["level_pps"].get<double>();
    return without > 0 ? with / without : 0;
  };
  const double without = after["a"]["level_pps"].get<double>();
  return {"000", "nf egress hook beside tc egress", "x0.987 before fix, ~x1.0 after",
          fmt("%.0f Mb/s without the hook point (%.1f Mpps)", without * size_bits / 1e6, without / 1e6, 0),
          fmt("x%.3f before fix -> x%.3f after", ratio(before), ratio(after), 0)};
}

Row doc001(const char* secs) {
  auto docs = run_lines({"ip link add dev mq0 numtxqueues 2 type dummy", "ip link set dev mq0 up",
                         "tc qdisc add dev mq0 root handle 1: mq",
                         std::string("pktgen -i mq0 -n 0 -t 1 --duration ") + secs + " --repeat 3 --ab bypass=on|off"});
  const nlohmann::json& ab = docs.back();
  double on = ab["a"]["level_pps"].get<double>(), off = ab["b"]["level_pps"].get<double>();
  return {"001", "pfifo_fast bypass (mq, 1 thread)", "2465 -> 2889 kpps (x1.17)",
          fmt("%.0f -> %.0f kpps (off -> on)", off / 1e3, on / 1e3), fmt("x%.2f", off > 0 ? on / off : 0)};
}

// The median pps of a pktgen line's JSON: repeated runs carry median_pps, one run its total.
double pps_of(const nlohmann::json& j) {
  return j.contains("median_pps") ? j["median_pps"].get<double>() : j["total"]["pps"].get<double>();
}

// Document 002's flow: veth a -> b, b steering by RPS to CPU 1, which frees remotely;
// the defer list on vs off, alternated in one run; and the cycles the patch saves per
// flush (bench micro's lock rows).
Row doc002(const char* secs) {
  auto docs = run_lines({"ip link add a type veth peer name b", "ip link set dev a up", "ip link set dev b up",
                         "ip link set dev b rps_cpus 2",
                         std::string("pktgen -i a -n 0 -f 0 --pin --duration ") + secs +
                             " --repeat 3 --ab defer_free=on|off"});
  const nlohmann::json& ab = docs.back();
  const double on = ab["a"]["level_pps"].get<double>(), off = ab["b"]["level_pps"].get<double>();
  MicroBenchOptions o;
  o.filter = "spin_lock";
  o.runs = 5;
  double plain = 0, save = 0;
  for (const auto& r : run_micro_benchmarks(o)) {
    if (r.name == "spin_lock_unlock") plain = r.cycles_per_op;
    if (r.name == "spin_lock_unlock_irqsave") save = r.cycles_per_op;
  }
  return {"002", "defer list; flush irqsave -> plain", "48 -> 34 cycles, no pps change",
          fmt("veth 2 CPUs: %.2f Mpps on, %.2f off", on / 1e6, off / 1e6, 0),
          fmt("x%.2f on/off; %.1f cycles saved/flush", off > 0 ? on / off : 0, save - plain, 0)};
}

// Document 003 as run: echo requests flooded on lo and answered, tcpdump's filter on lo;
// ns per request without the tap and with it on each engine.
Row doc003(uint64_t packets) {
  const std::string pg = "pktgen -i lo -n " + std::to_string(packets) + " --icmp -s 98 -m 00:00:00:00:00:00 -d 192.168.2.2 -f 0 --pin";
  auto docs = run_lines({"sysctl -w net.ipv4.icmp_echo_ignore_all=0", "ip link set dev lo up", pg,
                         "tcpdump -p -n -s 0 -i lo -w /dev/null net 192.168.2.0/24", pg + " --ab bpf_engine=switch|threaded",
                         "sysctl -w net.pktpath.bpf_engine=jit", pg, "tcpdump stop -i lo"});
  // The pktgen lines' documents, in order: no tap, the A/B, the JIT.
  std::vector<const nlohmann::json*> pg_docs;
  for (const auto& d : docs)
    if (d.is_object() && (d.contains("total") || d.contains("setting"))) pg_docs.push_back(&d);
  if (pg_docs.size() != 3) throw std::runtime_error("demo 003: unexpected output");
  const double none = pps_of(*pg_docs[0]);
  const double sw = (*pg_docs[1])["a"]["level_pps"].get<double>(), th = (*pg_docs[1])["b"]["level_pps"].get<double>();
  const double jit = pps_of(*pg_docs[2]);
  auto ns = [](double pps) { return pps > 0 ? 1e9 / pps : 0; };
  return {"003", "BPF interpreter as threaded code", "~80 ns/pkt saved (Core 2)",
          fmt("lo echo: %.0f ns/req, tap sw %.0f th %.0f", ns(none), ns(sw), ns(th)),
          fmt("tap cost x%.2f threaded/sw, jit %.0f ns/req", ns(sw) > 0 ? ns(th) / ns(sw) : 0, ns(jit), 0)};
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
  std::printf("  002 defer list: veth a -> b, RPS to CPU 1, A/B defer_free=on|off ...\n");
  std::fflush(stdout);
  rows.push_back(doc002(secs));
  std::printf("  003 classic BPF: ICMP echo flood on lo under tcpdump net 192.168.2.0/24 ...\n");
  std::fflush(stdout);
  rows.push_back(doc003(quick ? 100'000 : 1'000'000));
  print_rows(rows);
  return 0;
}

CommandRegistration reg("demo", "the built-in demo (also: no arguments): `demo [--quick]`", cmd_demo);

}  // namespace
}  // namespace pktpath::cli
