// Tests for tempra/core/rng.h (the counter RNG) and the random fills built on it
// (tempra::normal / tempra::uniform in tempra/ops/creation.h).
//
// The statistical checks use fixed seeds, so they are deterministic: the bounds are loose
// (about 6 standard errors) and exist to catch a broken transform, not to certify quality.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/core/rng.h"
#include "tempra/ops/creation.h"

namespace {

using tempra::Array;
using tempra::CounterRng;
using tempra::ExecContext;
using tempra::ExecOptions;

constexpr uint64_t kSeed = 0x5eedf00d;

std::vector<uint32_t> bit_patterns(const Array& a) {
  const float* p = a.data<float>();
  std::vector<uint32_t> out(static_cast<size_t>(a.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = std::bit_cast<uint32_t>(p[i]);
  return out;
}

TEST(CoreRng, SplitmixFinalizerMatchesPublishedSequence) {
  // splitmix64 seeded with 0 starts 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4 (Vigna's reference).
  EXPECT_EQ(tempra::splitmix64_mix(CounterRng::kGolden), 0xe220a8397b1dcdafull);
  EXPECT_EQ(tempra::splitmix64_mix(2 * CounterRng::kGolden), 0x6e789e6aa1b965f4ull);
  // bits(seed, i) is the i-th output of a splitmix64 stream whose state starts at mix(seed).
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, kSeed, ~uint64_t{0}}) {
    uint64_t state = tempra::splitmix64_mix(seed);
    for (uint64_t i = 0; i < 100; ++i) {
      state += CounterRng::kGolden;
      ASSERT_EQ(CounterRng::bits(seed, i), tempra::splitmix64_mix(state)) << "seed " << seed << " index " << i;
    }
  }
}

TEST(CoreRng, BitsArePureFunctionOfSeedAndIndex) {
  static_assert(CounterRng::bits(1, 2) == CounterRng::bits(1, 2), "bits must be usable at compile time");
  // Same inputs, same output, in any call order.
  std::vector<uint64_t> forward, backward(1000);
  for (uint64_t i = 0; i < 1000; ++i) forward.push_back(CounterRng::bits(kSeed, i));
  for (uint64_t i = 1000; i-- > 0;) backward[i] = CounterRng::bits(kSeed, i);
  EXPECT_EQ(forward, backward);
  // Different indices and different seeds give different streams.
  const std::set<uint64_t> distinct(forward.begin(), forward.end());
  EXPECT_EQ(distinct.size(), forward.size());
  int same = 0;
  for (uint64_t i = 0; i < 1000; ++i) same += CounterRng::bits(kSeed + 1, i) == forward[i];
  EXPECT_EQ(same, 0);
  // Neighbouring seeds are not shifted copies of one stream (the seed is mixed first).
  EXPECT_NE(CounterRng::bits(1, 0), CounterRng::bits(0, 1));
  EXPECT_EQ(CounterRng::uniform(7, 9), CounterRng::uniform(7, 9));
  EXPECT_EQ(CounterRng::normal(7, 9), CounterRng::normal(7, 9));
}

TEST(CoreRng, UniformIsInUnitIntervalOnA24BitGrid) {
  constexpr int kN = 100000;
  double sum = 0;
  float lo = 1, hi = 0;
  for (uint64_t i = 0; i < kN; ++i) {
    const float u = CounterRng::uniform(kSeed, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    const float scaled = u * 16777216.0f;  // 2^24
    ASSERT_EQ(scaled, std::floor(scaled)) << "not a multiple of 2^-24: " << u;
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_NEAR(sum / kN, 0.5, 0.006);  // sd of the mean is 0.0009
  EXPECT_LT(lo, 0.001f);
  EXPECT_GT(hi, 0.999f);
}

TEST(CoreRng, NormalHasMeanZeroAndVarianceOne) {
  for (uint64_t seed : {kSeed, uint64_t{1}, uint64_t{0xfeedbeef}}) {
    SCOPED_TRACE(seed);
    constexpr int kN = 100000;
    double sum = 0, sum_sq = 0;
    int beyond_3 = 0;
    for (uint64_t i = 0; i < kN; ++i) {
      const double x = CounterRng::normal(seed, i);
      ASSERT_TRUE(std::isfinite(x)) << i;
      sum += x;
      sum_sq += x * x;
      beyond_3 += std::fabs(x) > 3.0;
    }
    const double mean = sum / kN;
    const double var = sum_sq / kN - mean * mean;
    EXPECT_LT(std::fabs(mean), 0.02);
    EXPECT_LT(std::fabs(var - 1.0), 0.03);
    // P(|x| > 3) = 0.0027: expect ~270, a uniform or clipped transform gives ~0.
    EXPECT_GT(beyond_3, 150);
    EXPECT_LT(beyond_3, 400);
  }
}

TEST(CoreRandomFill, BitwiseIdenticalForOneTwoAndThreeThreads) {
  for (int64_t n : {1, 17, 100000}) {
    std::vector<uint32_t> normal_ref, uniform_ref;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " threads=" + std::to_string(threads));
      ExecContext ctx(ExecOptions{.threads = threads, .seed = kSeed});
      ASSERT_EQ(ctx.threads().size(), threads);
      const std::vector<uint32_t> nb = bit_patterns(tempra::normal(ctx, {n}));
      const std::vector<uint32_t> ub = bit_patterns(tempra::uniform(ctx, {n}, -2.0, 3.0));
      // The large fill really was split across threads, so the comparison means something.
      if (threads > 1 && n == 100000) {
        EXPECT_GE(ctx.threads().split_jobs(), 2);
      }
      // The explicit (seed, offset) overloads agree with the context ones.
      EXPECT_EQ(bit_patterns(tempra::normal(ctx, {n}, 0.0, 1.0, kSeed, 0)), nb);
      if (threads == 1) {
        normal_ref = nb;
        uniform_ref = ub;
      } else {
        EXPECT_EQ(nb, normal_ref);
        EXPECT_EQ(ub, uniform_ref);
      }
    }
  }
}

TEST(CoreRandomFill, ElementIIsTheCounterRngValueAtOffsetPlusI) {
  ExecContext ctx(ExecOptions{.threads = 2, .seed = kSeed});
  constexpr int64_t kN = 50000;  // enough to be split across threads
  constexpr uint64_t kOffset = 123456789;
  const Array a = tempra::normal(ctx, {kN}, 0.0, 1.0, kSeed, kOffset);
  const float* p = a.data<float>();
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(p[i]), std::bit_cast<uint32_t>(CounterRng::normal(kSeed, kOffset + static_cast<uint64_t>(i))))
        << i;
  // Random access: a fill of one element at offset o + i reproduces element i.
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{31337}, kN - 1}) {
    const Array one = tempra::normal(ctx, {1}, 0.0, 1.0, kSeed, kOffset + static_cast<uint64_t>(i));
    EXPECT_EQ(one.at({0}), p[i]) << i;
  }
  // mean and stddev are applied as mean + stddev * z; uniform is low + (high - low) * u.
  const Array scaled = tempra::normal(ctx, {1000}, 5.0, 0.5, kSeed, kOffset);
  const Array u = tempra::uniform(ctx, {1000}, -1.0, 3.0, kSeed, 7);
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(scaled.data<float>()[i], 5.0f + 0.5f * p[i]) << i;
    const float ui = u.data<float>()[i];
    ASSERT_EQ(ui, -1.0f + 4.0f * CounterRng::uniform(kSeed, 7 + static_cast<uint64_t>(i))) << i;
    ASSERT_GE(ui, -1.0f);
    ASSERT_LT(ui, 3.0f);
  }
  // A multi-dimensional fill is the same stream in row-major order.
  const Array m = tempra::normal(ctx, {100, 500}, 0.0, 1.0, kSeed, kOffset);
  EXPECT_EQ(bit_patterns(m), bit_patterns(a));
}

