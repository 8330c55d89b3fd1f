#include "tools/ab_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pktpath {
namespace {

// Deterministic noise in [-1, 1) (splitmix64), the same on every platform.
class Noise {
 public:
  explicit Noise(uint64_t seed) : s_(seed) {}
  double next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1p-53 * 2 - 1;
  }

 private:
  uint64_t s_;
};

// The runs of a schedule on a fake machine: side A's level `a`, B's `b`, the first slot
// of a round `first_factor` times faster, each run off by up to `noise` (relative).
std::vector<AbRecord> simulate(const AbSchedule& s, double a, double b, double first_factor,
                               double noise, uint64_t seed) {
  Noise n(seed);
  std::vector<AbRecord> out;
  for (const AbRun& r : s.runs) {
    double v =
        (r.side == AbSide::kA ? a : b) * (r.first ? first_factor : 1.0) * (1 + noise * n.next());
    out.push_back({r.side, r.first, v, r.warmup});
  }
  return out;
}

void expect_balanced(const AbSchedule& s, unsigned rounds, bool warmup) {
  ASSERT_EQ(s.runs.size(), 2 * rounds + (warmup ? 1u : 0u));
  size_t i = 0;
  if (warmup) {
    EXPECT_TRUE(s.runs[0].warmup);
    EXPECT_EQ(s.runs[0].side, AbSide::kA);
    EXPECT_EQ(s.runs[0].round, 0u);
    i = 1;
  }
  unsigned a_first = 0, b_first = 0;
  for (unsigned round = 1; round <= rounds; ++round, i += 2) {
    const AbRun& x = s.runs[i];
    const AbRun& y = s.runs[i + 1];
    EXPECT_FALSE(x.warmup);
    EXPECT_FALSE(y.warmup);
    EXPECT_EQ(x.round, round);
    EXPECT_EQ(y.round, round);
    EXPECT_TRUE(x.first);
    EXPECT_FALSE(y.first);
    EXPECT_NE(x.side, y.side) << "round " << round << " must have one A and one B";
    (x.side == AbSide::kA ? a_first : b_first)++;
  }
  if (rounds % 2 == 0)
    EXPECT_EQ(a_first, b_first);
  else
    EXPECT_EQ(a_first > b_first ? a_first - b_first : b_first - a_first, 1u);
}

TEST(AbSchedule, BalancedRoundsAlternateAbAndBa) {
  for (unsigned r : {1u, 2u, 3u, 4u, 10u, 21u}) {
    SCOPED_TRACE(r);
    expect_balanced(ab_schedule(r), r, true);
  }
  EXPECT_EQ(ab_schedule_text(ab_schedule(4)), "AB BA AB BA");
  EXPECT_EQ(ab_order_name(ab_schedule(4).order), std::string("abba"));
}

TEST(AbSchedule, WarmupCanBeLeftOut) {
  AbSchedule s = ab_schedule(3, AbOrder::kBalanced, 0, false);
  expect_balanced(s, 3, false);
  EXPECT_EQ(ab_schedule_text(s), "AB BA AB");
}

TEST(AbSchedule, RandomOrderIsSeededAndBalanced) {
  for (unsigned r : {2u, 7u, 20u}) {
    SCOPED_TRACE(r);
    expect_balanced(ab_schedule(r, AbOrder::kRandom, 42), r, true);
  }
  AbSchedule s = ab_schedule(20, AbOrder::kRandom, 42);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(ab_order_name(s.order), std::string("random"));
  EXPECT_EQ(ab_schedule_text(s), ab_schedule_text(ab_schedule(20, AbOrder::kRandom, 42)));
  // Other seeds give other orders, and not the plain ABBA one.
  int differ = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed)
    differ += ab_schedule_text(ab_schedule(20, AbOrder::kRandom, seed)) != ab_schedule_text(s);
  EXPECT_GE(differ, 7);
  EXPECT_NE(ab_schedule_text(s), ab_schedule_text(ab_schedule(20)));
}

