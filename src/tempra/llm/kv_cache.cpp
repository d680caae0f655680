// tempra/llm/kv_cache.cpp: see kv_cache.h.
#include "tempra/llm/kv_cache.h"

#include "tempra/core/error.h"
#include "tempra/ops/ops.h"

namespace tempra::llm {
namespace {
DType storage_dtype(KvCacheType type) { return type == KvCacheType::f16 ? DType::f16 : DType::f32; }
}  // namespace

KvCache::KvCache(ExecContext& ctx, const KvCacheShape& shape, KvCacheType type) : shape_(shape), type_(type) {
  check(shape.n_layer > 0 && shape.n_head_kv > 0 && shape.head_dim > 0 && shape.capacity > 0, "KvCache",
        "every extent must be positive: n_layer ", shape.n_layer, ", n_head_kv ", shape.n_head_kv, ", head_dim ",
        shape.head_dim, ", capacity ", shape.capacity);
  const Dims dims{shape.n_head_kv, shape.capacity, shape.head_dim};
  for (int i = 0; i < shape.n_layer; ++i) {
    keys_.push_back(Array::zeros(ctx, dims, storage_dtype(type)));
    values_.push_back(Array::zeros(ctx, dims, storage_dtype(type)));
  }
}

void KvCache::write(ExecContext& ctx, int layer, int64_t start, const Array& k, const Array& v) {
  check(layer >= 0 && layer < shape_.n_layer, "KvCache::write", "layer ", layer, " out of range [0, ",
        shape_.n_layer, ")");
  check(k.rank() == 3 && k.shape() == v.shape() && k.dim(0) == shape_.n_head_kv && k.dim(2) == shape_.head_dim,
        "KvCache::write", "k and v must be [", shape_.n_head_kv, ", n, ", shape_.head_dim, "], got ", k.shape(),
        " and ", v.shape());
  const int64_t n = k.dim(1);
  check(start >= 0 && start <= size_ && start + n <= shape_.capacity, "KvCache::write", "positions [", start, ", ",
        start + n, ") do not continue the cache of ", size_, " positions within its capacity ", shape_.capacity);
  const DType dtype = storage_dtype(type_);
  copy_into(ctx, k.dtype() == dtype ? k : cast(ctx, k, dtype), keys_[layer].narrow(1, start, n));
  copy_into(ctx, v.dtype() == dtype ? v : cast(ctx, v, dtype), values_[layer].narrow(1, start, n));
}

Array KvCache::read(ExecContext& ctx, const std::vector<Array>& buffers, int layer, int64_t length, const char* what) const {
  check(layer >= 0 && layer < shape_.n_layer && length >= 0 && length <= shape_.capacity, what, "layer ", layer,
        ", length ", length, " out of range for a cache of ", shape_.n_layer, " layers and capacity ",
        shape_.capacity);
  Array view = buffers[static_cast<size_t>(layer)].narrow(1, 0, length).unsqueeze(0);
  return view.dtype() == DType::f32 ? view : cast(ctx, view, DType::f32);
}

Array KvCache::keys(ExecContext& ctx, int layer, int64_t length) const {
  return read(ctx, keys_, layer, length, "KvCache::keys");
}
Array KvCache::values(ExecContext& ctx, int layer, int64_t length) const {
  return read(ctx, values_, layer, length, "KvCache::values");
}

void KvCache::advance(int64_t n) {
  check(n >= 0 && size_ + n <= shape_.capacity, "KvCache::advance", "cannot grow ", size_, " positions by ", n,
        " within capacity ", shape_.capacity);
  size_ += n;
}

void KvCache::truncate(int64_t n) {
  check(n >= 0 && n <= size_, "KvCache::truncate", "cannot keep ", n, " of ", size_, " positions");
  size_ = n;
}

}  // namespace tempra::llm
