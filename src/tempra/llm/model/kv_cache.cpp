// tempra/llm/model/kv_cache.cpp: see kv_cache.h.
#include "tempra/llm/model/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tempra/backend/kernels.h"
#include "tempra/core/error.h"
#include "tempra/core/half.h"
#include "tempra/ops/ops.h"
#include "tempra/quant/reference.h"

namespace tempra::llm {
namespace {
DType storage_dtype(KvCacheType type) {
  return type == KvCacheType::f16 ? DType::f16 : DType::f32;
}
}  // namespace

KvCache::KvCache(ExecContext& ctx, const KvCacheShape& shape, KvCacheType type) : shape_(shape), type_(type) {
  check((shape.n_layer > 0 || shape.n_recurrent > 0) && shape.n_layer >= 0 && shape.n_head_kv > 0 &&
            shape.head_dim > 0 && shape.capacity > 0 && shape.n_recurrent >= 0 &&
            (shape.n_recurrent == 0) == (shape.recurrent_floats == 0) && shape.recurrent_floats >= 0,
        "KvCache", "every extent must be positive (n_layer may be 0 beside recurrent layers): n_layer ", shape.n_layer,
        ", n_head_kv ", shape.n_head_kv, ", head_dim ", shape.head_dim, ", capacity ", shape.capacity, ", n_recurrent ",
        shape.n_recurrent, " of ", shape.recurrent_floats, " floats");
  check(shape.layer_window.empty() || int64_t(shape.layer_window.size()) == shape.n_layer, "KvCache",
        "layer_window has ", shape.layer_window.size(), " entries for ", shape.n_layer, " attention layers");
  check(shape.window_rows >= 0 && std::all_of(shape.layer_window.begin(), shape.layer_window.end(),
                                              [](int64_t w) { return w >= 0; }),
        "KvCache", "windows and window_rows must not be negative");
  recurrent_.assign(size_t(shape.n_recurrent) * size_t(shape.recurrent_floats), 0.0f);
  for (int i = 0; i < shape.n_layer; ++i) {
    const int64_t window = shape.window(i);
    // The rows attend() hands the kernel: up to window - 1 before a write's first row, its
    // window_rows, and up to kCacheKeyAlignment - 1 more for the view's aligned start.
    const int64_t ring =
        window > 0 && shape.window_rows > 0 ? window + shape.window_rows + kCacheKeyAlignment - 1 : 0;
    const bool smaller = ring > 0 && 2 * ring < shape.capacity;
    ring_.push_back(smaller ? ring : 0);
    rows_.push_back(smaller ? 2 * ring : shape.capacity);
  }
  if (type == KvCacheType::q8_0) {
    check(shape.head_dim % quant::kBlock32 == 0, "KvCache", "a q8_0 cache needs head_dim a multiple of ",
          quant::kBlock32, ", got ", shape.head_dim);
    for (int i = 0; i < shape.n_layer; ++i) {
      const auto blocks = static_cast<size_t>(shape.n_head_kv * rows_[size_t(i)] * (shape.head_dim / quant::kBlock32));
      key_blocks_.emplace_back(blocks);
      if (!shape.values_in_keys) value_blocks_.emplace_back(blocks);
    }
    return;
  }
  for (int i = 0; i < shape.n_layer; ++i) {
    const Dims dims{shape.n_head_kv, rows_[size_t(i)], shape.head_dim};
    keys_.push_back(Array::zeros(ctx, dims, storage_dtype(type)));
    if (!shape.values_in_keys) values_.push_back(Array::zeros(ctx, dims, storage_dtype(type)));
  }
}

KvCache::Visible KvCache::visible(size_t at, int64_t kv_len, int64_t q_len) const {
  const int64_t window = shape_.window(int(at));
  int64_t first = window > 0 ? first_visible_key(kv_len - q_len + 1, window) : 0;
  first -= first % kCacheKeyAlignment;  // the kernel's bits over the whole cache
  return {first, ring_[at] > 0 ? first % ring_[at] : first};
}

KvCache::Visible KvCache::attended(size_t at, int64_t kv_len, int64_t q_len, int64_t window, const char* op) const {
  check(shape_.layer_window.empty() || window == shape_.window(int(at)), op, "layer ", at, " attends over a window of ",
        shape_.window(int(at)), ", not ", window);
  const Visible first = visible(at, kv_len, q_len);
  check(ring_[at] == 0 || kv_len - first.first_position <= ring_[at], op, q_len, " queries see ",
        kv_len - first.first_position, " positions, more than layer ", at, "'s ring holds (", ring_[at], ")");
  return first;
}

// x [n_head_kv, n, head_dim] -> the blocks of positions [start, start + n) of every head.
void KvCache::write_q8_0(ExecContext& ctx, std::vector<quant::BlockQ8_0>& blocks, int64_t start, const Array& x) {
  const Array rows = contiguous(ctx, x.dtype() == DType::f32 ? x : cast(ctx, x, DType::f32));
  const int64_t n = x.dim(1), d = shape_.head_dim, per_row = d / quant::kBlock32;
  const float* in = rows.data<float>();
  for (int64_t h = 0; h < shape_.n_head_kv; ++h)
    for (int64_t t = 0; t < n; ++t)
      quant::quantize_row_q8_0(in + (h * n + t) * d, &blocks[size_t((h * shape_.capacity + start + t) * per_row)], d);
}

Array KvCache::read_q8_0(ExecContext& ctx, const std::vector<quant::BlockQ8_0>& blocks, int64_t length) const {
  const int64_t d = shape_.head_dim, per_row = d / quant::kBlock32;
  Array out = Array::empty(ctx, {1, shape_.n_head_kv, length, d}, DType::f32);
  float* dst = out.data<float>();
  for (int64_t h = 0; h < shape_.n_head_kv; ++h)
    for (int64_t t = 0; t < length; ++t)
      quant::dequantize_row_q8_0(&blocks[size_t((h * shape_.capacity + t) * per_row)], dst + (h * length + t) * d, d);
  return out;
}

void KvCache::write(ExecContext& ctx, int layer, int64_t start, const Array& k, const Array& v) {
  check(layer >= 0 && layer < shape_.n_layer, "KvCache::write", "layer ", layer, " out of range [0, ", shape_.n_layer,
        ")");
  check(ring_[size_t(layer)] == 0, "KvCache::write", "layer ", layer, " is a sliding window's ring: write_rows");
  check(k.rank() == 3 && k.shape() == v.shape() && k.dim(0) == shape_.n_head_kv && k.dim(2) == shape_.head_dim,
        "KvCache::write", "k and v must be [", shape_.n_head_kv, ", n, ", shape_.head_dim, "], got ", k.shape(),
        " and ", v.shape());
  const int64_t n = k.dim(1);
  check(start >= 0 && start <= size_ && start + n <= shape_.capacity, "KvCache::write", "positions [", start, ", ",
        start + n, ") do not continue the cache of ", size_, " positions within its capacity ", shape_.capacity);
  if (type_ == KvCacheType::q8_0) {
    write_q8_0(ctx, key_blocks_[size_t(layer)], start, k);
    if (!shape_.values_in_keys) write_q8_0(ctx, value_blocks_[size_t(layer)], start, v);
    return;
  }
  const DType dtype = storage_dtype(type_);
  copy_into(ctx, k.dtype() == dtype ? k : cast(ctx, k, dtype), keys_[layer].narrow(1, start, n));
  if (!shape_.values_in_keys)
    copy_into(ctx, v.dtype() == dtype ? v : cast(ctx, v, dtype), values_[layer].narrow(1, start, n));
}

Array KvCache::read(ExecContext& ctx, bool keys, int layer, int64_t length, const char* what) const {
  check(layer >= 0 && layer < shape_.n_layer && length >= 0 && length <= shape_.capacity, what, "layer ", layer,
        ", length ", length, " out of range for a cache of ", shape_.n_layer, " layers and capacity ", shape_.capacity);
  const auto at = static_cast<size_t>(layer);
  check(ring_[at] == 0, what, "layer ", layer, " is a sliding window's ring, which keeps no prefix to read");
  if (type_ == KvCacheType::q8_0) return read_q8_0(ctx, keys ? key_blocks_[at] : value_blocks(at), length);
  Array view = (keys ? keys_[at] : value_array(at)).narrow(1, 0, length).unsqueeze(0);
  return view.dtype() == DType::f32 ? view : cast(ctx, view, DType::f32);
}

Array KvCache::keys(ExecContext& ctx, int layer, int64_t length) const {
  return read(ctx, true, layer, length, "KvCache::keys");
}
Array KvCache::values(ExecContext& ctx, int layer, int64_t length) const {
  return read(ctx, false, layer, length, "KvCache::values");
}

void KvCache::write_rows(ExecContext& ctx, int layer, int64_t start, int64_t n, const float* k, const float* v) {
  check(layer >= 0 && layer < shape_.n_layer, "KvCache::write_rows", "layer ", layer, " out of range [0, ",
        shape_.n_layer, ")");
  check(n >= 0 && start >= 0 && start <= size_ && start + n <= shape_.capacity, "KvCache::write_rows", "positions [",
        start, ", ", start + n, ") do not continue the cache of ", size_, " positions within its capacity ",
        shape_.capacity);
  const auto at = static_cast<size_t>(layer);
  const int64_t H = shape_.n_head_kv, D = shape_.head_dim, rows = rows_[at], ring = ring_[at];
  check(ring == 0 || n <= shape_.window_rows, "KvCache::write_rows", n, " rows in one write exceed the ",
        shape_.window_rows, " a sliding window's ring takes (KvCacheShape::window_rows)");
  // One position's rows of one head into row `slot` of [n_head_kv, rows, head_dim].
  const auto store = [&](const float* k_row, const float* v_row, int64_t slot) {
    switch (type_) {
      case KvCacheType::f32:
        std::memcpy(keys_[at].data<float>() + slot * D, k_row, size_t(D) * sizeof(float));
        if (v_row) std::memcpy(values_[at].data<float>() + slot * D, v_row, size_t(D) * sizeof(float));
        break;
      case KvCacheType::f16: {
        // The conversion table rounds to nearest even on every backend: cast()'s bits.
        const auto& narrow = kernels_for(ctx.backend()).f32_to_f16;
        narrow(k_row, keys_[at].data<f16_t>() + slot * D, D, ctx.threads());
        if (v_row) narrow(v_row, values_[at].data<f16_t>() + slot * D, D, ctx.threads());
        break;
      }
      case KvCacheType::q8_0: {
        const int64_t per_row = D / quant::kBlock32;
        quant::quantize_row_q8_0(k_row, &key_blocks_[at][size_t(slot * per_row)], D);
        if (v_row) quant::quantize_row_q8_0(v_row, &value_blocks_[at][size_t(slot * per_row)], D);
        break;
      }
    }
  };
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float* k_row = k + (t * H + h) * D;
      const float* v_row = shape_.values_in_keys ? nullptr : v + (t * H + h) * D;
      const int64_t position = start + t;
      if (ring == 0) {
        store(k_row, v_row, h * rows + position);
      } else {  // the ring's row, and its copy R rows on
        store(k_row, v_row, h * rows + position % ring);
        store(k_row, v_row, h * rows + position % ring + ring);
      }
    }
}

