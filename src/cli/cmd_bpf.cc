// `pktpath bpf check|dump|run|bench SRC ...` — the classic BPF machine from the command
// line (the contract in docs/cli.md):
//   SRC := --bytecode 'N,c jt jf k,...' | --bytecode-file F | --expr 'pcap filter'
//   check SRC [--mode M]      exit 0 valid, 1 rejected (reason on stderr)
//   dump  SRC [-d|-dd|-ddd]   one listing as `tcpdump -d|-dd|-ddd` prints it; without
//                             one: the -ddd listing, the -d disassembly and the engine
//   run   SRC --pcap FILE [--engine switch|threaded|jit]   (default: default_engine(), the JIT)
//                             one decimal result per packet, one per line
//   bench SRC (--pcap FILE | --synthetic N) [--engine E|all] [--json] [--runs R] [--packets P]
// --expr compiles for EN10MB/262144, or with --pcap for the file's own link type and
// snapshot length (as tcpdump -r); --linktype/--snaplen override; --no-optimize.
// --mode kernel|userland: the acceptance rules (bpf/check.h). check and dump default to
// the kernel's (what a socket, cls_bpf or a tap takes); run and bench, which filter
// offline captures, to libpcap's userland rules, as libpcap does for a savefile.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bpf/bench_runner.h"
#include "bpf/check.h"
#include "bpf/disasm.h"
#include "bpf/jit.h"
#include "bpf/packet_set.h"
#include "bpf/parse.h"
#include "bpf/program.h"
#include "cli/command.h"
#include "base/json_text.h"