TEST(AbAnalyze, SideStatsAndWarmupLeftOut) {
  std::vector<AbRecord> runs = {{AbSide::kA, true, 1e9, true},  // warm-up: ignored
                                {AbSide::kA, true, 100, false}, {AbSide::kB, false, 50, false},
                                {AbSide::kB, true, 60, false},  {AbSide::kA, false, 120, false},
                                {AbSide::kA, true, 110, false}, {AbSide::kB, false, 55, false}};
  AbAnalysis a = ab_analyze(runs);
  EXPECT_EQ(a.a.runs, 3u);
  EXPECT_DOUBLE_EQ(a.a.median, 110);
  EXPECT_DOUBLE_EQ(a.a.min, 100);
  EXPECT_DOUBLE_EQ(a.a.max, 120);
  EXPECT_DOUBLE_EQ(a.a.spread, 20.0 / 110);
  EXPECT_DOUBLE_EQ(a.a.level, std::sqrt(105.0 * 120));  // first {100, 110}, second {120}
  EXPECT_EQ(a.b.runs, 3u);
  EXPECT_DOUBLE_EQ(a.b.median, 55);
  EXPECT_DOUBLE_EQ(a.b.level, std::sqrt(60 * 52.5));  // first {60}, second {50, 55}
  EXPECT_DOUBLE_EQ(a.effect, a.a.level / a.b.level);
  EXPECT_DOUBLE_EQ(a.position_bias, std::sqrt(105.0 / 120 * (60 / 52.5)));
  EXPECT_TRUE(a.effect_ci.contains(a.effect));
  EXPECT_EQ(a.resamples, kAbResamples);
}

TEST(AbAnalyze, SameSeedSameInterval) {
  AbSchedule s = ab_schedule(10);
  auto runs = simulate(s, 1e6, 1e6, 1.0, 0.05, 7);
  AbAnalysis x = ab_analyze(runs), y = ab_analyze(runs);
  EXPECT_EQ(x.effect_ci.low, y.effect_ci.low);
  EXPECT_EQ(x.effect_ci.high, y.effect_ci.high);
  EXPECT_EQ(x.position_ci.low, y.position_ci.low);
  EXPECT_LT(x.effect_ci.low, x.effect_ci.high);
}

TEST(AbAnalyze, SameDistributionIntervalContainsOne) {
  AbAnalysis a = ab_analyze(simulate(ab_schedule(20), 1e6, 1e6, 1.0, 0.03, 1));
  EXPECT_TRUE(a.effect_ci.contains(1.0)) << ab_summary(a);
  EXPECT_NEAR(a.effect, 1.0, 0.02);
  EXPECT_TRUE(a.position_ci.contains(1.0)) << ab_summary(a);
  // And over many machines' worth of noise the interval holds 1.00 about 95% of the time.
  int hits = 0;
  for (uint64_t seed = 100; seed < 140; ++seed)
    hits += ab_analyze(simulate(ab_schedule(20), 1e6, 1e6, 1.0, 0.03, seed), 500)
                .effect_ci.contains(1.0);
  EXPECT_GE(hits, 34);
}

// The machine: whichever side runs first is 15% faster. ABBA cancels it in the
// effect, and the analysis still shows it as position bias.
TEST(AbAnalyze, FirstSlotBonusIsPositionBiasNotEffect) {
  AbAnalysis a = ab_analyze(simulate(ab_schedule(20), 1e6, 1e6, 1.15, 0.03, 3));
  EXPECT_TRUE(a.effect_ci.contains(1.0)) << ab_summary(a);
  EXPECT_NEAR(a.position_bias, 1.15, 0.03) << ab_summary(a);
  EXPECT_FALSE(a.position_ci.contains(1.0)) << ab_summary(a);
  // The same with a random balanced order.
  AbAnalysis r =
      ab_analyze(simulate(ab_schedule(20, AbOrder::kRandom, 9), 1e6, 1e6, 1.15, 0.03, 3));
  EXPECT_TRUE(r.effect_ci.contains(1.0)) << ab_summary(r);
  EXPECT_NEAR(r.position_bias, 1.15, 0.03) << ab_summary(r);
}

// What the old ABAB order did with that machine: the first slot's bonus became A's.
TEST(AbAnalyze, AbabOrderChargesTheFirstSlotToA) {
  AbSchedule abab;
  for (unsigned i = 1; i <= 20; ++i) {
    abab.runs.push_back({AbSide::kA, i, true, false});
    abab.runs.push_back({AbSide::kB, i, false, false});
  }
  AbAnalysis a = ab_analyze(simulate(abab, 1e6, 1e6, 1.15, 0.03, 3));
  EXPECT_FALSE(a.effect_ci.contains(1.0)) << ab_summary(a);
  EXPECT_NEAR(a.effect, 1.15, 0.03);
}