void KvCache::attend(ExecContext& ctx, int layer, int64_t kv_len, const float* q, int64_t q_len, int64_t q_heads,
                     double scale, float* scores, float* out, int64_t window) const {
  check(layer >= 0 && layer < shape_.n_layer && kv_len >= q_len && q_len >= 1 && kv_len <= shape_.capacity,
        "KvCache::attend", "layer ", layer, ", ", q_len, " queries over ", kv_len, " positions do not fit a cache of ",
        shape_.n_layer, " layers and capacity ", shape_.capacity);
  check(q_heads >= shape_.n_head_kv && q_heads % shape_.n_head_kv == 0, "KvCache::attend", "query heads ", q_heads,
        " are not a multiple of the cache's ", shape_.n_head_kv, " key/value heads");
  const Kernels& kernels = kernels_for(ctx.backend());
  const auto at = static_cast<size_t>(layer);
  // The keys from the first one any query sees, in consecutive rows (a ring's too).
  const Visible first = attended(at, kv_len, q_len, window, "KvCache::attend");
  const int64_t H = shape_.n_head_kv, D = shape_.head_dim, seen = kv_len - first.first_position;
  const int64_t stride = rows_[at] * D, offset = first.first_row * D;
  switch (type_) {
    case KvCacheType::f32:
      kernels.cache_attention_f32({q, keys_[at].data<float>() + offset, value_array(at).data<float>() + offset, out,
                                   q_heads, H, q_len, seen, D, stride, scale, window},
                                  scores, ctx.threads());
      return;
    case KvCacheType::f16:
      kernels.cache_attention_f16({q, keys_[at].data<f16_t>() + offset, value_array(at).data<f16_t>() + offset, out,
                                   q_heads, H, q_len, seen, D, stride, scale, window},
                                  scores, ctx.threads());
      return;
    case KvCacheType::q8_0: {
      const int64_t blocks = offset / quant::kBlock32;  // head_dim is whole blocks
      kernels.cache_attention_q8_0({q, key_blocks_[at].data() + blocks, value_blocks(at).data() + blocks, out, q_heads,
                                    H, q_len, seen, D, stride, scale, window},
                                   scores, ctx.threads());
      return;
    }
  }
}