namespace pktpath::cli {

namespace {

using namespace pktpath::bpf;

constexpr const char* kUsage =
    "usage: pktpath bpf check|dump|run|bench SRC [options]\n"
    "  SRC := --bytecode 'N,code jt jf k,...' | --bytecode-file FILE | --expr 'pcap filter'\n"
    "  check SRC [--mode M]           validate (exit 1 + reason if rejected); M: kernel (default)\n"
    "                                 or userland (libpcap's rules: backward jumps allowed)\n"
    "  dump SRC [-d|-dd|-ddd|--ddd|--disasm] [--engine E]\n"
    "                                 -ddd listing, disassembly and the engine that runs it;\n"
    "                                 -d, -dd, -ddd: that listing alone, as tcpdump prints it\n"
    "  run SRC --pcap FILE [--engine switch|threaded|jit]\n"
    "                                 one decimal return value per packet, one per line\n"
    "  bench SRC (--pcap FILE | --synthetic N) [--engine switch|threaded|jit|libpcap|all]\n"
    "            [--json] [--runs R] [--packets P]\n"
    "  --expr options: --linktype NAME|NUM, --snaplen N, --no-optimize\n"
    "  --jit-harden                   blind the JIT's constants (as bpf_jit_harden)\n"
    "  --mode kernel|userland         acceptance rules (run, bench: userland by default)\n"
    "  default engine: jit (PKTPATH_BPF_ENGINE=switch|threaded|jit forces another)\n";

struct Args {
  std::string sub;
  std::map<std::string, std::string> opt;  // options with values
  std::vector<std::string> flags;          // options without
  bool has(const std::string& k) const { return opt.count(k) != 0; }
  bool flag(const std::string& f) const {
    for (const auto& x : flags)
      if (x == f) return true;
    return false;
  }
};

const char* const kValueOptions[] = {"--bytecode", "--bytecode-file", "--expr", "--pcap", "--engine",
                                     "--linktype", "--snaplen", "--synthetic", "--runs", "--packets",
                                     "--mode"};
const char* const kFlagOptions[] = {"--json", "--no-optimize", "--ddd", "--disasm", "--jit-harden",
                                    "-d", "-dd", "-ddd"};

// Returns an empty string, or the usage error.
std::string parse_args(const std::vector<std::string>& in, Args* a) {
  if (in.empty()) return "bpf: missing subcommand (check, dump, run, bench)";
  a->sub = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    std::string k = in[i], v;
    bool inline_value = false;
    if (auto eq = k.find('='); eq != std::string::npos && k.rfind("--", 0) == 0) {
      v = k.substr(eq + 1);
      k = k.substr(0, eq);
      inline_value = true;
    }
    bool known = false;
    for (const char* o : kValueOptions) {
      if (k != o) continue;
      known = true;
      if (!inline_value) {
        if (i + 1 >= in.size()) return fmt::format("bpf {}: {} needs a value", a->sub, k);
        v = in[++i];
      }
      if (a->opt.count(k)) return fmt::format("bpf {}: {} given twice", a->sub, k);
      a->opt[k] = v;
    }
    for (const char* f : kFlagOptions) {
      if (k != f) continue;
      if (inline_value) return fmt::format("bpf {}: {} takes no value", a->sub, k);
      known = true;
      a->flags.push_back(k);
    }
    if (!known) return fmt::format("bpf {}: unknown argument '{}'", a->sub, in[i]);
  }
  int srcs = a->has("--bytecode") + a->has("--bytecode-file") + a->has("--expr");
  if (srcs != 1)
    return fmt::format("bpf {}: give exactly one of --bytecode, --bytecode-file, --expr", a->sub);
  return {};
}

bool parse_uint(const std::string& s, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Usage problems in option values -> 2; the caller maps false + msg to exit status.
struct Failure {
  int status;
  std::string msg;
};

// Loads the program source. `pcap` (optional) is the capture the program will run on.
std::optional<Failure> load_source(const Args& a, Insns* prog) {
  std::string err;
  if (a.has("--bytecode")) {
    if (!parse_bytecode(a.opt.at("--bytecode"), prog, &err)) return Failure{1, "bytecode: " + err};
    return std::nullopt;
  }
  if (a.has("--bytecode-file")) {
    if (!read_bytecode_file(a.opt.at("--bytecode-file"), prog, &err)) return Failure{1, err};
    return std::nullopt;
  }
  CompileOptions co;
  co.optimize = !a.flag("--no-optimize");
  bool override_dlt = a.has("--linktype"), override_snap = a.has("--snaplen");
  if (override_dlt) {
    co.linktype = parse_linktype(a.opt.at("--linktype"));
    if (co.linktype < 0) return Failure{2, fmt::format("unknown --linktype '{}'", a.opt.at("--linktype"))};
  }
  if (override_snap) {
    uint64_t s;
    if (!parse_uint(a.opt.at("--snaplen"), 1, 0x7fffffff, &s))
      return Failure{2, fmt::format("bad --snaplen '{}'", a.opt.at("--snaplen"))};
    co.snaplen = static_cast<int>(s);
  }
  if (a.has("--pcap")) {
    if (!override_dlt && !override_snap) {
      co.savefile = a.opt.at("--pcap");  // the file's own link type and snaplen
    } else {
      PacketSet s;
      if (!read_pcap(a.opt.at("--pcap"), &s, &err)) return Failure{1, err};
      if (!override_dlt) co.linktype = s.linktype;
      if (!override_snap) co.snaplen = s.snaplen;
    }
  }
  if (!compile_expression(a.opt.at("--expr"), co, prog, &err)) return Failure{1, err};
  return std::nullopt;
}

int fail(const Failure& f, const std::string& sub) {
  if (f.status == 2) return usage_error("bpf " + sub + ": " + f.msg);
  std::fprintf(stderr, "pktpath bpf %s: %s\n", sub.c_str(), f.msg.c_str());
  return 1;
}

// Without --engine: the default filter engine (the JIT unless PKTPATH_BPF_ENGINE forces
// an interpreter).
std::optional<Engine> engine_arg(const Args& a, std::string* name) {
  *name = a.has("--engine") ? a.opt.at("--engine") : engine_name(default_engine());
  return parse_engine(*name);
}

// --mode, or the subcommand's default; nullopt for a bad value.
std::optional<Acceptance> mode_arg(const Args& a, Acceptance dflt) {
  if (!a.has("--mode")) return dflt;
  const std::string& m = a.opt.at("--mode");
  if (m == "kernel") return Acceptance::Kernel;
  if (m == "userland") return Acceptance::Userland;
  return std::nullopt;
}

JitOptions jit_options(const Args& a) {
  JitOptions o;
  o.blind = a.flag("--jit-harden");
  return o;
}

// "engine: jit (x86-64, N bytes, P passes[, predicated[ in R regions]])" or "engine: threaded (jit fallback: why)", and
// ", bounded" for a userland program run under kUserlandBound.
std::string engine_line(const Program& p) {
  std::string s = std::string("engine: ") + engine_name(p.engine());
  if (const JitCode* jc = jit_code_of(p.image()))
    s += fmt::format(" (x86-64, {} bytes, {} passes{}{}{})", jc->code_len, jc->passes,
                     jc->predicated ? ", predicated" : "",
                     jc->regions > 1 ? fmt::format(" in {} regions", jc->regions) : std::string(),
                     jc->blinded ? ", constants blinded" : "");
  else if (!p.jit_fallback_reason().empty())
    s += " (jit fallback: " + p.jit_fallback_reason() + ")";
  if (p.bounded()) s += fmt::format(", userland rules, bounded at {} charged instructions", kUserlandBound);
  return s;
}

int do_check(const Args& a, const Insns& prog) {
  auto mode = mode_arg(a, Acceptance::Kernel);
  if (!mode) return usage_error("bpf check: unknown --mode '" + a.opt.at("--mode") + "' (kernel, userland)");
  CheckResult r = check_program(prog, *mode);
  if (!r.ok) {
    std::fprintf(stderr, "pktpath bpf check: rejected (%s rules): %s\n", acceptance_name(*mode),
                 r.reason.c_str());
    return 1;
  }
  std::printf("ok: %zu instructions\n", prog.size());
  return 0;
}

int do_dump(const Args& a, const Insns& prog) {
  // -d, -dd, -ddd: exactly what `tcpdump -d|-dd|-ddd` prints (bpf_dump), nothing else on
  // stdout. --ddd is -ddd and --disasm is -d; with neither, both and the engine line.
  int listings = 0;
  for (const char* f : {"-d", "-dd", "-ddd"}) listings += a.flag(f);
  if (listings > 1 || (listings == 1 && (a.flag("--ddd") || a.flag("--disasm"))))
    return usage_error("bpf dump: give one of -d, -dd, -ddd (or --ddd, --disasm)");
  const bool only = listings == 1;
  bool ddd = a.flag("-ddd") || a.flag("--ddd") || (!only && !a.flag("--disasm"));
  bool dis = a.flag("-d") || a.flag("--disasm") || (!only && !a.flag("--ddd"));
  if (a.flag("-dd")) std::fputs(format_dd(prog).c_str(), stdout);
  if (ddd) std::fputs(format_ddd(prog).c_str(), stdout);
  if (ddd && dis) std::fputs("\n", stdout);
  if (dis) std::fputs(disassemble(prog).c_str(), stdout);
  auto mode = mode_arg(a, Acceptance::Kernel);
  if (!mode) return usage_error("bpf dump: unknown --mode '" + a.opt.at("--mode") + "' (kernel, userland)");
  CheckResult r = check_program(prog, *mode);
  if (!r.ok) {
    std::fprintf(stderr, "pktpath bpf dump: note: the checker (%s rules) rejects it: %s\n",
                 acceptance_name(*mode), r.reason.c_str());
    return 0;
  }
  // Which engine runs it (the default, or --engine): the JIT, or the threaded engine
  // when the JIT could not compile it.
  std::string ename, err;
  auto engine = engine_arg(a, &ename);
  if (!engine) return usage_error("bpf dump: unknown --engine '" + ename + "'");
  if (!(ddd && dis)) return 0;
  auto p = Program::load(prog, *engine, *mode, jit_options(a), &err);
  if (p) std::printf("\n%s\n", engine_line(*p).c_str());
  return 0;
}

int do_run(const Args& a, const Insns& prog) {
  if (!a.has("--pcap")) return usage_error("bpf run: --pcap FILE is required");
  std::string ename, err;
  auto engine = engine_arg(a, &ename);
  if (!engine || ename == "libpcap") return usage_error("bpf run: unknown --engine '" + ename + "'");
  auto mode = mode_arg(a, Acceptance::Userland);
  if (!mode) return usage_error("bpf run: unknown --mode '" + a.opt.at("--mode") + "' (kernel, userland)");
  // A read error (a file cut mid-record) still runs the packets before it, then reports
  // the error, as tcpdump does.
  PacketSet set;
  std::string read_err;
  const bool read_ok = read_pcap(a.opt.at("--pcap"), &set, &read_err);
  auto p = Program::load(prog, *engine, *mode, jit_options(a), &err);
  if (!p) return fail({1, err}, "run");
  std::string out;
  out.reserve(set.size() * 8);
  for (const PacketView& v : set.views()) {
    out += std::to_string(p->run(v));
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (!read_ok) return fail({1, read_err}, "run");
  return 0;
}

nlohmann::json bench_json(const BenchResult& r) {
  return {{"engine", r.engine},     {"packets", r.packets}, {"ns_per_packet", r.ns_per_packet},
          {"mpps", r.mpps},         {"min_ns", r.min_ns},   {"max_ns", r.max_ns},
          {"median_ns", r.ns_per_packet}, {"runs", r.runs}, {"accepted", r.accepted}};
}

// Packets per bench run: a billion takes seconds on any engine; more only hangs.
constexpr uint64_t kMaxBenchPackets = 1'000'000'000;

int do_bench(const Args& a, const Insns& prog) {
  if (a.has("--pcap") == a.has("--synthetic"))
    return usage_error("bpf bench: give exactly one of --pcap FILE, --synthetic N");
  uint64_t runs = 5, packets = 0;
  if (a.has("--runs") && !parse_uint(a.opt.at("--runs"), 1, 1000, &runs))
    return usage_error("bpf bench: bad --runs '" + a.opt.at("--runs") + "' (1..1000)");
  if (a.has("--packets") && !parse_uint(a.opt.at("--packets"), 1, kMaxBenchPackets, &packets))
    return usage_error("bpf bench: bad --packets '" + a.opt.at("--packets") + "' (1.." +
                       std::to_string(kMaxBenchPackets) + ")");
  std::string ename = a.has("--engine") ? a.opt.at("--engine") : engine_name(default_engine());
  std::vector<std::string> names;
  if (ename == "all")
    names = {"switch", "threaded", "jit", "libpcap"};
  else if (ename == "libpcap" || parse_engine(ename))
    names = {ename};
  else
    return usage_error("bpf bench: unknown --engine '" + ename + "'");
  auto mode = mode_arg(a, Acceptance::Userland);
  if (!mode) return usage_error("bpf bench: unknown --mode '" + a.opt.at("--mode") + "' (kernel, userland)");
  // libpcap's bpf_filter knows no ancillary loads (it reads them as out-of-range packet
  // offsets): a comparison on such a program would not be like for like.
  const bool ancillary = view_needs(prog) & kViewNeedsMeta;
  if (ancillary && ename == "libpcap")
    return fail({1, "libpcap's bpf_filter cannot run ancillary loads (SKF_AD_*): no like-for-like figure"},
                "bench");
  if (ancillary && ename == "all") {
    std::fprintf(stderr, "pktpath bpf bench: note: the program has ancillary loads, which libpcap's "
                         "bpf_filter cannot run: no libpcap row\n");
    names.pop_back();
  }
  std::string err;
  PacketSet set;
  if (a.has("--pcap")) {
    if (!read_pcap(a.opt.at("--pcap"), &set, &err)) return fail({1, err}, "bench");
    if (set.size() == 0) return fail({1, a.opt.at("--pcap") + ": no packets"}, "bench");
    if (!packets) packets = std::max<uint64_t>(set.size(), 1000000);
  } else {
    uint64_t n;
    if (!parse_uint(a.opt.at("--synthetic"), 1, kMaxBenchPackets, &n))
      return usage_error("bpf bench: bad --synthetic '" + a.opt.at("--synthetic") + "' (1.." +
                         std::to_string(kMaxBenchPackets) + ")");
    // Up to 4096 distinct frames, cycled: cache-resident packets, as the reference
    // figures were measured, so the filter's own cost is what shows.
    set = make_synthetic(std::min<uint64_t>(n, 4096));
    if (!packets) packets = n;
  }
  // Every engine loaded first (libpcap: none), then timed in rounds: one run of each per
  // round, the order reversed every other round, so no engine always runs first.
  std::vector<std::optional<Program>> progs;
  for (const std::string& name : names) {
    if (name == "libpcap") {
      if (CheckResult c = check_program(prog, *mode); !c.ok) return fail({1, c.reason}, "bench");
      progs.emplace_back();
      continue;
    }
    auto p = Program::load(prog, *parse_engine(name), *mode, jit_options(a), &err);
    if (!p) return fail({1, err}, "bench");
    progs.push_back(std::move(p));
  }
  std::vector<std::vector<double>> ns(names.size());
  std::vector<BenchResult> results(names.size());
  for (uint64_t round = 0; round < runs; ++round) {
    for (size_t k = 0; k < names.size(); ++k) {
      const size_t i = round % 2 ? names.size() - 1 - k : k;
      results[i] = bench_engine(progs[i] ? &*progs[i] : nullptr, prog, set.views(), packets, 1);
      ns[i].push_back(results[i].ns_per_packet);
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {  // median, min and max over the rounds
    std::sort(ns[i].begin(), ns[i].end());
    BenchResult& r = results[i];
    r.runs = static_cast<int>(runs);
    r.min_ns = ns[i].front();
    r.max_ns = ns[i].back();
    r.ns_per_packet = ns[i][ns[i].size() / 2];
    r.mpps = r.ns_per_packet > 0 ? 1e3 / r.ns_per_packet : 0;
  }
  if (a.flag("--json")) {
    if (results.size() == 1) {
      std::printf("%s\n", json_text(bench_json(results[0])).c_str());
    } else {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& r : results) arr.push_back(bench_json(r));
      std::printf("%s\n", json_text(arr).c_str());
    }
    return 0;
  }
  std::printf("%-9s %12s %10s %9s %9s %8s %10s\n", "engine", "packets", "ns/pkt", "min_ns", "max_ns", "Mpps",
              "accepted");
  for (const auto& r : results)
    std::printf("%-9s %12llu %10.2f %9.2f %9.2f %8.1f %10llu/%zu\n", r.engine.c_str(),
                static_cast<unsigned long long>(r.packets), r.ns_per_packet, r.min_ns, r.max_ns, r.mpps,
                static_cast<unsigned long long>(r.accepted), set.size());
  std::printf("(%zu instructions, median of %llu runs%s)\n", prog.size(), static_cast<unsigned long long>(runs),
              names.size() > 1 ? "; engines interleaved, the order reversed every other round" : "");
  return 0;
}

int cmd_bpf(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Args a;
  if (std::string e = parse_args(args, &a); !e.empty()) {
    std::fputs(kUsage, stderr);
    return usage_error(e);
  }
  if (a.sub != "check" && a.sub != "dump" && a.sub != "run" && a.sub != "bench") {
    std::fputs(kUsage, stderr);
    return usage_error("bpf: unknown subcommand '" + a.sub + "'");
  }
  Insns prog;
  if (auto f = load_source(a, &prog)) return fail(*f, a.sub);
  return a.sub == "check" ? do_check(a, prog)
         : a.sub == "dump" ? do_dump(a, prog)
         : a.sub == "run"  ? do_run(a, prog)
                           : do_bench(a, prog);
}

CommandRegistration reg("bpf", "classic BPF: `bpf check|dump|run|bench SRC ...`", cmd_bpf);

}  // namespace
}  // namespace pktpath::cli