TEST(CoreRandomFill, SuccessiveContextFillsAdvanceTheOffsetAndDoNotRepeat) {
  ExecContext ctx(ExecOptions{.threads = 2, .seed = kSeed});
  EXPECT_EQ(ctx.rng().seed, kSeed);
  EXPECT_EQ(ctx.rng().offset, 0u);
  const Array a = tempra::normal(ctx, {10, 100});
  EXPECT_EQ(ctx.rng().offset, 1000u);
  const Array b = tempra::normal(ctx, {1000});
  EXPECT_EQ(ctx.rng().offset, 2000u);
  const Array c = tempra::uniform(ctx, {7});
  EXPECT_EQ(ctx.rng().offset, 2007u);
  const Array empty = tempra::normal(ctx, {0});
  EXPECT_EQ(ctx.rng().offset, 2007u);
  EXPECT_EQ(ctx.rng().seed, kSeed) << "fills must not change the seed";
  // b continues the stream where a stopped: together they are one 2000-element fill.
  const Array whole = tempra::normal(ctx, {2000}, 0.0, 1.0, kSeed, 0);
  std::vector<uint32_t> ab = bit_patterns(a);
  const std::vector<uint32_t> bb = bit_patterns(b);
  ab.insert(ab.end(), bb.begin(), bb.end());
  EXPECT_EQ(ab, bit_patterns(whole));
  // So the second fill repeats none of the first's values.
  const std::vector<uint32_t> av = bit_patterns(a);
  const std::set<uint32_t> first(av.begin(), av.end());
  int repeats = 0;
  for (uint32_t v : bb) repeats += first.count(v) > 0;
  EXPECT_EQ(repeats, 0);
  EXPECT_EQ(c.at({0}), CounterRng::uniform(kSeed, 2000));
  // Two contexts with the same seed replay the same sequence of fills; another seed differs.
  ExecContext same(ExecOptions{.threads = 1, .seed = kSeed});
  ExecContext other(ExecOptions{.threads = 1, .seed = kSeed + 1});
  EXPECT_EQ(bit_patterns(tempra::normal(same, {10, 100})), bit_patterns(a));
  EXPECT_EQ(bit_patterns(tempra::normal(same, {1000})), bb);
  EXPECT_NE(bit_patterns(tempra::normal(other, {1000})), av);
}