void KvCache::attend_ggml(ExecContext& ctx, int layer, int64_t kv_len, const float* q, int64_t q_len, int64_t q_heads,
                          double scale, float* out, int64_t window) const {
  check(type_ == KvCacheType::f16, "KvCache::attend_ggml", "needs an f16 cache");
  check(layer >= 0 && layer < shape_.n_layer && kv_len >= q_len && q_len >= 1 && kv_len <= shape_.capacity,
        "KvCache::attend_ggml", "layer ", layer, ", ", q_len, " queries over ", kv_len,
        " positions do not fit a cache of ", shape_.n_layer, " layers and capacity ", shape_.capacity);
  check(q_heads >= shape_.n_head_kv && q_heads % shape_.n_head_kv == 0, "KvCache::attend_ggml", "query heads ", q_heads,
        " are not a multiple of the cache's ", shape_.n_head_kv, " key/value heads");
  const auto at = static_cast<size_t>(layer);
  const int64_t H = shape_.n_head_kv, D = shape_.head_dim, group = q_heads / H, rows = rows_[at];
  // As attend: the keys from the first one any query sees, at consecutive rows.
  const Visible first = attended(at, kv_len, q_len, window, "KvCache::attend_ggml");
  const f16_t* keys = keys_[at].data<f16_t>() + first.first_row * D;
  const f16_t* values = value_array(at).data<f16_t>() + first.first_row * D;
  kv_len -= first.first_position;
  const auto to_f32 = [](f16_t h) { return f16_bits_to_f32(h.bits); };
  const auto to_f16 = [](float x) { return f16_t{f32_to_f16_bits(x)}; };
  const float kq_scale = static_cast<float>(scale);
  ctx.threads().parallel_for(q_len * q_heads, 1, [&](int64_t first, int64_t last) {
    std::vector<f16_t> q16(static_cast<size_t>(D)), acc(static_cast<size_t>(D));
    for (int64_t row = first; row < last; ++row) {
      const int64_t i = row / q_heads, h = row % q_heads, kv_head = h / group;
      const int64_t visible = kv_len - q_len + i + 1;  // causal: positions 0 ... kv_len - q_len + i
      const int64_t first_key = first_visible_key(visible, window);
      const float* qi = q + row * D;
      for (int64_t d = 0; d < D; ++d) q16[size_t(d)] = to_f16(qi[d]);
      std::fill(acc.begin(), acc.end(), f16_t{0});
      float M = -INFINITY, S = 0.0f;
      for (int64_t pos = first_key; pos < visible; ++pos) {
        const f16_t* k = keys + (kv_head * rows + pos) * D;
        const f16_t* v = values + (kv_head * rows + pos) * D;
        float s = 0.0f;
        for (int64_t d = 0; d < D; ++d) s += to_f32(k[d]) * to_f32(q16[size_t(d)]);
        s = s * kq_scale;
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
          const float Mold = M;
          M = s;
          ms = std::exp(Mold - M);
          for (auto& a : acc) a = to_f16(to_f32(a) * ms);
        } else {
          vs = std::exp(s - M);
        }
        for (int64_t d = 0; d < D; ++d) acc[size_t(d)] = to_f16(std::fma(to_f32(v[d]), vs, to_f32(acc[size_t(d)])));
        S = S * ms + vs;
      }
      const float S_inv = S == 0.0f ? 0.0f : 1.0f / S;
      float* o = out + row * D;
      for (int64_t d = 0; d < D; ++d) o[d] = to_f32(acc[size_t(d)]) * S_inv;
    }
  });
}

