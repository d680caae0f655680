// tests/backend/native_neural_parity_test.cpp: native rms_norm, layer_norm, rope and attention
// against scalar.
//
// Tolerances: rope is bitwise (same cos/sin, same products, computed or given by the caller); the norms reassociate one sum of
// n terms: 1e-5 relative + 1e-6 absolute; attention uses an online softmax and FMA dot
// products: 2e-5 relative + 2e-6 absolute on outputs of magnitude ~1. 1 and 2 threads bitwise.
// cache_attention (over a KV cache in place, f32, f16 or Q8_0 rows): scalar's f16 and Q8_0
// entries are bitwise scalar attention over the widened copy (the specification); native's are
// held to it with attention's tolerance.
#include <cmath>

#include "backend/parity.h"
#include "tempra/quant/reference.h"

namespace tempra {
namespace {

using parity::sizes;

TEST(NativeNormParity, RmsAndLayerNormEverySize) {
  for (int64_t n : sizes()) {
    SCOPED_TRACE("n " + std::to_string(n));
    const int64_t rows = 5;
    const auto x = parity::random_floats(rows * n, n, -3, 3);
    const auto w = parity::random_floats(n, n + 1, 0.5f, 1.5f), b = parity::random_floats(n, n + 2);
    ThreadPool one(1), two(2);
    for (int variant = 0; variant < 4; ++variant) {
      const float* weight = variant % 2 ? w.data() : nullptr;
      std::vector<float> want(rows * n), got(rows * n), got2(rows * n);
      if (variant < 2) {
        parity::scalar_f32().rms_norm(x.data(), rows, n, weight, 1e-6, want.data(), one);
        parity::native_f32().rms_norm(x.data(), rows, n, weight, 1e-6, got.data(), one);
        parity::native_f32().rms_norm(x.data(), rows, n, weight, 1e-6, got2.data(), two);
      } else {
        const float* bias = variant == 3 ? b.data() : nullptr;
        parity::scalar_f32().layer_norm(x.data(), rows, n, weight, bias, 1e-5, want.data(), one);
        parity::native_f32().layer_norm(x.data(), rows, n, weight, bias, 1e-5, got.data(), one);
        parity::native_f32().layer_norm(x.data(), rows, n, weight, bias, 1e-5, got2.data(), two);
      }
      EXPECT_TRUE(parity::within(got, want, parity::relative_bound(want, 1e-5, 1e-6))) << "variant " << variant;
      EXPECT_TRUE(parity::bitwise_equal(got2, got));
    }
  }
}

TEST(NativeRopeParity, BitwiseBothModesPartialDims) {
  for (int64_t head_dim : {2, 8, 16, 32, 64, 128}) {
    for (RopeMode mode : {RopeMode::neox, RopeMode::normal}) {
      for (int64_t n_dims : {head_dim, head_dim / 2}) {
        if (n_dims % 2) continue;
        const int64_t outer = 2, seq = 17, heads = 3;
        const auto x = parity::random_floats(outer * seq * heads * head_dim, head_dim + n_dims);
        std::vector<int32_t> positions(seq);
        for (int64_t i = 0; i < seq; ++i) positions[i] = int32_t(i * 977 + 3);  // far positions too
        RopeParams params;
        params.mode = mode;
        params.n_dims = n_dims;
        params.freq_base = 1e6;
        std::vector<float> want(x.size()), got(x.size()), got2(x.size());
        ThreadPool one(1), two(2);
        parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, want.data(), one);
        parity::native_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, got.data(), one);
        parity::native_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, got2.data(), two);
        EXPECT_TRUE(parity::bitwise_equal(got, want)) << "head_dim " << head_dim << " n_dims " << n_dims;
        EXPECT_TRUE(parity::bitwise_equal(got2, got));
        // The rotations computed by the caller (a forward pass's table) give the same bits.
        std::vector<float> table(size_t(seq * 2 * (n_dims / 2))), got_table(x.size());
        fill_rope_rotations(params, positions.data(), seq, table.data());
        RopeParams with_table = params;
        with_table.rotations = table.data();
        parity::native_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), with_table,
                                  got_table.data(), two);
        EXPECT_TRUE(parity::bitwise_equal(got_table, want)) << "with the caller's rotations";
      }
    }
  }
}