TEST(CoreRandomFill, RngStateAdvanceReservesConsecutiveIndices) {
  tempra::RngState s{42, 10};
  EXPECT_EQ(s.advance(5), 10u);
  EXPECT_EQ(s.advance(0), 15u);
  EXPECT_EQ(s.advance(3), 15u);
  EXPECT_EQ(s, (tempra::RngState{42, 18}));
  EXPECT_NE(s, (tempra::RngState{43, 18}));
}

TEST(CoreRandomFill, InvalidParametersThrow) {
  ExecContext ctx(ExecOptions{.threads = 1});
  EXPECT_THROW(tempra::normal(ctx, {4}, 0.0, -1.0), tempra::Error);
  EXPECT_THROW(tempra::uniform(ctx, {4}, 2.0, 1.0), tempra::Error);
  const Array z = tempra::normal(ctx, {4}, 3.0, 0.0);  // stddev 0 is a constant fill
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(z.at({i}), 3.0);
}

}  // namespace

namespace {
TEST(CoreRng, RejectedFillDoesNotAdvanceTheContextStream) {
  tempra::ExecContext ctx(tempra::ExecOptions{.threads = 1, .seed = 3});
  const tempra::RngState before = ctx.rng();
  EXPECT_THROW(tempra::normal(ctx, {4}, 0.0, -1.0), tempra::Error);
  EXPECT_THROW(tempra::uniform(ctx, {4}, 2.0, 1.0), tempra::Error);
  EXPECT_EQ(ctx.rng(), before);
}
}  // namespace