void KvCache::advance(int64_t n) {
  check(n >= 0 && size_ + n <= shape_.capacity, "KvCache::advance", "cannot grow ", size_, " positions by ", n,
        " within capacity ", shape_.capacity);
  size_ += n;
}

float* KvCache::recurrent_state(int layer) {
  check(layer >= 0 && layer < shape_.n_recurrent, "KvCache", "recurrent layer ", layer, " out of ", shape_.n_recurrent);
  return recurrent_.data() + size_t(layer) * size_t(shape_.recurrent_floats);
}

const float* KvCache::recurrent_state(int layer) const {
  return const_cast<KvCache*>(this)->recurrent_state(layer);
}

bool KvCache::can_truncate(int64_t n) const {
  if (n < 0 || n > size_) return false;
  if (n == 0 || n == size_) return true;
  if (shape_.n_recurrent > 0) return false;
  // A ring holds positions [size - R, size); the next row, at n, is handed the rows from n's
  // visible(), which must still be there.
  for (size_t at = 0; at < ring_.size(); ++at)
    if (ring_[at] > 0 && visible(at, n + 1, 1).first_position < size_ - ring_[at]) return false;
  return true;
}

void KvCache::truncate(int64_t n) {
  check(can_truncate(n), "KvCache::truncate", "cannot keep ", n, " of ", size_, " positions",
        n < 0 || n > size_       ? ""
        : shape_.n_recurrent > 0 ? ": the recurrent layers' state summarizes all of them (keep 0 or all)"
                                 : ": a sliding window's ring no longer holds the positions the next rows would see");
  if (n == 0) std::fill(recurrent_.begin(), recurrent_.end(), 0.0f);
  size_ = n;
}

}  // namespace tempra::llm
