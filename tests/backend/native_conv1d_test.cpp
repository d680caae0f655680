// tests/backend/native_conv1d_test.cpp: native conv1d and its gradients against scalar's.
//
// Native sums each element's terms in another order, with fused multiply-adds
// (backend/native/conv1d.cpp); scalar sums them one at a time. Either differs from the exact sum
// by at most n u sum|term| (n terms, u = 2^-24, the classic bound for a recursive sum; a fused
// step rounds once where scalar rounds twice, within the same bound), so they differ by at most
// twice that: the bound here, per element, from a float64 sum of |term|. Shapes cover the tiled
// interior, every edge (lengths off the vector width, channel counts off the tile of 4,
// dilations whose reach leaves no interior), groups, and the shapes native hands to scalar
// (strides, padding), which must then be bitwise.
#include <gtest/gtest.h>

#include <cmath>

#include "parity.h"
#include "tempra/backend/kernel_args.h"
#include "tempra/core/thread_pool.h"

namespace tempra {
namespace {

struct Case {
  int64_t batch, in_channels, out_channels, kernel, dilation, in_len, groups, stride = 1, pad = 0;
};

Conv1dShape shape_of(const Case& c) {
  const int64_t span = c.in_len + 2 * c.pad - (c.kernel - 1) * c.dilation;
  return {c.batch,  c.in_channels, c.in_len,   c.out_channels, c.kernel, (span - 1) / c.stride + 1,
          c.stride, c.pad,         c.dilation, c.groups};
}

constexpr double kU = 0x1.0p-24;

// bound[i] = 2 n u sum|terms| for each output of the forward, gx, gw and gb.
struct Bounds {
  std::vector<double> out, gx, gw, gb;
};

Bounds bounds(const Conv1dShape& s, const std::vector<float>& x, const std::vector<float>& w,
              const std::vector<float>& bias, const std::vector<float>& g) {
  const int64_t in_pg = s.in_channels / s.groups, out_pg = s.out_channels / s.groups;
  Bounds b;
  b.out.assign(size_t(s.batch * s.out_channels * s.out_len), 0);
  b.gx.assign(x.size(), 0);
  b.gw.assign(w.size(), 0);
  b.gb.assign(size_t(s.out_channels), 0);
  std::vector<double> gx_terms(x.size(), 0), gw_terms(w.size(), 0), gb_terms(size_t(s.out_channels), 0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t oc = 0; oc < s.out_channels; ++oc)
      for (int64_t t = 0; t < s.out_len; ++t) {
        const size_t o = size_t((n * s.out_channels + oc) * s.out_len + t);
        double sum = std::abs(bias[size_t(oc)]);
        const double gv = g[o];
        gb_terms[size_t(oc)] += 1, b.gb[size_t(oc)] += std::abs(gv);
        for (int64_t ic = 0; ic < in_pg; ++ic)
          for (int64_t tap = 0; tap < s.kernel; ++tap) {
            const int64_t src = t * s.stride + tap * s.dilation - s.pad_left;
            if (src < 0 || src >= s.in_len) continue;
            const size_t xi = size_t((n * s.in_channels + oc / out_pg * in_pg + ic) * s.in_len + src);
            const size_t wi = size_t((oc * in_pg + ic) * s.kernel + tap);
            sum += std::abs(double(w[wi]) * x[xi]);
            b.gx[xi] += std::abs(double(w[wi]) * gv), gx_terms[xi] += 1;
            b.gw[wi] += std::abs(gv * x[xi]), gw_terms[wi] += 1;
          }
        b.out[o] = 2 * kU * double(in_pg * s.kernel + 1) * sum;
      }
  for (size_t i = 0; i < x.size(); ++i) b.gx[i] *= 2 * kU * gx_terms[i];
  for (size_t i = 0; i < w.size(); ++i) b.gw[i] *= 2 * kU * gw_terms[i];
  for (size_t i = 0; i < b.gb.size(); ++i) b.gb[i] *= 2 * kU * gb_terms[i];
  return b;
}

void check(const Case& c, ThreadPool& pool) {
  const Conv1dShape s = shape_of(c);
  SCOPED_TRACE(::testing::Message() << "batch " << c.batch << " channels " << c.in_channels << "->" << c.out_channels
                                    << " K " << c.kernel << " d " << c.dilation << " len " << c.in_len << " groups "
                                    << c.groups << " stride " << c.stride << " pad " << c.pad);
  const auto x = parity::random_floats(size_t(s.batch * s.in_channels * s.in_len), 1);
  const auto w = parity::random_floats(size_t(s.out_channels * s.in_channels / s.groups * s.kernel), 2);
  const auto bias = parity::random_floats(size_t(s.out_channels), 3);
  const auto g = parity::random_floats(size_t(s.batch * s.out_channels * s.out_len), 4);
  const bool fast = s.stride == 1 && s.pad_left == 0;
  const Bounds bound = bounds(s, x, w, bias, g);

  std::vector<float> want(g.size()), got(g.size());
  parity::scalar_f32().conv1d(x.data(), w.data(), bias.data(), s, want.data(), pool);
  parity::native_f32().conv1d(x.data(), w.data(), bias.data(), s, got.data(), pool);
  EXPECT_TRUE(fast ? parity::within(got, want, bound.out) : parity::bitwise_equal(got, want)) << "forward";

  std::vector<float> gx0(x.size()), gw0(w.size()), gb0(bias.size()), gx1(x.size()), gw1(w.size()), gb1(bias.size());
  parity::scalar_f32().conv1d_grad(x.data(), w.data(), g.data(), s, gx0.data(), gw0.data(), gb0.data(), pool);
  parity::native_f32().conv1d_grad(x.data(), w.data(), g.data(), s, gx1.data(), gw1.data(), gb1.data(), pool);
  EXPECT_TRUE(fast ? parity::within(gx1, gx0, bound.gx) : parity::bitwise_equal(gx1, gx0)) << "gx";
  EXPECT_TRUE(fast ? parity::within(gw1, gw0, bound.gw) : parity::bitwise_equal(gw1, gw0)) << "gw";
  EXPECT_TRUE(fast ? parity::within(gb1, gb0, bound.gb) : parity::bitwise_equal(gb1, gb0)) << "gb";
  // Each gradient alone (the others null) is the same as all three together.
  std::vector<float> only(x.size());
  parity::native_f32().conv1d_grad(x.data(), w.data(), g.data(), s, only.data(), nullptr, nullptr, pool);
  EXPECT_TRUE(parity::bitwise_equal(only, gx1));
  only.assign(w.size(), 0);
  parity::native_f32().conv1d_grad(x.data(), w.data(), g.data(), s, nullptr, only.data(), nullptr, pool);
  EXPECT_TRUE(parity::bitwise_equal(only, gw1));
}

TEST(NativeConv1dParity, WaveNetLayersAndEveryEdge) {
  ThreadPool pool(2);
  const std::vector<Case> cases = {
      {2, 16, 16, 3, 1, 300, 1},     // a standard WaveNet layer (tiles of 4 channels, 4 vectors)
      {2, 16, 16, 3, 64, 300, 1},    // dilated: the input gradient's interior is short
      {1, 8, 8, 3, 200, 500, 1},     // reach 400: no interior for the input gradient
      {3, 1, 16, 1, 1, 77, 1},       // rechannel and mix-in: one input channel, 1x1
      {2, 8, 1, 1, 1, 65, 1},        // a head: one output channel
      {1, 6, 12, 3, 2, 129, 1},      // lite: channel counts off the tile
      {1, 4, 6, 2, 3, 31, 2},        // groups
      {2, 5, 7, 4, 1, 17, 1},        // shorter than a vector
      {1, 3, 3, 3, 1, 1000, 1},      // long
      {1, 4, 4, 3, 1, 40, 1, 2, 0},  // strided: scalar's
      {1, 4, 4, 3, 2, 40, 1, 1, 3},  // padded: scalar's
  };
  for (const Case& c : cases) check(c, pool);
}

TEST(NativeConv1dParity, SameBitsForAnyThreadCount) {
  const Case c{3, 16, 16, 3, 4, 257, 1};
  const Conv1dShape s = shape_of(c);
  const auto x = parity::random_floats(size_t(s.batch * s.in_channels * s.in_len), 5);
  const auto w = parity::random_floats(size_t(s.out_channels * s.in_channels * s.kernel), 6);
  const auto g = parity::random_floats(size_t(s.batch * s.out_channels * s.out_len), 7);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> out(g.size()), gx(x.size()), gw(w.size()), gb(size_t(s.out_channels));
    parity::native_f32().conv1d(x.data(), w.data(), nullptr, s, out.data(), pool);
    parity::native_f32().conv1d_grad(x.data(), w.data(), g.data(), s, gx.data(), gw.data(), gb.data(), pool);
    out.insert(out.end(), gx.begin(), gx.end());
    out.insert(out.end(), gw.begin(), gw.end());
    out.insert(out.end(), gb.begin(), gb.end());
    results.push_back(out);
  }
  EXPECT_TRUE(parity::bitwise_equal(results[1], results[0]));
  EXPECT_TRUE(parity::bitwise_equal(results[2], results[0]));
}

}  // namespace
}  // namespace tempra
