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
  std::printf("\n%-4s  %-34s  %-30s  %-40s  %s\n", "doc", "claim", "kernel (the document)", "pktpath (here)",
              "effect here (95% CI)");
  for (const Row& r : rows)
    std::printf("%-4s  %-34s  %-30s  %-40s  %s\n", r.doc.c_str(), r.claim.c_str(), r.kernel.c_str(), r.here.c_str(),
                r.effect.c_str());
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char s[160];
  std::snprintf(s, sizeof s, f, a, b, c);
  return s;
}

// How long each compared run lasts and how many ABBA rounds an A/B line makes.
struct DemoPace {
  const char* secs;
  unsigned rounds;
};

// One `pktgen --ab` line's figures: the slot-balanced effect A/B with its bootstrap 95 %
// interval, and each side's level.
struct AbFigures {
  double effect = 0, low = 0, high = 0, a_pps = 0, b_pps = 0;
};

AbFigures ab_figures(const nlohmann::json& ab) {
  return {ab["effect"].get<double>(),       ab["effect_ci_low"].get<double>(), ab["effect_ci_high"].get<double>(),
          ab["a"]["level_pps"].get<double>(), ab["b"]["level_pps"].get<double>()};
}

// "x0.998 (0.991-1.004)": an effect with its interval.
std::string effect_text(const AbFigures& f) { return fmt("x%.3f (%.3f-%.3f)", f.effect, f.low, f.high); }

// The verdict a reader takes from an effect: within 3 % of 1 (the spread of repeated
// demo runs on an idle machine) it is "no change", otherwise its direction.
const char* verdict(const AbFigures& f) {
  if (f.effect >= 0.97 && f.effect <= 1.03) return "no change";
  return f.effect > 1 ? "faster" : "slower";
}

std::string ab_line(const std::string& head, const DemoPace& p, const std::string& ab) {
  return head + " --duration " + p.secs + " --repeat " + std::to_string(p.rounds) + " --ab " + ab;
}

// Document 000's comparison: the tc egress path (clsact + `bpf da '1,6 0 0 0,'`) with the
// netfilter egress check in the hook (no chain attached) over without it, before the fix
// (`nf_hook_point=before_fix`: the hooks called through the hook pointer) and after it
// (`on`: the netfilter check a predictable branch on the inline path). The document:
// 1850 / 1877 Mb/s with the hook before the fix (x0.987), 1876 after (x1.0).
Row doc000(const DemoPace& p) {
  const std::string pg = "pktgen -i foo -n 0 -m 11:11:11:11:11:11 -d 1.1.1.1";
  auto docs = run_lines({"ip link add dev foo type dummy", "ip link set dev foo up", "tc qdisc add dev foo clsact",
                         "tc filter add dev foo egress bpf da bytecode '1,6 0 0 0,'",
                         ab_line(pg, p, "nf_hook_point=before_fix|off"), ab_line(pg, p, "nf_hook_point=on|off")});
  const AbFigures before = ab_figures(docs[docs.size() - 2]), after = ab_figures(docs.back());
  const double size_bits = 60 * 8.0;
  return {"000", "nf egress hook beside tc egress", "x0.987 before fix, x1.0 after",
          fmt("%.0f Mb/s without the hook point (%.1f Mpps)", after.b_pps * size_bits / 1e6, after.b_pps / 1e6),
          effect_text(before) + " before fix, " + verdict(before) + "; " + effect_text(after) + " after, " +
              verdict(after)};
}

Row doc001(const DemoPace& p) {
  auto docs = run_lines({"ip link add dev mq0 numtxqueues 2 type dummy", "ip link set dev mq0 up",
                         "tc qdisc add dev mq0 root handle 1: mq", ab_line("pktgen -i mq0 -n 0 -t 1", p, "bypass=on|off")});
  const AbFigures f = ab_figures(docs.back());
  return {"001", "pfifo_fast bypass (mq, 1 thread)", "2465 -> 2889 kpps (x1.17)",
          fmt("%.0f -> %.0f kpps (off -> on)", f.b_pps / 1e3, f.a_pps / 1e3), effect_text(f) + " on/off, " + verdict(f)};
}