// Llama 3's rope scaling divides each pair's angle by its frequency factor: native equals scalar
// bit for bit, and factors of 2 everywhere rotate exactly as freq_scale 0.5 does (both halve
// the angle exactly in double).
TEST(NativeRopeParity, FrequencyFactorsDivideEachPairsAngle) {
  const int64_t head_dim = 64, outer = 1, seq = 9, heads = 2;
  const auto x = parity::random_floats(outer * seq * heads * head_dim, 11);
  std::vector<int32_t> positions(seq);
  for (int64_t i = 0; i < seq; ++i) positions[i] = int32_t(i * 1531 + 1);
  std::vector<float> factors(head_dim / 2), twos(head_dim / 2, 2.0f);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + float(i % 7) * 1.5f;
  ThreadPool one(1);
  for (RopeMode mode : {RopeMode::neox, RopeMode::normal}) {
    RopeParams params{.mode = mode, .n_dims = head_dim, .freq_base = 5e5, .freq_scale = 0.25,
                      .freq_factors = factors.data()};
    std::vector<float> want(x.size()), got(x.size()), plain(x.size());
    parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, want.data(), one);
    parity::native_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, got.data(), one);
    EXPECT_TRUE(parity::bitwise_equal(got, want));
    params.freq_factors = nullptr;
    parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, plain.data(), one);
    EXPECT_FALSE(parity::bitwise_equal(plain, want)) << "the factors changed nothing";

    params.freq_scale = 1.0;
    params.freq_factors = twos.data();
    parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, want.data(), one);
    params.freq_scale = 0.5;
    params.freq_factors = nullptr;
    parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), params, got.data(), one);
    EXPECT_TRUE(parity::bitwise_equal(got, want));
  }
}

// YaRN: native equals scalar bit for bit inside the ramp; past its ends a pair takes the
// extrapolated angle (freq_scale ignored) or the interpolated one, each at YaRN's magnitude
// 1 + 0.1 ln(1 / freq_scale), exactly as plain rope with that attn_factor does.
TEST(NativeRopeParity, YarnBlendsInterpolatedAndExtrapolatedAngles) {
  const int64_t head_dim = 64, outer = 1, seq = 7, heads = 3;
  const auto x = parity::random_floats(outer * seq * heads * head_dim, 12);
  std::vector<int32_t> positions(seq);
  for (int64_t i = 0; i < seq; ++i) positions[i] = int32_t(i * 977 + 3);
  ThreadPool one(1);
  for (RopeMode mode : {RopeMode::neox, RopeMode::normal}) {
    RopeParams yarn{.mode = mode, .n_dims = head_dim, .freq_base = 1e4, .freq_scale = 1.0 / 40, .ext_factor = 1.0};
    rope_yarn_corr_dims(yarn, 4096, 32, 1);
    EXPECT_GT(yarn.corr_high, yarn.corr_low);
    EXPECT_LT(yarn.corr_high, double(head_dim / 2)) << "the ramp ends inside the pairs";
    std::vector<float> want(x.size()), got(x.size()), plain(x.size());
    parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), yarn, want.data(), one);
    parity::native_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), yarn, got.data(), one);
    EXPECT_TRUE(parity::bitwise_equal(got, want));
    const double magnitude = 1.0 + 0.1 * std::log(40.0);
    for (const bool extrapolated : {true, false}) {
      RopeParams end = yarn;
      end.corr_low = end.corr_high = extrapolated ? 1e6 : -1e6;
      RopeParams same{.mode = mode, .n_dims = head_dim, .freq_base = 1e4, .freq_scale = extrapolated ? 1.0 : 1.0 / 40,
                      .attn_factor = magnitude};
      parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), end, got.data(), one);
      parity::scalar_f32().rope(x.data(), outer, seq, heads, head_dim, positions.data(), same, plain.data(), one);
      EXPECT_TRUE(parity::bitwise_equal(got, plain)) << (extrapolated ? "extrapolated" : "interpolated");
      EXPECT_FALSE(parity::bitwise_equal(got, want)) << "the ramp changed nothing";
    }
  }
}

