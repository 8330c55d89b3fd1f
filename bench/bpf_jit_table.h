// The "BPF JIT" benchmark table (docs/benchmarks.md): the interpreter table's filters on
// a cache-resident synthetic set, ns/packet for switch, threaded, jit (plain and with
// constant blinding) and libpcap's bpf_filter, plus the JIT's compile time and code size.
// bench/bpf_jit.cc prints it; bench/dpdk/bench_dpdk_bpf.cc adds DPDK's rte_bpf columns.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bpf/bench_runner.h"
#include "bpf/jit.h"
#include "bpf/packet_set.h"
#include "bpf/parse.h"
#include "bpf/program.h"

namespace pktpath::bench {

using namespace pktpath::bpf;

struct Filter {
  const char* name;
  Insns insns;
};

inline std::vector<Filter> jit_table_filters() {
  std::vector<Filter> f;
  for (const char* e : {"net 192.168.2.0/24", "udp and port 53", "tcp[tcpflags] & tcp-syn != 0", "ip6 or arp"}) {
    Insns p;
    std::string err;
    if (!compile_expression(e, CompileOptions{}, &p, &err)) {
      std::fprintf(stderr, "%s: %s\n", e, err.c_str());
      std::exit(1);
    }
    f.push_back({e, p});
  }
  f.push_back({"1-insn accept", Insns{{BPF_RET | BPF_K, 0, 0, 65535}}});
  return f;
}

// Microseconds per Program::load(…, Jit): check + emission passes + W^X mapping.
inline double jit_compile_us(const Insns& p, bool blind) {
  JitOptions o;
  o.blind = blind;
  o.allow_fallback = false;
  const int n = 2000;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    auto prog = Program::load(p, Engine::Jit, o, &err);
    if (!prog || prog->engine() != Engine::Jit) std::exit(1);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}

// An extra column: a name and a function giving the cell for a filter (ns/packet, or
// why there is no figure).
struct ExtraColumn {
  std::string name;
  std::function<std::string(const Filter&, const PacketSet&)> cell;
};

inline int print_jit_table(uint64_t packets, int runs, size_t distinct, const std::vector<ExtraColumn>& extra) {
  PacketSet set = make_synthetic(distinct);
  std::printf("%zu distinct synthetic frames (cache-resident), %llu packets per run, median of %d runs\n\n",
              distinct, static_cast<unsigned long long>(packets), runs);
  std::printf("| filter | insns | switch | threaded | jit | jit blinded | libpcap |");
  for (const auto& c : extra) std::printf(" %s |", c.name.c_str());
  std::printf(" jit vs libpcap | jit code (bytes) | jit compile (us) | blinded compile (us) |\n");
  std::printf("|---|---|---|---|---|---|---|");
  for (size_t i = 0; i < extra.size(); ++i) std::printf("---|");
  std::printf("---|---|---|---|\n");
  for (const Filter& f : jit_table_filters()) {
    std::string err;
    auto sw = Program::load(f.insns, Engine::Switch, &err);
    auto th = Program::load(f.insns, Engine::Threaded, &err);
    auto jt = Program::load(f.insns, Engine::Jit, &err);
    JitOptions blind;
    blind.blind = true;
    auto jb = Program::load(f.insns, Engine::Jit, blind, &err);
    if (!sw || !th || !jt || !jb || jt->engine() != Engine::Jit) {
      std::fprintf(stderr, "%s: load failed: %s\n", f.name, err.c_str());
      return 1;
    }
    double s = bench_engine(&*sw, f.insns, set.views(), packets, runs).ns_per_packet;
    double t = bench_engine(&*th, f.insns, set.views(), packets, runs).ns_per_packet;
    double j = bench_engine(&*jt, f.insns, set.views(), packets, runs).ns_per_packet;
    double b = bench_engine(&*jb, f.insns, set.views(), packets, runs).ns_per_packet;
    double l = bench_engine(nullptr, f.insns, set.views(), packets, runs).ns_per_packet;
    std::printf("| `%s` | %zu | %.2f | %.2f | %.2f | %.2f | %.2f |", f.name, f.insns.size(), s, t, j, b, l);
    for (const auto& c : extra) std::printf(" %s |", c.cell(f, set).c_str());
    std::printf(" %.2fx | %zu | %.1f | %.1f |\n", l / j, jit_code_of(jt->image())->code_len,
                jit_compile_us(f.insns, false), jit_compile_us(f.insns, true));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace pktpath::bench
