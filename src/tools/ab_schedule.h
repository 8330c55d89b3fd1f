// A fair A/B: the order the two sides run in, and what the runs say.
//
// On a real machine the run that comes first in a pair is often faster or slower than
// the second (caches, frequency, the allocator's state), so ABAB... charges that slot's
// bias to A. Here rounds alternate AB and BA (ABBA...: each side first equally often
// over an even number of rounds), or come in a seeded random order that is balanced the
// same way; a warm-up run before them is not counted. The analysis reports the effect
// (median A over median B) with a bootstrap interval, and the position bias (first slot
// over second) so that a bias the order cancelled is still seen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pktpath {

enum class AbSide : uint8_t { kA, kB };
const char* ab_side_name(AbSide s);  // "A" / "B"

enum class AbOrder : uint8_t {
  kBalanced,  // AB BA AB BA ...
  kRandom,    // as many AB as BA rounds (one more of either for an odd count), shuffled by the seed
};
const char* ab_order_name(AbOrder o);  // "abba" / "random"

struct AbRun {
  AbSide side = AbSide::kA;
  unsigned round = 0;  // 1.. for counted runs; 0 for the warm-up
  bool first = true;   // the first slot of its round (the warm-up: true)
  bool warmup = false;
};

struct AbSchedule {
  AbOrder order = AbOrder::kBalanced;
  uint64_t seed = 0;        // kRandom's; 0 and meaningless for kBalanced
  std::vector<AbRun> runs;  // in the order to run them: the warm-up (if any), then the rounds
};

// `rounds` rounds of one A and one B each, after one warm-up run of A when `warmup`.
AbSchedule ab_schedule(unsigned rounds, AbOrder order = AbOrder::kBalanced, uint64_t seed = 0,
                       bool warmup = true);

// The rounds as text, e.g. "AB BA AB BA" (the warm-up left out).
std::string ab_schedule_text(const AbSchedule& s);

// One run's outcome; warm-up runs are ignored by the analysis.
struct AbRecord {
  AbSide side = AbSide::kA;
  bool first = true;
  double value = 0;  // higher is better (pps), but any positive figure works
  bool warmup = false;
};

struct AbSideStats {
  size_t runs = 0;
  double median = 0, min = 0, max = 0;
  double spread = 0;  // (max - min) / median: the relative range of the runs
  // The median in a neutral slot: the geometric mean of the side's first-slot median and
  // second-slot median (the plain median when it ran in one slot only). With an odd
  // number of rounds one side is first once more; its plain median then leans to the
  // first slot's figure, this one does not.
  double level = 0;
};

struct AbInterval {
  double low = 0, high = 0;
  bool contains(double x) const { return low <= x && x <= high; }
};

struct AbAnalysis {
  AbSideStats a, b;
  // level(A) / level(B): median(A) / median(B) with a first-slot bias cancelled, also
  // when the sides were first unequally often. 0 when a side has no runs.
  double effect = 0;
  AbInterval effect_ci;
  // median(first) / median(second), taken within each side and the two sides' ratios
  // combined geometrically, so that a real A/B difference does not show up here.
  // 0 unless both sides ran in both slots.
  double position_bias = 0;
  AbInterval position_ci;
  // A side ran in a slot fewer than 3 times (under 6 rounds): the bootstrap then sees
  // too little of the spread and the intervals come out too narrow (on synthetic noise
  // they held the true ratio ~47% of the time at 3 rounds, ~95% from 6).
  bool few_runs = true;
  unsigned resamples = 0;
  uint64_t seed = 0;
};

// Bootstrap: `resamples` times, the runs of each side in each slot drawn again with
// replacement and both figures taken again; an interval is the 2.5th and 97.5th
// percentile of them. The seed makes the intervals the same on every call.
constexpr unsigned kAbResamples = 2000;
constexpr uint64_t kAbBootstrapSeed = 0x5eedab0001ull;
AbAnalysis ab_analyze(const std::vector<AbRecord>& runs, unsigned resamples = kAbResamples,
                      uint64_t seed = kAbBootstrapSeed);

// "effect A/B 1.003 (95% CI 0.991-1.015); position bias 1.076 (first/second, 95% CI 1.052-1.101)",
// "position bias n/a" when it is unknown, and "; few runs: intervals too narrow" with few_runs.
std::string ab_summary(const AbAnalysis& a);

}  // namespace pktpath