void check_attention(AttentionShape s, bool causal, bool with_mask) {
  SCOPED_TRACE("Hq " + std::to_string(s.q_heads) + " Hkv " + std::to_string(s.kv_heads) + " Tq " +
               std::to_string(s.q_len) + " Tk " + std::to_string(s.kv_len) + " D " + std::to_string(s.head_dim) +
               (causal ? " causal" : "") + (with_mask ? " mask" : ""));
  const auto q = parity::random_floats(s.batch * s.q_heads * s.q_len * s.head_dim, 1, -2, 2);
  const auto k = parity::random_floats(s.batch * s.kv_heads * s.kv_len * s.head_dim, 2, -2, 2);
  const auto v = parity::random_floats(s.batch * s.kv_heads * s.kv_len * s.value_dim, 3);
  auto mask = parity::random_floats(s.q_len * s.kv_len, 4, -3, 0);
  for (size_t i = 0; i < mask.size(); i += 5) mask[i] = -INFINITY;
  TensorRef<const float> mask_ref;
  if (with_mask) mask_ref = {mask.data(), {s.batch, s.q_heads, s.q_len, s.kv_len}, {0, 0, s.kv_len, 1}};
  const size_t out_size = s.batch * s.q_heads * s.q_len * s.value_dim;
  std::vector<float> scores(s.batch * s.q_heads * s.q_len * s.kv_len);
  std::vector<float> want(out_size), got(out_size), got2(out_size);
  ThreadPool one(1), two(2);
  const double scale = 1.0 / std::sqrt(double(s.head_dim));
  parity::scalar_f32().attention(q.data(), k.data(), v.data(), s, mask_ref, causal, scale, scores.data(),
                                 want.data(), one);
  parity::native_f32().attention(q.data(), k.data(), v.data(), s, mask_ref, causal, scale, scores.data(),
                                 got.data(), one);
  parity::native_f32().attention(q.data(), k.data(), v.data(), s, mask_ref, causal, scale, scores.data(),
                                 got2.data(), two);
  EXPECT_TRUE(parity::within(got, want, parity::relative_bound(want, 2e-5, 2e-6)));
  EXPECT_TRUE(parity::bitwise_equal(got2, got));
}

TEST(NativeAttentionParity, EveryKeyLength) {
  for (int64_t kv_len : sizes()) {
    check_attention({1, 4, 2, 3, kv_len, 64, 64}, false, false);
    check_attention({2, 2, 2, std::min<int64_t>(kv_len, 33), kv_len, 16, 16}, true, false);
  }
}

TEST(NativeAttentionParity, EveryHeadDim) {
  for (int64_t d : sizes())
    if (d <= 129) check_attention({1, 2, 1, 5, 40, d, d}, true, false);
}

TEST(NativeAttentionParity, GroupedCausalMaskedPrefillAndDecode) {
  check_attention({1, 16, 8, 129, 129, 128, 128}, true, false);  // Qwen3-0.6B heads, a prompt
  check_attention({1, 16, 8, 1, 1000, 128, 128}, true, false);   // one decode step, long cache
  check_attention({1, 6, 2, 17, 65, 32, 24}, true, true);        // value_dim != head_dim, -inf in mask
  check_attention({2, 4, 4, 7, 7, 8, 8}, false, true);
}

