#include "tools/time_bench.h"

#include <thread>

namespace pktpath {

double tsc_per_ns() {
  static const double v = [] {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t c0 = tsc_begin();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    uint64_t c1 = tsc_end();
    auto t1 = std::chrono::steady_clock::now();
    return static_cast<double>(c1 - c0) / std::chrono::duration<double, std::nano>(t1 - t0).count();
  }();
  return v;
}

}  // namespace pktpath
