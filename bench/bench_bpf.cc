// Classic BPF engines side by side (document 003): switch, threaded code and libpcap's
// bpf_filter over the synthetic packet set, for the filters of docs/benchmarks.md.
// Each iteration runs the filter on one packet, cycling through 4096 cache-resident
// frames; Google Benchmark's time/iteration is the ns per packet.
#include <pcap/pcap.h>

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bpf/packet_set.h"
#include "bpf/parse.h"
#include "bpf/program.h"

using namespace pktpath::bpf;

namespace {

struct Filter {
  const char* name;
  const char* expr;      // pcap-filter expression, or nullptr for `bytecode`
  const char* bytecode;
};

const Filter kFilters[] = {
    {"net_192.168.2.0/24", "net 192.168.2.0/24", nullptr},
    {"udp_port_53", "udp and port 53", nullptr},
    {"tcp_syn", "tcp[tcpflags] & tcp-syn != 0", nullptr},
    {"ip6_or_arp", "ip6 or arp", nullptr},
    {"accept_1insn", nullptr, "1,6 0 0 65535"},
};

const PacketSet& packets() {
  static PacketSet set = make_synthetic(4096);
  return set;
}

Insns program_of(const Filter& f) {
  Insns p;
  std::string err;
  bool ok = f.expr ? compile_expression(f.expr, CompileOptions{}, &p, &err) : parse_bytecode(f.bytecode, &p, &err);
  if (!ok) std::abort();
  return p;
}

void bench_engine(benchmark::State& st, Filter f, Engine e) {
  Insns insns = program_of(f);
  std::string err;
  auto prog = Program::load(insns, e, &err);
  if (!prog) {
    st.SkipWithError(err.c_str());
    return;
  }
  const auto& views = packets().views();
  size_t i = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(prog->run(views[i]));
    i = (i + 1) & 4095;
  }
  st.SetItemsProcessed(st.iterations());
  st.counters["insns"] = static_cast<double>(insns.size());
}

void bench_libpcap(benchmark::State& st, Filter f) {
  Insns insns = program_of(f);
  const auto* code = reinterpret_cast<const bpf_insn*>(insns.data());
  const auto& views = packets().views();
  size_t i = 0;
  for (auto _ : st) {
    const PacketView& v = views[i];
    benchmark::DoNotOptimize(bpf_filter(code, v.data, v.wire_len, v.len));
    i = (i + 1) & 4095;
  }
  st.SetItemsProcessed(st.iterations());
  st.counters["insns"] = static_cast<double>(insns.size());
}

int register_all() {
  for (const Filter& f : kFilters) {
    benchmark::RegisterBenchmark((std::string("bpf/") + f.name + "/switch").c_str(), bench_engine, f, Engine::Switch);
    benchmark::RegisterBenchmark((std::string("bpf/") + f.name + "/threaded").c_str(), bench_engine, f, Engine::Threaded);
    benchmark::RegisterBenchmark((std::string("bpf/") + f.name + "/libpcap").c_str(), bench_libpcap, f);
  }
  return 0;
}
int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