TEST(NativeAttentionParity, FullyMaskedRowMatchesScalarNaN) {
  // Every key masked for the only query: scalar's softmax is 0/0.
  AttentionShape s{1, 1, 1, 1, 4, 8, 8};
  const auto q = parity::random_floats(8, 1), k = parity::random_floats(32, 2), v = parity::random_floats(32, 3);
  const std::vector<float> mask(4, -INFINITY);
  const TensorRef<const float> mask_ref{mask.data(), {1, 1, 1, 4}, {0, 0, 4, 1}};
  std::vector<float> scores(4), want(8), got(8);
  ThreadPool one(1);
  parity::scalar_f32().attention(q.data(), k.data(), v.data(), s, mask_ref, false, 1.0, scores.data(), want.data(), one);
  parity::native_f32().attention(q.data(), k.data(), v.data(), s, mask_ref, false, 1.0, scores.data(), got.data(), one);
  EXPECT_TRUE(parity::bitwise_equal(got, want));
}

// The specification of attention over a KV cache [kv_heads, capacity, head_dim] whose rows,
// widened to f32, are k_wide / v_wide: scalar attention<float> on a contiguous copy of the
// kv_len-position prefix, q and out permuted from token-major to [heads, positions, dim].
// A sliding window (window > 0) is an additive mask of -inf on the keys it hides.
std::vector<float> cache_attention_specification(const std::vector<float>& q, const std::vector<float>& k_wide,
                                                 const std::vector<float>& v_wide, int64_t q_heads, int64_t kv_heads,
                                                 int64_t q_len, int64_t kv_len, int64_t D, int64_t capacity,
                                                 int64_t window = 0) {
  std::vector<float> kw(kv_heads * kv_len * D), vw(kw.size()), qh(q.size());
  for (int64_t g = 0; g < kv_heads; ++g)
    for (int64_t j = 0; j < kv_len * D; ++j) {
      kw[g * kv_len * D + j] = k_wide[g * capacity * D + j];
      vw[g * kv_len * D + j] = v_wide[g * capacity * D + j];
    }
  for (int64_t i = 0; i < q_len; ++i)
    for (int64_t h = 0; h < q_heads; ++h)
      for (int64_t d = 0; d < D; ++d) qh[(h * q_len + i) * D + d] = q[(i * q_heads + h) * D + d];
  const AttentionShape s{1, q_heads, kv_heads, q_len, kv_len, D, D};
  std::vector<float> scores(q_heads * q_len * kv_len), spec_heads(q.size()), spec(q.size());
  ThreadPool one(1);
  std::vector<float> mask;
  TensorRef<const float> mask_ref{};
  if (window > 0) {
    mask.assign(size_t(q_len * kv_len), 0.0f);
    for (int64_t i = 0; i < q_len; ++i)
      for (int64_t j = 0; j < kv_len; ++j)
        if ((kv_len - q_len + i) - j >= window) mask[size_t(i * kv_len + j)] = -INFINITY;
    mask_ref = {mask.data(), {1, 1, q_len, kv_len}, {0, 0, kv_len, 1}};
  }
  parity::scalar_f32().attention(qh.data(), kw.data(), vw.data(), s, mask_ref, true, 0.125, scores.data(),
                                 spec_heads.data(), one);
  for (int64_t i = 0; i < q_len; ++i)
    for (int64_t h = 0; h < q_heads; ++h)
      for (int64_t d = 0; d < D; ++d) spec[(i * q_heads + h) * D + d] = spec_heads[(h * q_len + i) * D + d];
  return spec;
}

std::string cache_trace(int64_t q_heads, int64_t kv_heads, int64_t q_len, int64_t kv_len, int64_t head_dim,
                        int64_t window = 0) {
  return "Hq " + std::to_string(q_heads) + " Hkv " + std::to_string(kv_heads) + " Tq " + std::to_string(q_len) +
         " Tk " + std::to_string(kv_len) + " D " + std::to_string(head_dim) + " window " + std::to_string(window);
}

