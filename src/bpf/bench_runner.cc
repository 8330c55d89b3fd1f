#include "bpf/bench_runner.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <chrono>

namespace pktpath::bpf {

namespace {

template <class Fn>
uint64_t pass(const std::vector<PacketView>& views, uint64_t packets, Fn&& fn, uint64_t* sink) {
  uint64_t acc = 0, done = 0;
  const size_t n = views.size();
  while (done < packets) {
    size_t m = std::min<uint64_t>(n, packets - done);
    for (size_t i = 0; i < m; ++i) acc += fn(views[i]) != 0;
    done += m;
  }
  *sink += acc;
  return acc;
}

}  // namespace

BenchResult bench_engine(const Program* prog, const Insns& insns, const std::vector<PacketView>& views,
                         uint64_t packets, int runs) {
  BenchResult r;
  r.engine = prog ? engine_name(prog->engine()) : "libpcap";
  r.packets = packets;
  r.runs = runs;
  if (views.empty() || packets == 0 || runs <= 0) return r;
  const auto* code = reinterpret_cast<const bpf_insn*>(insns.data());
  auto run_libpcap = [code](const PacketView& v) -> uint32_t {
    return bpf_filter(code, v.data, v.wire_len, v.len);
  };
  auto run_prog = [prog](const PacketView& v) -> uint32_t { return prog->run(v); };
  uint64_t sink = 0;
  // One untimed pass warms caches and counts accepted packets.
  r.accepted = prog ? pass(views, views.size(), run_prog, &sink) : pass(views, views.size(), run_libpcap, &sink);
  std::vector<double> ns;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (prog)
      pass(views, packets, run_prog, &sink);
    else
      pass(views, packets, run_libpcap, &sink);
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(packets));
  }
  asm volatile("" : : "r"(sink) : "memory");
  std::sort(ns.begin(), ns.end());
  r.min_ns = ns.front();
  r.max_ns = ns.back();
  r.ns_per_packet = ns[ns.size() / 2];
  r.mpps = r.ns_per_packet > 0 ? 1e3 / r.ns_per_packet : 0;
  return r;
}

}  // namespace pktpath::bpf
