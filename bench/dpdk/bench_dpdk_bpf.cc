// The BPF JIT table with DPDK's rte_bpf beside pktpath's engines, one run:
//   build/bench/dpdk/bench_dpdk_bpf [packets] [runs] [distinct]
// Each cBPF filter goes through rte_bpf_convert (cBPF -> eBPF), rte_bpf_load and
// rte_bpf_get_jit; packets are wrapped in single-segment rte_mbufs (the converted
// program's context). DPDK's results are compared with libpcap's bpf_filter on every
// distinct packet and mismatches reported: Debian's DPDK 22.11 is known to convert
// byte/word indirect loads wrongly and to mis-encode jset with small constants.
#include <pcap/pcap.h>

// rte_bpf_convert is still an experimental symbol in DPDK 22.11.
#define ALLOW_EXPERIMENTAL_API 1
#include <rte_bpf.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <map>
#include <memory>

#include "bpf_jit_table.h"

namespace {

using namespace pktpath::bench;

// One zeroed, cache-aligned rte_mbuf per packet, pointing at the packet set's bytes.
struct Mbufs {
  std::vector<rte_mbuf*> m;
  explicit Mbufs(const PacketSet& set) {
    for (size_t i = 0; i < set.size(); ++i) {
      auto* mb = static_cast<rte_mbuf*>(std::aligned_alloc(RTE_CACHE_LINE_SIZE, sizeof(rte_mbuf)));
      std::memset(static_cast<void*>(mb), 0, sizeof(rte_mbuf));
      mb->buf_addr = const_cast<uint8_t*>(set.bytes(i));
      mb->buf_len = static_cast<uint16_t>(set.caplen(i));
      mb->data_off = 0;
      mb->data_len = static_cast<uint16_t>(set.caplen(i));
      mb->pkt_len = set.caplen(i);
      mb->nb_segs = 1;
      mb->next = nullptr;
      m.push_back(mb);
    }
  }
  ~Mbufs() {
    for (auto* p : m) std::free(p);
  }
};

struct DpdkProg {
  rte_bpf* bpf = nullptr;
  rte_bpf_jit jit{};
  ~DpdkProg() {
    if (bpf) rte_bpf_destroy(bpf);
  }
};

bool eal_ready = false;

std::unique_ptr<DpdkProg> dpdk_load(const Insns& insns) {
  bpf_program bp;
  bp.bf_len = static_cast<u_int>(insns.size());
  bp.bf_insns = reinterpret_cast<bpf_insn*>(const_cast<Insn*>(insns.data()));
  rte_bpf_prm* prm = rte_bpf_convert(&bp);
  if (!prm && !eal_ready) {
    // rte_bpf_convert allocates from DPDK's heap: bring up a minimal EAL once.
    const char* argv[] = {"bench_dpdk_bpf", "--no-huge", "--no-pci", "--no-shconf", "-l", "0",
                          "--log-level=lib.eal:error", "--no-telemetry"};
    if (rte_eal_init(8, const_cast<char**>(argv)) < 0) {
      std::fprintf(stderr, "rte_eal_init failed\n");
      return nullptr;
    }
    eal_ready = true;
    prm = rte_bpf_convert(&bp);
  }
  if (!prm) {
    std::fprintf(stderr, "rte_bpf_convert failed\n");
    return nullptr;
  }
  auto p = std::make_unique<DpdkProg>();
  p->bpf = rte_bpf_load(prm);
  rte_free(prm);
  if (!p->bpf) {
    std::fprintf(stderr, "rte_bpf_load failed\n");
    return nullptr;
  }
  if (rte_bpf_get_jit(p->bpf, &p->jit) != 0 || !p->jit.func) std::fprintf(stderr, "no DPDK JIT\n");
  return p;
}

std::map<std::string, std::string> g_agreement;

struct DpdkFigures {
  double ns = 0;
  uint64_t bad = 0;  // distinct packets whose result differs from libpcap's
  int ok = 0;        // 1: loaded and timed
};

DpdkFigures measure_dpdk(const Filter& f, const PacketSet& set, bool jit, uint64_t packets, int runs) {
  DpdkFigures out;
  auto p = dpdk_load(f.insns);
  if (!p || (jit && !p->jit.func)) return out;
  Mbufs mb(set);
  auto run1 = [&](rte_mbuf* m) -> uint64_t { return jit ? p->jit.func(m) : rte_bpf_exec(p->bpf, m); };
  for (size_t i = 0; i < set.size(); ++i) {
    uint32_t want = bpf_filter(reinterpret_cast<const bpf_insn*>(f.insns.data()), set.bytes(i), set.wirelen(i),
                               set.caplen(i));
    if (static_cast<uint32_t>(run1(mb.m[i])) != want) ++out.bad;
  }
  std::vector<double> ns;
  uint64_t sink = 0;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t done = 0;
    while (done < packets) {
      size_t m = std::min<uint64_t>(mb.m.size(), packets - done);
      for (size_t i = 0; i < m; ++i) sink += run1(mb.m[i]) != 0;
      done += m;
    }
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(packets));
  }
  asm volatile("" : : "r"(sink) : "memory");
  std::sort(ns.begin(), ns.end());
  out.ns = ns[ns.size() / 2];
  out.ok = 1;
  return out;
}

// Runs DPDK in a child process (its own EAL), since DPDK 22.11's JIT can crash on some
// converted filters; the cell says so instead of taking the whole table down.
std::string time_dpdk(const Filter& f, const PacketSet& set, bool jit, uint64_t packets, int runs) {
  const std::string key = std::string(f.name) + (jit ? " (DPDK jit)" : " (DPDK interp)");
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    DpdkFigures r = measure_dpdk(f, set, jit, packets, runs);
    if (write(fds[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  DpdkFigures r;
  ssize_t got = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) {
    g_agreement[key] = std::string("crashed (") + strsignal(WTERMSIG(st)) + ")";
    return "crashed";
  }
  if (got != static_cast<ssize_t>(sizeof r) || !r.ok) {
    g_agreement[key] = "failed to load";
    return "n/a";
  }
  g_agreement[key] = r.bad ? std::to_string(r.bad) + " of " + std::to_string(set.size()) +
                                 " packets differ from libpcap"
                           : "all " + std::to_string(set.size()) + " packets equal libpcap";
  char buf[32];
  std::snprintf(buf, sizeof buf, r.bad ? "%.2f (wrong)" : "%.2f", r.ns);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t packets = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  size_t distinct = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4096;
  std::vector<ExtraColumn> extra = {
      {"DPDK jit", [&](const Filter& f, const PacketSet& s) { return time_dpdk(f, s, true, packets, runs); }},
      {"DPDK interp", [&](const Filter& f, const PacketSet& s) { return time_dpdk(f, s, false, packets, runs); }},
  };
  int rc = print_jit_table(packets, runs, distinct, extra);
  std::printf("\nDPDK results against libpcap bpf_filter:\n");
  for (const auto& [k, v] : g_agreement) std::printf("  %s: %s\n", k.c_str(), v.c_str());
  return rc;
}