// Document 002's flow: veth a -> b, b steering by RPS to CPU 1, which frees remotely;
// the defer list on over off; and the cycles the patch saves per flush (bench micro's
// lock rows).
Row doc002(const DemoPace& p) {
  auto docs = run_lines({"ip link add a type veth peer name b", "ip link set dev a up", "ip link set dev b up",
                         "ip link set dev b rps_cpus 2", ab_line("pktgen -i a -n 0 -f 0 --pin", p, "defer_free=on|off")});
  const AbFigures f = ab_figures(docs.back());
  MicroBenchOptions o;
  o.filter = "spin_lock";
  o.runs = 5;
  double plain = 0, save = 0;
  for (const auto& r : run_micro_benchmarks(o)) {
    if (r.name == "spin_lock_unlock") plain = r.cycles_per_op;
    if (r.name == "spin_lock_unlock_irqsave") save = r.cycles_per_op;
  }
  return {"002", "defer list; flush irqsave -> plain", "48 -> 34 cycles, no pps change",
          fmt("veth 2 CPUs: %.2f Mpps on, %.2f off; %.1f cycles saved/flush", f.a_pps / 1e6, f.b_pps / 1e6,
              save - plain),
          effect_text(f) + " on/off, " + verdict(f)};
}

// The median pps of a pktgen line's JSON: repeated runs carry median_pps, one run its total.
double pps_of(const nlohmann::json& j) {
  return j.contains("median_pps") ? j["median_pps"].get<double>() : j["total"]["pps"].get<double>();
}

// Document 003 as run: echo requests flooded on lo and answered, tcpdump's filter on lo;
// the switch interpreter over the threaded one, and what the threaded one saves per
// request (its time per request x (pps ratio - 1), the interval from the ratio's).
Row doc003(const DemoPace& p, uint64_t packets) {
  const std::string pg = "pktgen -i lo -n " + std::to_string(packets) +
                         " --icmp -s 98 -m 00:00:00:00:00:00 -d 192.168.2.2 -f 0 --pin";
  auto docs = run_lines({"sysctl -w net.ipv4.icmp_echo_ignore_all=0", "ip link set dev lo up", pg,
                         "tcpdump -p -n -s 0 -i lo -w /dev/null net 192.168.2.0/24",
                         pg + " --repeat " + std::to_string(p.rounds) + " --ab bpf_engine=threaded|switch",
                         "sysctl -w net.pktpath.bpf_engine=jit", pg, "tcpdump stop -i lo"});
  // The pktgen lines' documents, in order: no tap, the A/B, the JIT.
  std::vector<const nlohmann::json*> pg_docs;
  for (const auto& d : docs)
    if (d.is_object() && (d.contains("total") || d.contains("setting"))) pg_docs.push_back(&d);
  if (pg_docs.size() != 3) throw std::runtime_error("demo 003: unexpected output");
  const AbFigures f = ab_figures(*pg_docs[1]);
  auto ns = [](double pps) { return pps > 0 ? 1e9 / pps : 0; };
  const double th = ns(f.a_pps), sw = ns(f.b_pps);
  // threaded/switch pps = effect: the switch's time per request is th * effect.
  auto saved = [th](double effect) { return th * (effect - 1); };
  return {"003", "BPF interpreter as threaded code", "~80 ns/pkt saved (Core 2)",
          fmt("lo echo: %.0f ns/req; tap: switch %.0f, threaded %.0f", ns(pps_of(*pg_docs[0])), sw, th) +
              fmt(", jit %.0f", ns(pps_of(*pg_docs[2]))),
          fmt("%.0f ns/req saved (%.0f-%.0f), ", saved(f.effect), saved(f.low), saved(f.high)) +
              effect_text(f) + " threaded/switch, " + verdict(f)};
}

int cmd_demo(const std::vector<std::string>& args) {
  bool quick = false;
  for (const auto& a : args) {
    if (a == "--quick") quick = true;
    else return usage_error("demo: unknown option '" + a + "' (only --quick)");
  }
  const DemoPace pace = quick ? DemoPace{"0.05", 2} : DemoPace{"0.25", 6};
  std::printf("pktpath demo: the four source documents' measurements, short versions\n");
  std::printf("(full runs: pktpath run examples/seed-00N-*.pp; figures: docs/benchmarks.md)\n");
  std::vector<Row> rows;
  std::printf("  000 egress hooks: dummy + clsact + bpf da '1,6 0 0 0,', pktgen queue_xmit 60 B ...\n");
  std::fflush(stdout);
  rows.push_back(doc000(pace));
  std::printf("  001 pfifo_fast bypass: mq with 2 queues, A/B bypass=on|off ...\n");
  std::fflush(stdout);
  rows.push_back(doc001(pace));
  std::printf("  002 defer list: veth a -> b, RPS to CPU 1, A/B defer_free=on|off ...\n");
  std::fflush(stdout);
  rows.push_back(doc002(pace));
  std::printf("  003 classic BPF: ICMP echo flood on lo under tcpdump net 192.168.2.0/24 ...\n");
  std::fflush(stdout);
  rows.push_back(doc003(pace, quick ? 20'000 : 300'000));
  print_rows(rows);
  return 0;
}

CommandRegistration reg("demo", "the built-in demo (also: no arguments): `demo [--quick]`", cmd_demo);

}  // namespace
}  // namespace pktpath::cli
