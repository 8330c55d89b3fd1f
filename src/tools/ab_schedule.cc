#include "tools/ab_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace pktpath {

namespace {

// splitmix64: a small PRNG whose output is the same on every platform and library (the
// order and the interval must not depend on std::shuffle's or a distribution's choice).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // In [0, n), n > 0; the modulo bias is far below what a few thousand draws can see.
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t s_;
};

// Median of v, reordering it.
double median_in_place(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t n = v.size();
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  const double hi = *mid;
  if (n % 2) return hi;
  return (*std::max_element(v.begin(), mid) + hi) / 2;
}

double median_of(std::vector<double> v) { return median_in_place(v); }

// The p-quantile of sorted values, interpolated between neighbours.
double quantile_sorted(const std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const double pos = p * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// The runs by side and slot: cell[side][0] first-slot values, cell[side][1] second.
using AbCells = std::vector<double>[2][2];

// Figures from the four cells' medians (0: empty cell).
struct Figures {
  double level[2] = {0, 0};
  double effect = 0;
  double position = 0;
};

Figures figures(const double m[2][2]) {
  Figures f;
  for (int s = 0; s < 2; ++s) {
    if (m[s][0] > 0 && m[s][1] > 0)
      f.level[s] = std::sqrt(m[s][0] * m[s][1]);
    else
      f.level[s] = m[s][0] > 0 ? m[s][0] : m[s][1];
  }
  if (f.level[0] > 0 && f.level[1] > 0) f.effect = f.level[0] / f.level[1];
  if (m[0][0] > 0 && m[0][1] > 0 && m[1][0] > 0 && m[1][1] > 0)
    f.position = std::sqrt(m[0][0] / m[0][1] * (m[1][0] / m[1][1]));
  return f;
}

AbSideStats side_stats(const std::vector<double>& first, const std::vector<double>& second,
                       double level) {
  std::vector<double> v(first);
  v.insert(v.end(), second.begin(), second.end());
  AbSideStats s;
  s.runs = v.size();
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.median = median_in_place(v);
  s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
  s.level = level;
  return s;
}

AbInterval percentile_interval(std::vector<double>& v, double point) {
  if (v.empty()) return {point, point};
  std::sort(v.begin(), v.end());
  return {quantile_sorted(v, 0.025), quantile_sorted(v, 0.975)};
}

}  // namespace

const char* ab_side_name(AbSide s) { return s == AbSide::kA ? "A" : "B"; }

const char* ab_order_name(AbOrder o) { return o == AbOrder::kBalanced ? "abba" : "random"; }

AbSchedule ab_schedule(unsigned rounds, AbOrder order, uint64_t seed, bool warmup) {
  AbSchedule s;
  s.order = order;
  s.seed = order == AbOrder::kRandom ? seed : 0;
  // a_first[i]: round i runs A then B. Balanced: every other round; random: the same
  // rounds, shuffled (Fisher-Yates), and the odd round's order drawn too.
  std::vector<bool> a_first(rounds);
  for (unsigned i = 0; i < rounds; ++i) a_first[i] = i % 2 == 0;
  if (order == AbOrder::kRandom && rounds > 0) {
    SplitMix64 rng(seed);
    if (rounds % 2) a_first[rounds - 1] = (rng.next() & 1) != 0;
    for (unsigned i = rounds - 1; i > 0; --i) {
      const size_t j = rng.below(i + 1);
      const bool t = a_first[i];
      a_first[i] = a_first[j];
      a_first[j] = t;
    }
  }
  s.runs.reserve(rounds * 2 + (warmup ? 1 : 0));
  if (warmup) s.runs.push_back({AbSide::kA, 0, true, true});
  for (unsigned i = 0; i < rounds; ++i) {
    const AbSide first = a_first[i] ? AbSide::kA : AbSide::kB;
    const AbSide second = a_first[i] ? AbSide::kB : AbSide::kA;
    s.runs.push_back({first, i + 1, true, false});
    s.runs.push_back({second, i + 1, false, false});
  }
  return s;
}

std::string ab_schedule_text(const AbSchedule& s) {
  std::string t;
  for (const AbRun& r : s.runs) {
    if (r.warmup) continue;
    if (r.first && !t.empty()) t += ' ';
    t += ab_side_name(r.side);
  }
  return t;
}

AbAnalysis ab_analyze(const std::vector<AbRecord>& runs, unsigned resamples, uint64_t seed) {
  AbAnalysis out;
  out.resamples = resamples;
  out.seed = seed;
  AbCells cell;
  for (const AbRecord& r : runs)
    if (!r.warmup) cell[r.side == AbSide::kA ? 0 : 1][r.first ? 0 : 1].push_back(r.value);
  double m[2][2];
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 2; ++k) m[s][k] = median_of(cell[s][k]);
  size_t fewest = SIZE_MAX;
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 2; ++k) fewest = std::min(fewest, cell[s][k].size());
  out.few_runs = fewest < 3;
  const Figures point = figures(m);
  out.a = side_stats(cell[0][0], cell[0][1], point.level[0]);
  out.b = side_stats(cell[1][0], cell[1][1], point.level[1]);
  out.effect = point.effect;
  out.position_bias = point.position;
  if (point.effect > 0) out.effect_ci = {point.effect, point.effect};
  if (point.position > 0) out.position_ci = {point.position, point.position};
  if (resamples == 0 || point.effect <= 0) return out;

  // Resample each cell on its own, so every resample keeps the schedule's slot counts.
  SplitMix64 rng(seed);
  AbCells draw;
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 2; ++k) draw[s][k].resize(cell[s][k].size());
  std::vector<double> effects, positions;
  effects.reserve(resamples);
  positions.reserve(resamples);
  for (unsigned i = 0; i < resamples; ++i) {
    double rm[2][2];
    for (int s = 0; s < 2; ++s)
      for (int k = 0; k < 2; ++k) {
        const std::vector<double>& src = cell[s][k];
        for (double& v : draw[s][k]) v = src[rng.below(src.size())];
        rm[s][k] = median_in_place(draw[s][k]);
      }
    const Figures f = figures(rm);
    if (f.effect > 0) effects.push_back(f.effect);
    if (f.position > 0) positions.push_back(f.position);
  }
  out.effect_ci = percentile_interval(effects, point.effect);
  if (point.position > 0) out.position_ci = percentile_interval(positions, point.position);
  return out;
}

std::string ab_summary(const AbAnalysis& a) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "effect A/B %.3f (95%% CI %.3f-%.3f); ", a.effect, a.effect_ci.low,
                a.effect_ci.high);
  std::string s = buf;
  if (a.position_bias > 0) {
    std::snprintf(buf, sizeof buf, "position bias %.3f (first/second, 95%% CI %.3f-%.3f)",
                  a.position_bias, a.position_ci.low, a.position_ci.high);
    s += buf;
  } else {
    s += "position bias n/a (a side never ran in one of the slots)";
  }
  if (a.few_runs) s += "; few runs: intervals too narrow";
  return s;
}

}  // namespace pktpath