// A cache with kv_len positions filled, q token-major, in f16 and f32 rows.
void check_cache_attention(int64_t q_heads, int64_t kv_heads, int64_t q_len, int64_t kv_len, int64_t head_dim,
                           int64_t window = 0) {
  SCOPED_TRACE(cache_trace(q_heads, kv_heads, q_len, kv_len, head_dim, window));
  const int64_t capacity = kv_len + 3, D = head_dim;
  const auto q = parity::random_floats(q_len * q_heads * D, 5, -2, 2);
  const auto k32 = parity::random_floats(kv_heads * capacity * D, 6, -2, 2);
  const auto v32 = parity::random_floats(kv_heads * capacity * D, 7);
  std::vector<f16_t> k16(k32.size()), v16(v32.size());
  for (size_t i = 0; i < k32.size(); ++i) k16[i] = to_f16(k32[i]), v16[i] = to_f16(v32[i]);
  // f32 rows holding the widened values in the same layout: the same bits as f16's below.
  std::vector<float> k_wide(k16.size()), v_wide(v16.size());
  for (size_t i = 0; i < k16.size(); ++i) k_wide[i] = to_f32(k16[i]), v_wide[i] = to_f32(v16[i]);
  const std::vector<float> spec =
      cache_attention_specification(q, k_wide, v_wide, q_heads, kv_heads, q_len, kv_len, D, capacity, window);

  std::vector<float> scores(q_heads * q_len * kv_len);
  ThreadPool one(1), two(2);
  const Kernels& scalar = scalar_kernels();
  const Kernels& native = kernels_for(Backend::native);
  const CacheAttentionArgs<f16_t> a16{q.data(), k16.data(), v16.data(), nullptr, q_heads, kv_heads, q_len,
                                      kv_len,   D,          capacity * D, 0.125,   window};
  std::vector<float> scalar16(q.size()), native16(q.size()), native16_2(q.size());
  auto with_out = [](CacheAttentionArgs<f16_t> a, float* out) {
    a.out = out;
    return a;
  };
  scalar.cache_attention_f16(with_out(a16, scalar16.data()), scores.data(), one);
  EXPECT_TRUE(parity::bitwise_equal(scalar16, spec)) << "scalar f16 cache vs attention on the widened copy";
  native.cache_attention_f16(with_out(a16, native16.data()), scores.data(), one);
  native.cache_attention_f16(with_out(a16, native16_2.data()), scores.data(), two);
  EXPECT_TRUE(parity::within(native16, spec, parity::relative_bound(spec, 2e-5, 2e-6)));
  EXPECT_TRUE(parity::bitwise_equal(native16_2, native16));

  std::vector<float> scalar32(q.size()), native32(q.size());
  const CacheAttentionArgs<float> a32{q.data(), k_wide.data(), v_wide.data(), scalar32.data(), q_heads, kv_heads,
                                      q_len,    kv_len,        D,             capacity * D,    0.125,    window};
  scalar.cache_attention_f32(a32, scores.data(), one);
  EXPECT_TRUE(parity::bitwise_equal(scalar32, spec));
  CacheAttentionArgs<float> n32 = a32;
  n32.out = native32.data();
  native.cache_attention_f32(n32, scores.data(), two);
  EXPECT_TRUE(parity::bitwise_equal(native32, native16)) << "native: f32 rows and equal f16 rows differ";
}

