// The trace, the dequeue rule and the result record that ns3_qdisc_compare.cc (ns-3's
// side, compiled as C++17: ns-3 3.37's headers are not C++20) and
// ns3_qdisc_compare_pktpath.cc (pktpath's side, C++20) share.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace qcmp {

constexpr uint32_t kFlows = 8;
constexpr double kOfferedBps = 15e6;
constexpr double kLinkBps = 10e6;
constexpr uint64_t kPollNs = 100'000;
constexpr uint64_t kTbfRateBytes = 1'000'000;  // 8 Mbit/s
constexpr uint32_t kTbfBurst = 10000;
constexpr uint32_t kTbfLimit = 100000;

struct Arrival {
  uint64_t t_ns;
  uint32_t flow;
  uint32_t size;
};

inline uint32_t flow_size(uint32_t f) { return 200 + 150 * f; }

inline std::vector<Arrival> make_trace(uint32_t n) {
  std::vector<Arrival> v;
  v.reserve(n);
  uint64_t lcg = 12345;
  std::vector<double> next(kFlows, 0.0);
  const double per_flow_bps = kOfferedBps / kFlows;
  while (v.size() < n) {
    uint32_t f = static_cast<uint32_t>(std::min_element(next.begin(), next.end()) - next.begin());
    uint64_t t = static_cast<uint64_t>(next[f]) | 1;  // odd: never a dequeue time
    v.push_back({t, f, flow_size(f)});
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    const double jitter = 0.5 + static_cast<double>(lcg >> 11) / 9007199254740992.0;  // 0.5..1.5
    next[f] += flow_size(f) * 8.0 / per_flow_bps * 1e9 * jitter;
  }
  std::sort(v.begin(), v.end(), [](const Arrival& a, const Arrival& b) { return a.t_ns < b.t_ns; });
  return v;
}

inline uint64_t tx_ns(uint32_t bytes) {  // even
  return static_cast<uint64_t>(bytes * 8.0 / kLinkBps * 1e9) & ~uint64_t{1};
}

// CPU seconds of the calling thread: the machine is shared, and wall time would count
// the time other processes had the core.
inline double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

struct Result {
  uint64_t arrivals = 0, sent = 0, dropped = 0, queued = 0;
  std::vector<double> sojourn_ms;
  double cpu_s = 0;  // CPU time of the run
  double pct(double q) {
    if (sojourn_ms.empty()) return 0;
    std::sort(sojourn_ms.begin(), sojourn_ms.end());
    return sojourn_ms[std::min(sojourn_ms.size() - 1, static_cast<size_t>(q * sojourn_ms.size()))];
  }
};

// The two sides: the trace through fq_codel (tbf false) or tbf.
Result run_ns3(const std::vector<Arrival>& trace, bool tbf);
Result run_pktpath(const std::vector<Arrival>& trace, bool tbf);

}  // namespace qcmp