TEST(AbAnalyze, RealEffectIsDetected) {
  AbAnalysis a = ab_analyze(simulate(ab_schedule(10), 1.3e6, 1e6, 1.0, 0.03, 5));
  EXPECT_FALSE(a.effect_ci.contains(1.0)) << ab_summary(a);
  EXPECT_NEAR(a.effect, 1.3, 0.04) << ab_summary(a);
  EXPECT_TRUE(a.position_ci.contains(1.0)) << ab_summary(a);
  // With the first-slot bonus on top, both are told apart.
  AbAnalysis b = ab_analyze(simulate(ab_schedule(20), 1.3e6, 1e6, 1.15, 0.03, 5));
  EXPECT_FALSE(b.effect_ci.contains(1.0)) << ab_summary(b);
  EXPECT_NEAR(b.effect, 1.3, 0.06) << ab_summary(b);
  EXPECT_NEAR(b.position_bias, 1.15, 0.03) << ab_summary(b);
  // An odd count puts A first once more than B: the position bias must not take A's
  // advantage for the first slot's.
  AbAnalysis c = ab_analyze(simulate(ab_schedule(7), 1.3e6, 1e6, 1.15, 0.03, 6));
  EXPECT_NEAR(c.position_bias, 1.15, 0.04) << ab_summary(c);
  EXPECT_NEAR(c.effect, 1.3, 0.04) << ab_summary(c);
}

// Three rounds (AB BA AB): A is first twice, B once. A's plain median is then a
// first-slot figure and B's a second-slot one; the effect must not be the slot's bias.
TEST(AbAnalyze, OddRoundsDoNotChargeTheFirstSlotToA) {
  AbAnalysis a = ab_analyze(simulate(ab_schedule(3), 1e6, 1e6, 1.15, 0.01, 11));
  EXPECT_GT(a.a.median / a.b.median, 1.1);  // what the plain medians say
  EXPECT_NEAR(a.effect, 1.0, 0.03) << ab_summary(a);
  EXPECT_TRUE(a.effect_ci.contains(1.0)) << ab_summary(a);
  EXPECT_NEAR(a.position_bias, 1.15, 0.03) << ab_summary(a);
}

// One round has no second order to compare with: the position bias is unknown (0).
TEST(AbAnalyze, OneRoundHasNoPositionBias) {
  AbAnalysis a = ab_analyze(simulate(ab_schedule(1), 1.2e6, 1e6, 1.0, 0.0, 1));
  EXPECT_NEAR(a.effect, 1.2, 1e-9);
  EXPECT_EQ(a.position_bias, 0);
  EXPECT_EQ(a.effect_ci.low, a.effect_ci.high);
}

TEST(AbAnalyze, EmptySideGivesZeros) {
  AbAnalysis a = ab_analyze({{AbSide::kA, true, 100, false}});
  EXPECT_EQ(a.b.runs, 0u);
  EXPECT_EQ(a.effect, 0);
  EXPECT_EQ(a.position_bias, 0);
}

TEST(AbAnalyze, SummaryLine) {
  AbAnalysis a;
  a.effect = 1.0031;
  a.effect_ci = {0.9912, 1.0148};
  a.position_bias = 1.0764;
  a.position_ci = {1.052, 1.1013};
  a.few_runs = false;
  EXPECT_EQ(ab_summary(a),
            "effect A/B 1.003 (95% CI 0.991-1.015); position bias 1.076 (first/second, 95% CI "
            "1.052-1.101)");
  a.position_bias = 0;
  a.few_runs = true;
  EXPECT_EQ(ab_summary(a),
            "effect A/B 1.003 (95% CI 0.991-1.015); position bias n/a (a side never ran in one of "
            "the slots); "
            "few runs: intervals too narrow");
}

TEST(AbAnalyze, FewRunsAreFlagged) {
  EXPECT_TRUE(ab_analyze(simulate(ab_schedule(5), 1e6, 1e6, 1.0, 0.03, 1)).few_runs);
  EXPECT_FALSE(ab_analyze(simulate(ab_schedule(6), 1e6, 1e6, 1.0, 0.03, 1)).few_runs);
}

}  // namespace
}  // namespace pktpath