// The same over Q8_0 rows (head_dim a multiple of 32), ggml's encoder's blocks: scalar is
// bitwise the specification on the decoded copy, native within attention's tolerance of it and
// bitwise equal to its own f32 entry on the decoded rows.
void check_cache_attention_q8_0(int64_t q_heads, int64_t kv_heads, int64_t q_len, int64_t kv_len, int64_t head_dim) {
  SCOPED_TRACE(cache_trace(q_heads, kv_heads, q_len, kv_len, head_dim) + " q8_0");
  const int64_t capacity = kv_len + 3, D = head_dim;
  const auto q = parity::random_floats(q_len * q_heads * D, 5, -2, 2);
  const auto k32 = parity::random_floats(kv_heads * capacity * D, 6, -2, 2);
  const auto v32 = parity::random_floats(kv_heads * capacity * D, 7);
  std::vector<quant::BlockQ8_0> kq(k32.size() / quant::kBlock32), vq(kq.size());
  quant::quantize_row_q8_0(k32.data(), kq.data(), int64_t(k32.size()));
  quant::quantize_row_q8_0(v32.data(), vq.data(), int64_t(v32.size()));
  std::vector<float> k_wide(k32.size()), v_wide(v32.size());
  quant::dequantize_row_q8_0(kq.data(), k_wide.data(), int64_t(k_wide.size()));
  quant::dequantize_row_q8_0(vq.data(), v_wide.data(), int64_t(v_wide.size()));
  const std::vector<float> spec =
      cache_attention_specification(q, k_wide, v_wide, q_heads, kv_heads, q_len, kv_len, D, capacity);

  std::vector<float> scores(q_heads * q_len * kv_len), scalar8(q.size()), native8(q.size()), native8_2(q.size()),
      native32(q.size());
  ThreadPool one(1), two(2);
  CacheAttentionArgs<quant::BlockQ8_0> a8{q.data(), kq.data(), vq.data(), scalar8.data(), q_heads, kv_heads,
                                          q_len,    kv_len,    D,         capacity * D,     0.125};
  scalar_kernels().cache_attention_q8_0(a8, scores.data(), one);
  EXPECT_TRUE(parity::bitwise_equal(scalar8, spec)) << "scalar q8_0 cache vs attention on the decoded copy";
  const Kernels& native = kernels_for(Backend::native);
  a8.out = native8.data();
  native.cache_attention_q8_0(a8, scores.data(), one);
  a8.out = native8_2.data();
  native.cache_attention_q8_0(a8, scores.data(), two);
  EXPECT_TRUE(parity::within(native8, spec, parity::relative_bound(spec, 2e-5, 2e-6)));
  EXPECT_TRUE(parity::bitwise_equal(native8_2, native8));
  native.cache_attention_f32({q.data(), k_wide.data(), v_wide.data(), native32.data(), q_heads, kv_heads, q_len,
                              kv_len, D, capacity * D, 0.125},
                             scores.data(), one);
  EXPECT_TRUE(parity::bitwise_equal(native8, native32)) << "native: q8_0 rows and their decoded f32 rows differ";
}

TEST(NativeCacheAttentionParity, F16AndF32RowsInPlace) {
  check_cache_attention(16, 8, 1, 1000, 128);  // Qwen3-0.6B decode step over a long cache
  check_cache_attention(16, 8, 37, 100, 128);  // a prompt batch after a prefix
  check_cache_attention(4, 4, 5, 5, 40);       // head_dim with a partial vector
  check_cache_attention(6, 2, 3, 70, 24);
  for (int64_t kv_len : {1, 2, 15, 16, 17, 63, 64, 65, 129}) check_cache_attention(2, 1, 1, kv_len, 64);
}

// Sliding windows (Gemma's local layers): windows shorter and longer than the prefix, ending
// inside a key block and hiding whole blocks, for decode steps and prompt batches.
TEST(NativeCacheAttentionParity, SlidingWindows) {
  check_cache_attention(16, 8, 37, 100, 128, 20);
  check_cache_attention(8, 2, 5, 200, 64, 30);
  check_cache_attention(4, 4, 5, 5, 40, 2);
  for (int64_t window : {1, 16, 17, 64, 65, 500}) check_cache_attention(2, 1, 1, 129, 64, window);
  check_cache_attention(2, 1, 64, 64, 64, 8);
}

// A prompt's rows have the bits of decode steps: each row of a q_len-row call over an f16 (and
// an f32) cache equals, bit for bit, a one-row call at that position over its prefix. Tiles of
// kLanes rows and more (16 on AVX-512, 8 on AVX2) take their scores with the rows in vector
// lanes, smaller ones lane-wise dot products; both must sum in the same order (a model's logits
// do not depend on how its prompt is split into passes). A tile is 16 positions x the group's
// query heads (at most 64 rows), the last one partial.
void check_prompt_rows_equal_decode_steps(int64_t q_heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                                          int64_t head_dim, int64_t window = 0) {
  SCOPED_TRACE(cache_trace(q_heads, kv_heads, q_len, kv_len, head_dim, window));
  const int64_t D = head_dim, row = q_heads * D;
  const auto q = parity::random_floats(q_len * row, 15, -2, 2);
  const auto k32 = parity::random_floats(kv_heads * kv_len * D, 16, -2, 2);
  const auto v32 = parity::random_floats(kv_heads * kv_len * D, 17);
  std::vector<f16_t> k16(k32.size()), v16(v32.size());
  for (size_t i = 0; i < k32.size(); ++i) k16[i] = to_f16(k32[i]), v16[i] = to_f16(v32[i]);
  const Kernels& native = kernels_for(Backend::native);
  ThreadPool two(2);
  std::vector<float> prompt16(q.size()), prompt32(q.size()), step16(row), step32(row);
  native.cache_attention_f16({q.data(), k16.data(), v16.data(), prompt16.data(), q_heads, kv_heads, q_len, kv_len, D,
                              kv_len * D, 0.125, window},
                             nullptr, two);
  native.cache_attention_f32({q.data(), k32.data(), v32.data(), prompt32.data(), q_heads, kv_heads, q_len, kv_len, D,
                              kv_len * D, 0.125, window},
                             nullptr, two);
  for (int64_t i = 0; i < q_len; ++i) {
    const int64_t prefix = kv_len - q_len + i + 1;
    native.cache_attention_f16({q.data() + i * row, k16.data(), v16.data(), step16.data(), q_heads, kv_heads, 1, prefix,
                                D, kv_len * D, 0.125, window},
                               nullptr, two);
    native.cache_attention_f32({q.data() + i * row, k32.data(), v32.data(), step32.data(), q_heads, kv_heads, 1, prefix,
                                D, kv_len * D, 0.125, window},
                               nullptr, two);
    const std::vector<float> prompt_row16(prompt16.begin() + i * row, prompt16.begin() + (i + 1) * row),
        prompt_row32(prompt32.begin() + i * row, prompt32.begin() + (i + 1) * row);
    ASSERT_TRUE(parity::bitwise_equal(prompt_row16, step16)) << "f16 cache, position " << i;
    ASSERT_TRUE(parity::bitwise_equal(prompt_row32, step32)) << "f32 cache, position " << i;
  }
}

TEST(NativeCacheAttentionParity, PromptRowsHaveTheBitsOfDecodeSteps) {
  check_prompt_rows_equal_decode_steps(16, 8, 40, 100, 128);   // Qwen3-0.6B: tiles of 32, 32, 16 rows
  check_prompt_rows_equal_decode_steps(32, 8, 21, 75, 128);    // group 4: tiles of 64 and 20 rows
  check_prompt_rows_equal_decode_steps(4, 1, 11, 45, 64);      // group 4: 44 rows; keys past a block
  check_prompt_rows_equal_decode_steps(4, 4, 19, 50, 32);      // group 1: 16 and 3 rows
  check_prompt_rows_equal_decode_steps(16, 8, 37, 100, 128, 20);
}

TEST(NativeCacheAttentionParity, Q8_0RowsInPlace) {
  check_cache_attention_q8_0(16, 8, 1, 1000, 128);
  check_cache_attention_q8_0(16, 8, 37, 100, 128);
  check_cache_attention_q8_0(6, 2, 3, 70, 32);
  for (int64_t kv_len : {1, 17, 64, 65}) check_cache_attention_q8_0(2, 1, 1, kv_len, 64);
}

}  // namespace
}  // namespace tempra
